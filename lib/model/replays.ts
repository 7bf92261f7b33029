// What was done about a request that failed: the original ("root") request, each replay of it and
// what that replay came to, each retry of its run (`runs retry`), and whether it is resolved. A
// replay of a replay is a replay of the root. The journal keeps one record per root (store/journal/replays.ts), written by the server in
// the same line as a replay's effects; `requests`, `show` and the inspector read it.

/** How a root stands: a replay of it succeeded, it was marked resolved by hand, or every replay of it failed. */
export const ROOT_STATES = ['succeeded', 'resolved', 'failed'] as const;
export type RootState = (typeof ROOT_STATES)[number];

/** One replay of a root, and what it came to. */
export interface ReplayAttempt {
  /** The replay's own ledger entry; absent when the ledger was off. */
  entry?: string;
  /** The replay's request id. */
  requestId: string;
  /** Its answer: below 400 (a filter's `ignored` and a transform's skip included) it succeeded. */
  status: number;
  time: string;
}

/** One retry of a run of the root's request (`runs retry`): the failed run, and the run that runs it again. */
export interface RetryAttempt {
  run: string;
  as: string;
  time: string;
}

/** One root's record as the store holds it. */
export interface RootRecord {
  /** The entry id of the original request. */
  root: string;
  state: RootState;
  /** Its replays, oldest first (the newest {@link MAX_ATTEMPTS}, the one that succeeded always among them). */
  replays: ReplayAttempt[];
  /** The retries of its runs, oldest first (the newest {@link MAX_ATTEMPTS}): once there is one, its work goes on by retries, not replays. */
  retries?: RetryAttempt[];
  /** When it was marked resolved by hand. */
  resolvedAt?: string;
  /** The time of its last change. */
  time: string;
}

/** A change to a root's record, as one journal line carries it: its state after the change, the replays it adds, a resolution by hand. */
export interface RootChange {
  root: string;
  state: RootState;
  /** Replays to add (one for a replay; every one kept in a compacted journal). */
  replays?: ReplayAttempt[];
  /** Retries of its runs to add. */
  retries?: RetryAttempt[];
  resolvedAt?: string;
  time: string;
}

/** How many replays of one root are kept: past it, the oldest failed ones go. */
export const MAX_ATTEMPTS = 20;

/** A replay succeeded when it got an answer below 400. */
export function succeeded(status: number): boolean {
  return status < 400;
}

/**
 * What an entry's list line, `show` and the inspector say of its root: the root (the entry itself,
 * or the one it replays), the state, the replay that resolved it, and the replays, oldest first.
 * An entry with no record has none (`unresolved` when it failed).
 */
export interface Resolution {
  root: string;
  state: RootState;
  /** The replay that succeeded (the first that did), for "resolved by replay X (200)". */
  by?: ReplayAttempt;
  resolvedAt?: string;
  replays: ReplayAttempt[];
  /** The retries of its runs, when there were any. */
  retries?: RetryAttempt[];
  /** The request that took its delivery id, when that is what resolved it. */
  delivery?: TakenBy;
}

/**
 * Another request that took a failed request's delivery id (the key live dedupe reads) and was
 * accepted: the provider's retry accepted live, or a replay of another copy of the delivery. The
 * failure needs nothing more: replaying it would be refused as a duplicate (or run twice, forced).
 */
export interface TakenBy {
  requestId: string;
  /** Its ledger entry, while the ledger has it. */
  entry?: string;
  /** It came from the sender, not from a replay. */
  live: boolean;
}

/** The resolution of a failed entry whose delivery id `by` took: resolved by that delivery, the root's replays (if any) kept. */
export function deliveredResolution(root: string, by: TakenBy, record?: RootRecord | null): Resolution {
  return { root, state: 'resolved', delivery: by, replays: record?.replays ?? [] };
}

/** The resolution a record gives an entry of its root. */
export function resolutionOf(record: RootRecord): Resolution {
  const by = record.replays.find((r) => succeeded(r.status));
  return {
    root: record.root,
    state: record.state,
    ...(by === undefined ? {} : { by }),
    ...(record.resolvedAt === undefined ? {} : { resolvedAt: record.resolvedAt }),
    replays: record.replays,
    ...(record.retries === undefined || record.retries.length === 0 ? {} : { retries: record.retries }),
  };
}

/** The root an entry stands for: the one it replays, else itself. */
export function rootOf(entry: { id: string; replayOf?: string }): string {
  return entry.replayOf ?? entry.id;
}

/** Whether a root's record leaves it resolved: a replay succeeded, or it was marked so by hand. */
export function resolved(record: Pick<RootRecord, 'state'> | null | undefined): boolean {
  return record !== null && record !== undefined && record.state !== 'failed';
}

/** "resolved by replay X (200)", "resolved by delivery Y (accepted live)", "resolved by hand", "replayed 2x, not resolved": what a line says of an entry's root. */
export function describeResolution(resolution: Resolution): string {
  const count = resolution.replays.length;
  const retried = resolution.retries?.[0];
  if (resolution.state === 'succeeded' && resolution.by === undefined && retried !== undefined) {
    return `resolved by retry: run ${retried.run} retried as ${retried.as}${_more(resolution.retries!.length)}`;
  }
  if (resolution.state === 'succeeded') {
    const by = resolution.by;
    return by === undefined
      ? 'resolved by a replay'
      : `resolved by replay ${by.entry ?? `request ${by.requestId}`} (${by.status})`;
  }
  if (resolution.delivery !== undefined) return `resolved by delivery ${describeTaker(resolution.delivery)}`;
  if (resolution.state === 'resolved') return 'resolved by hand';
  return `replayed ${count}x, not resolved (last ${resolution.replays.at(-1)?.status ?? '-'})`;
}

// "" for one retry, " (retried 3x)" for a chain of them.
function _more(count: number): string {
  return count > 1 ? ` (retried ${count}x)` : '';
}

/** "Y (accepted live)", "request Y (accepted by a replay)": the request that took a delivery id. */
export function describeTaker(by: TakenBy): string {
  return `${by.entry ?? `request ${by.requestId}`} (accepted ${by.live ? 'live' : 'by a replay'})`;
}

/**
 * The change a replay makes to its root's record: a replay that succeeded makes it `succeeded`; one
 * that failed leaves a root resolved as it was, and makes any other `failed`.
 */
export function replayedChange(
  root: string,
  record: Pick<RootRecord, 'state'> | null,
  attempt: ReplayAttempt,
): RootChange {
  const state: RootState = succeeded(attempt.status) ? 'succeeded' : (record?.state ?? 'failed');
  return { root, state, replays: [attempt], time: attempt.time };
}

/**
 * The change a retry of one of the root's runs makes: its work was done again, so the root reads as
 * resolved (as a replay accepted makes it), and the retry is kept beside its replays.
 */
export function retriedChange(root: string, attempt: RetryAttempt): RootChange {
  return { root, state: 'succeeded', retries: [attempt], time: attempt.time };
}

/** The change `requests resolve` makes: resolved by hand, at `time`. */
export function resolvedChange(root: string, time: string): RootChange {
  return { root, state: 'resolved', resolvedAt: time, time };
}
