/**
 * Forward mode's outbox: each accepted action bound for an upstream gateway is an entry in the
 * journal, committed with the request's idempotency key, and updated as delivery goes on.
 */

import { extend, updated } from '../../object.ts';

/** Which upstream hook an entry is POSTed to. */
export type OutboxTarget = 'wake' | 'agent';

/**
 * `pending` until the upstream accepts it (`sent`) or it is given up on (`dead`); `dropped`: it
 * waited behind its paused hook and `hooks-ingress drop` discarded it.
 */
export type OutboxState = 'pending' | 'sent' | 'dead' | 'dropped';

/** What a request adds: the body for the upstream and where it came from. */
export interface OutboxSpec {
  /** Also the `Idempotency-Key` sent upstream, so the upstream can drop a repeat. */
  id: string;
  target: OutboxTarget;
  body: Record<string, unknown>;
  /** The hook name the request came in on. */
  hook: string;
  /** The id of the mapping that made it; absent for /wake and /agent (model/work-hook.ts names its hook). */
  mapping?: string;
  requestId?: string;
  /** Our runId, answered to the caller, for an agent entry. */
  runId?: string;
}

/** An entry as the store keeps it. */
export interface OutboxEntry extends OutboxSpec {
  state: OutboxState;
  acceptedAt: string;
  attempts: number;
  /** Not before this time (ISO) is the next attempt made: the backoff, or the upstream's Retry-After. */
  nextAttemptAt?: string;
  lastError?: string;
  /** The payload field the upstream named when it refused the entry (a 4xx): something accepted here that it does not take. */
  refusedField?: string;
  /** The entry whose POST carried this one too: wakes held back for a session go upstream merged into one. */
  batch?: string;
  /** The upstream's runId, from its answer to an agent entry. */
  upstreamRunId?: string;
  sentAt?: string;
  deadAt?: string;
  /** Set by `outbox retry`: `forward.maxAgeSeconds` counts from here instead of `acceptedAt`. */
  retriedAt?: string;
}

/** A change to an entry. */
export type OutboxUpdate = Partial<Omit<OutboxEntry, 'id'>> & { id: string };

/** New entries, pending, accepted at `time`. */
export function newEntries(specs: readonly OutboxSpec[], time: string): OutboxEntry[] {
  return specs.map((spec) => extend(spec, { state: 'pending' as const, acceptedAt: time, attempts: 0 }));
}

/**
 * Applies a journal line's entries and updates to `outbox`. An entry keeps its place (acceptance
 * order) through its updates; once sent it carries no last error, refused field nor next attempt
 * time, which were about the attempts before.
 */
export function applyOutbox(
  outbox: Map<string, OutboxEntry>,
  entries: readonly OutboxEntry[] = [],
  updates: readonly OutboxUpdate[] = [],
): void {
  for (const entry of entries) outbox.set(entry.id, entry);
  for (const { id, ...change } of updates) {
    const entry = outbox.get(id);
    if (entry === undefined) continue;
    const next = updated(entry, change);
    if (next.state === 'sent') {
      delete next.lastError;
      delete next.refusedField;
      delete next.nextAttemptAt;
    }
    outbox.set(id, next);
  }
}

/**
 * The oldest pending entry that does not wait (`waits`: its hook is paused): forward mode sends in
 * acceptance order per hook, so this one goes next.
 */
export function headOf(
  outbox: ReadonlyMap<string, OutboxEntry>,
  waits?: (entry: OutboxEntry) => boolean,
): OutboxEntry | null {
  for (const entry of outbox.values()) if (entry.state === 'pending' && waits?.(entry) !== true) return entry;
  return null;
}

/** Sent and dropped entries are history: the newest `retain` of them are kept; pending and dead ones always. */
export function trimOutbox(outbox: Map<string, OutboxEntry>, retain: number): void {
  let sent = 0;
  for (const entry of outbox.values()) if (_past(entry)) sent++;
  if (sent <= retain * 1.25) return;
  for (const [id, entry] of outbox) {
    if (sent <= retain) break;
    if (!_past(entry)) continue;
    outbox.delete(id);
    sent--;
  }
}

function _past(entry: OutboxEntry): boolean {
  return entry.state === 'sent' || entry.state === 'dropped';
}

/** Whether `outbox retry` can take an entry: a dead one (send again) or a pending one (send now). */
export function retryable(entry: OutboxEntry): boolean {
  return entry.state === 'dead' || entry.state === 'pending';
}

/**
 * The changes `outbox retry` makes: the named dead or pending entries (or every dead one) become
 * pending, due now, with a fresh `forward.maxAgeSeconds`. The queue keeps acceptance order, so a
 * pending entry named goes now only with the pending ones ahead of it: they are made due now too
 * (their age still counts from before).
 * Also names the ids that are neither dead nor pending entries.
 */
export function retryUpdates(
  outbox: readonly OutboxEntry[],
  which: { ids: readonly string[] } | { dead: true },
  time: string,
): { updates: OutboxUpdate[]; unknown: string[] } {
  const named = (e: OutboxEntry) => ('dead' in which ? e.state === 'dead' : which.ids.includes(e.id) && retryable(e));
  const last = outbox.findLastIndex((e) => named(e) && e.state === 'pending');
  const chosen = outbox.filter((e, i) => named(e) || (i < last && e.state === 'pending'));
  const unknown = 'dead' in which ? [] : which.ids.filter((id) => !chosen.some((e) => e.id === id && named(e)));
  const updates = chosen.map((
    e,
  ): OutboxUpdate => (named(e)
    ? { id: e.id, state: 'pending', retriedAt: time, nextAttemptAt: time }
    : { id: e.id, nextAttemptAt: time })
  );
  return { updates, unknown };
}

/** Entries by state, for metrics. */
export function countOutbox(outbox: Map<string, OutboxEntry>): Record<OutboxState, number> {
  const counts = { pending: 0, sent: 0, dead: 0, dropped: 0 };
  for (const entry of outbox.values()) counts[entry.state]++;
  return counts;
}
