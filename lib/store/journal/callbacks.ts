// The completion callbacks as the journal keeps them: one entry per run that ended with an `onComplete`,
// written in the line that settles the run, in a queue per receiver origin, updated as delivery goes on.

import { extend, updated } from '../../object.ts';

/** `pending` until the receiver answers 2xx (`sent`) or the entry outlives its maximum age (`dead`). */
export type CallbackState = 'pending' | 'sent' | 'dead';

/** What the runtime adds when a run settles: the signed POST to make, not yet tried. */
export interface NewCallback {
  /** The `webhook-id`: the same on every attempt, so a receiver drops a repeat. */
  id: string;
  runId: string;
  /** The hook name the run's request came in on. */
  hook: string;
  url: string;
  /** `scheme://host:port` of `url`: the queue it waits in, behind the entries before it. */
  origin: string;
  /** The mapping whose `onComplete` secret signs it; absent: `hooks.onComplete`'s. */
  mapping?: string;
  maxAgeSeconds: number;
  /** The event POSTed (type, version, timestamp, data), the same bytes on every attempt. */
  body: Record<string, unknown>;
}

/** An entry as the store keeps it. */
export interface CallbackEntry extends NewCallback {
  state: CallbackState;
  acceptedAt: string;
  attempts: number;
  /** Not before this time (ISO) is the next attempt made: the backoff, or the receiver's Retry-After. */
  nextAttemptAt?: string;
  lastError?: string;
  /** The receiver's status on the last attempt that got an answer. */
  status?: number;
  sentAt?: string;
  deadAt?: string;
  /** Set by `outbox retry`: the maximum age counts from here instead of `acceptedAt`. */
  retriedAt?: string;
}

/** A change to an entry. */
export type CallbackUpdate = Partial<Omit<CallbackEntry, 'id'>> & { id: string };

/** New entries, pending, accepted at `time`. */
export function newCallbacks(specs: readonly NewCallback[], time: string): CallbackEntry[] {
  return specs.map((spec) => extend(spec, { state: 'pending' as const, acceptedAt: time, attempts: 0 }));
}

/**
 * Applies a journal line's entries and updates. An entry keeps its place (the order runs settled)
 * through its updates; a sent one carries no error nor next attempt time, which were about before.
 * An entry already known is not replaced: its id is the run's, and a run settles once.
 */
export function applyCallbacks(
  callbacks: Map<string, CallbackEntry>,
  entries: readonly CallbackEntry[] = [],
  updates: readonly CallbackUpdate[] = [],
): void {
  for (const entry of entries) if (!callbacks.has(entry.id)) callbacks.set(entry.id, entry);
  for (const { id, ...change } of updates) {
    const entry = callbacks.get(id);
    if (entry === undefined) continue;
    const next = updated(entry, change);
    if (next.state === 'sent') {
      delete next.lastError;
      delete next.nextAttemptAt;
    }
    callbacks.set(id, next);
  }
}

/** The oldest pending entry of each origin, in the order of the entries: the ones that go next. */
export function callbackHeads(callbacks: ReadonlyMap<string, CallbackEntry>): CallbackEntry[] {
  const heads = new Map<string, CallbackEntry>();
  for (const entry of callbacks.values()) {
    if (entry.state === 'pending' && !heads.has(entry.origin)) heads.set(entry.origin, entry);
  }
  return [...heads.values()];
}

/** Sent entries are history: the newest `retain` of them are kept; pending and dead ones always. */
export function trimCallbacks(callbacks: Map<string, CallbackEntry>, retain: number): void {
  let sent = 0;
  for (const entry of callbacks.values()) if (entry.state === 'sent') sent++;
  if (sent <= retain * 1.25) return;
  for (const [id, entry] of callbacks) {
    if (sent <= retain) break;
    if (entry.state !== 'sent') continue;
    callbacks.delete(id);
    sent--;
  }
}

/**
 * The changes `outbox retry` makes to callbacks: the named dead or pending entries (or every dead
 * one) become pending and due now, their maximum age counted afresh. Each origin keeps its order,
 * so the pending entries ahead of a named one in its origin are made due now too. Also names the
 * ids that are no dead or pending callback.
 */
export function callbackRetryUpdates(
  callbacks: readonly CallbackEntry[],
  which: { ids: readonly string[] } | { dead: true },
  time: string,
): { updates: CallbackUpdate[]; unknown: string[] } {
  const retryable = (e: CallbackEntry) => e.state === 'dead' || e.state === 'pending';
  const named = (e: CallbackEntry) => ('dead' in which ? e.state === 'dead' : which.ids.includes(e.id) && retryable(e));
  const updates: CallbackUpdate[] = [];
  for (const origin of new Set(callbacks.map((e) => e.origin))) {
    const queue = callbacks.filter((e) => e.origin === origin);
    const last = queue.findLastIndex((e) => named(e) && e.state === 'pending');
    for (const [i, e] of queue.entries()) {
      if (named(e)) updates.push({ id: e.id, state: 'pending', retriedAt: time, nextAttemptAt: time });
      else if (i < last && e.state === 'pending') updates.push({ id: e.id, nextAttemptAt: time });
    }
  }
  const unknown = 'dead' in which ? [] : which.ids.filter((id) => !callbacks.some((e) => e.id === id && named(e)));
  return { updates, unknown };
}

/** Entries by state, for the status and metrics. */
export function countCallbacks(callbacks: ReadonlyMap<string, CallbackEntry>): Record<CallbackState, number> {
  const counts = { pending: 0, sent: 0, dead: 0 };
  for (const entry of callbacks.values()) counts[entry.state]++;
  return counts;
}
