// What the running server answers on the control channel (lib/control/server.ts), one handler per
// operation. serve builds the parts; a new operation is one more entry in `serverOperations`, and
// a new piece of the status one more field in `ServerStatus` (null when unknown).

import type { ControlHandler, ControlHandlers } from './server.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { OutboxState } from '../store/journal/outbox.ts';
import type { CallbackState } from '../store/journal/callbacks.ts';
import type { Store } from '../store/journal/store.ts';
import type { RetryOutcome, RetryRequest } from '../store/journal/outbox-retry.ts';
import type { ReloadState, ReloadVerdict } from '../server/reloads.ts';
import type { HookStatus } from '../model/hook-status.ts';

/** A running server's status, as `hooks-ingress status --json` prints it. */
export interface ServerStatus {
  pid: number;
  startedAt: string;
  uptimeSeconds: number;
  /** The listening address (http://127.0.0.1:8789), or `null` before the listener is up. */
  url: string | null;
  stateDir: string;
  /** System events not yet read by a heartbeat, and their text in bytes. */
  backlog: { events: number; bytes: number };
  /** Forward mode's outbox by state; `null` when forward mode is off. */
  outbox: Record<OutboxState, number> | null;
  /** Completion callbacks by state. */
  callbacks: Record<CallbackState, number>;
  /** The journal file's size in bytes. */
  journalBytes: number;
  /** The request ledger's size, `null` where there is none. */
  ledger: { entries: number; bytes: number } | null;
  /** The verdict of the last reload since the start, `null` before the first. */
  lastReload: ReloadVerdict | null;
  /** Whether a reload runs now, whether another waits behind it, and how many requests wait for them. */
  reloading: ReloadState;
  /** Each hook's work: runs executing and waiting, and its controls; `null` when unknown. */
  hooks: HookStatus[] | null;
  /** Each hook with a rate limit or a budget: what it limited today and its budget's day; `null` when unknown. */
  limits: HookLimitStatus[] | null;
}

/** One hook's limits in the status: requests past its rate limit and its budget today (UTC), and its budget's day. */
export interface HookLimitStatus {
  hook: string;
  limitedToday: number;
  overBudgetToday: number;
  /** Runs charged to the budget's day in its zone, and to the next day (waiting for it). */
  budget?: { day: string; used: number; runsPerDay: number; waiting: number; timeZone: string };
}

/** What the operations read and act on, handed in by serve. */
export interface OperationParts {
  pid: number;
  startedAt: number;
  now: () => number;
  stateDir: string;
  url: () => string | null;
  store: Pick<Store, 'backlog' | 'outboxCounts' | 'callbackCounts' | 'stats'>;
  /** Asks for a reload (coalesced with the others) and resolves with its verdict. */
  reload: () => Promise<ReloadVerdict>;
  lastReload: () => ReloadVerdict | null;
  reloading: () => ReloadState;
  /** `outbox retry` (forward mode's outbox and the completion callbacks); `null` when the server has neither. */
  retryOutbox: ((request: RetryRequest) => Promise<RetryOutcome>) | null;
  /** Whether forward mode runs, so the status counts its outbox; absent: whether `retryOutbox` is set. */
  forwarding?: boolean;
  /** The request ledger's entries and bytes, `null` when there is none. */
  ledger?: () => { entries: number; bytes: number } | null;
  /** Each hook's work now. */
  hooks?: () => HookStatus[];
  /** Each limited hook's counts (lib/edge/work-limits.ts). */
  limits?: () => HookLimitStatus[];
  /** Resolves once what status reads is current (the ledger counts an earlier process's files at its first file operation). */
  settled?: () => Promise<void>;
}

/** The operation of `hooks-ingress requests replay` (its server side is lib/server/replay.ts). */
export const REPLAY_OP = 'requests.replay';
/** The operation of `hooks-ingress requests resolve` (its server side is lib/server/resolve.ts). */
export const RESOLVE_OP = 'requests.resolve';
/** The operation of `hooks-ingress runs retry` (its server side is lib/server/retry.ts). */
export const RETRY_OP = 'runs.retry';
/** The operation of `hooks-ingress runs redeliver` (its server side is lib/server/redeliver.ts). */
export const REDELIVER_OP = 'runs.redeliver';
/** The operation of `hooks-ingress reload --dry-run` (its server side is lib/server/reload-plan.ts). */
export const RELOAD_PLAN_OP = 'reload.plan';
/** The operations of `hooks-ingress pause`, `resume` and `drop` (their server side is lib/server/pauses.ts). */
export const PAUSE_OP = 'hooks.pause';
export const RESUME_OP = 'hooks.resume';
export const DROP_OP = 'hooks.drop';
/** The operation of `hooks-ingress try` (its server side is lib/server/try.ts). */
export const TRY_OP = 'try';

/**
 * A handler built at its first call, and the same one for every later call: an operation whose
 * code is apart (try, requests replay) is imported when a server is first asked it, so a server
 * nobody asks never loads that code. A build that failed (its files could not
 * be read at that moment: too many open files, say) is tried again at the next call, as a model
 * provider's is, rather than answering every later call with that one error until a restart.
 */
export function builtOnFirstCall(build: () => Promise<ControlHandler>): ControlHandler {
  let built: Promise<ControlHandler> | undefined;
  return async (args) => {
    if (built === undefined) {
      const building = (built = build());
      building.catch(() => {
        if (built === building) built = undefined;
      });
    }
    return (await built)(args);
  };
}

/** The control channel's operations of a running server. */
export function serverOperations(parts: OperationParts): ControlHandlers {
  return {
    status: async () => {
      await parts.settled?.();
      return serverStatus(parts);
    },
    reload: () => parts.reload(),
    'outbox.retry': (args) => {
      if (parts.retryOutbox === null) {
        throw new HttpError(
          400,
          ErrorCode.ControlBadRequest,
          'the server does not run in forward mode (hooks.forward is not set)',
        );
      }
      return parts.retryOutbox(_retryRequest(args));
    },
  };
}

/** The status of the server `parts` describe, now. */
export function serverStatus(parts: OperationParts): ServerStatus {
  const now = parts.now();
  return {
    pid: parts.pid,
    startedAt: new Date(parts.startedAt).toISOString(),
    uptimeSeconds: Math.max(0, Math.floor((now - parts.startedAt) / 1000)),
    url: parts.url(),
    stateDir: parts.stateDir,
    backlog: parts.store.backlog(),
    outbox: (parts.forwarding ?? parts.retryOutbox !== null) ? parts.store.outboxCounts() : null,
    callbacks: parts.store.callbackCounts(),
    journalBytes: parts.store.stats().journalBytes,
    ledger: parts.ledger?.() ?? null,
    lastReload: parts.lastReload(),
    reloading: parts.reloading(),
    hooks: parts.hooks?.() ?? null,
    limits: parts.limits?.() ?? null,
  };
}

// `{ ids: [...] }` (non-empty strings) or `{ dead: true }`, nothing else.
function _retryRequest(args: unknown): RetryRequest {
  const fields = typeof args === 'object' && args !== null ? (args as Record<string, unknown>) : {};
  if (fields['dead'] === true && fields['ids'] === undefined) return { dead: true };
  const ids = fields['ids'];
  if (
    fields['dead'] === undefined && Array.isArray(ids) && ids.length > 0 &&
    ids.every((id) => typeof id === 'string' && id !== '')
  ) return { ids: ids as string[] };
  throw new HttpError(400, ErrorCode.ControlBadRequest, 'args must be {"ids": [entry ids]} or {"dead": true}');
}
