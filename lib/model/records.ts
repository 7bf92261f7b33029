// The records the domain speaks in: the main session's events, runs, where a reply went, and the
// first answer a retry is given. The journal keeps them (store/journal/records.ts checks each line
// read back); the edge, the runtime, delivery and the CLI read and write them as plain values.

import type { NoticeSpec, RunSpec, WakeMode } from './actions.ts';
import type { CoalesceWindow } from './coalesce.ts';

/**
 * One entry of the main session: a system event (a wake, a run's summary, a delivery failure),
 * a heartbeat that was requested or scheduled, or the main agent's reply to a heartbeat.
 */
export interface SessionEvent {
  seq: number;
  time: string;
  kind: 'system' | 'heartbeat' | 'reply';
  text: string;
  /** Where it came from: `wake`, `hook:<name>`, `run:<id>`, `schedule`, `heartbeat`, ... */
  source: string;
  /** For system events: whether the sender asked for a heartbeat at once. */
  mode?: WakeMode;
  /** For replies: whether it was only an acknowledgment (recorded, never delivered). */
  ack?: boolean;
  /** The request that added it (its `X-Request-Id`), as runs and outbox entries carry it. */
  requestId?: string;
  /** A wake for another agent than the default one: that agent's heartbeat turn reads it. */
  agentId?: string;
  /** A wake for another session than the main one: a heartbeat turn in that session reads it. */
  sessionKey?: string;
}

/** Which heartbeat turn reads an event: `''` for the default agent's main session, else its agent and session. */
export function targetOf(event: Pick<SessionEvent, 'agentId' | 'sessionKey'>): string {
  return event.agentId === undefined && event.sessionKey === undefined
    ? ''
    : `${event.agentId ?? ''}\n${event.sessionKey ?? ''}`;
}

/** A heartbeat turn outside the main session read that session's events up to `through`. */
export interface ConsumedSession {
  agentId?: string;
  sessionKey?: string;
  through: number;
}

/** Where a reply went, or why it did not. */
export type DeliveryOutcome =
  | { status: 'delivered'; channel: string; to: string; messageIds: string[] }
  | { status: 'skipped'; reason: string }
  | { status: 'failed'; channel: string; to?: string; reason: string };

/** The channel and recipient of the most recent successful delivery to a configured recipient (runtime/reply.ts decides which). */
export interface Route {
  channel: string;
  to: string;
}

/** The first answer to a request with an idempotency key, replayed unchanged to a retry. */
export interface StoredAnswer {
  status: number;
  body: Record<string, unknown>;
  /** The runs the first request waited for (`waitForCompletion`): a retry waits for them too. */
  waitFor?: readonly string[];
  /** The first request's id, which a retry answered from this record duplicated. */
  requestId?: string;
}

/** What makes a request idempotent: its hook path and key, and the answer it got. */
export interface IdempotencyWrite extends StoredAnswer {
  scope: string;
  key: string;
  /** How long the answer is kept, when not the store's `idempotencyTtlMs` (never written to the journal). */
  ttlMs?: number;
  /** How long the key stays taken, when longer than its answer is kept: a retry then is a duplicate without the first answer (never written to the journal). */
  keepMs?: number;
}

/** `dropped`: it waited behind a paused hook and `hooks-ingress drop` discarded it; it never ran. */
export type RunStatus = 'pending' | 'running' | 'ok' | 'error' | 'timeout' | 'dropped';

/** A run as the store keeps it; the runtime picks up the pending ones, also after a restart. */
export interface RunRecord extends RunSpec {
  status: RunStatus;
  acceptedAt: string;
  /** Executions begun (a run resumed after a crash has more than one). */
  attempts: number;
  /** Set on an execution that resumes a run the process died in. */
  retry?: boolean;
  startedAt?: string;
  finishedAt?: string;
  /** Model calls made by the last execution, retries included. */
  calls?: number;
  model?: string;
  reply?: string;
  error?: string;
  delivery?: DeliveryOutcome;
  /** The run that retried this failed one (`runs retry`): a run is retried once. */
  retriedBy?: string;
  /** Its reply sent again (`runs redeliver`), oldest first; `delivery` is the newest outcome. */
  redeliveries?: Redelivery[];
  /** The coalescing window it was held for, and the requests that joined it. */
  coalesce?: CoalesceWindow;
}

/** One delivery of a run's stored reply sent again, with no model call. */
export interface Redelivery {
  time: string;
  delivery: DeliveryOutcome;
}

/** A change to a recorded run. */
export type RunUpdate = Partial<Omit<RunRecord, 'runId'>> & { runId: string };

export type NoticeStatus = 'pending' | 'delivered' | 'failed' | 'skipped';

/** A notify mapping's delivery as the store keeps it: no model call, only the send and its outcome. */
export interface NoticeRecord extends NoticeSpec {
  status: NoticeStatus;
  acceptedAt: string;
  /** Sends begun (one resumed after a crash has more than one). */
  attempts: number;
  finishedAt?: string;
  delivery?: DeliveryOutcome;
}

/** A change to a recorded delivery. */
export type NoticeUpdate = Partial<Omit<NoticeRecord, 'deliveryId' | 'kind'>> & { deliveryId: string };
