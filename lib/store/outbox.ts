/**
 * Forward mode's outbox: each accepted action bound for an upstream gateway is an entry in the
 * journal, committed with the request's idempotency key, and updated as delivery goes on.
 */

/** Which upstream hook an entry is POSTed to. */
export type OutboxTarget = 'wake' | 'agent';

/** `pending` until the upstream accepts it (`sent`) or it is given up on (`dead`). */
export type OutboxState = 'pending' | 'sent' | 'dead';

/** What a request adds: the body for the upstream and where it came from. */
export interface OutboxSpec {
  /** Also the `Idempotency-Key` sent upstream, so the upstream can drop a repeat. */
  id: string;
  target: OutboxTarget;
  body: Record<string, unknown>;
  /** The hook name the request came in on. */
  hook: string;
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
  return specs.map((spec) => ({ ...spec, state: 'pending', acceptedAt: time, attempts: 0 }));
}

/** Applies a journal line's entries and updates to `outbox`. */
export function applyOutbox(outbox: Map<string, OutboxEntry>, entries: readonly OutboxEntry[] = [], updates: readonly OutboxUpdate[] = []): void {
  for (const entry of entries) outbox.set(entry.id, entry);
  for (const { id, ...change } of updates) {
    const entry = outbox.get(id);
    if (entry !== undefined) outbox.set(id, { ...entry, ...change });
  }
}

/** Sent entries are history: the newest `retain` of them are kept; pending and dead ones always. */
export function trimOutbox(outbox: Map<string, OutboxEntry>, retain: number): void {
  let sent = 0;
  for (const entry of outbox.values()) if (entry.state === 'sent') sent++;
  if (sent <= retain * 1.25) return;
  for (const [id, entry] of outbox) {
    if (sent <= retain) break;
    if (entry.state !== 'sent') continue;
    outbox.delete(id);
    sent--;
  }
}

/**
 * The changes `outbox retry` makes: the named dead entries (or every dead one) become pending,
 * due now, with a fresh `forward.maxAgeSeconds`. Also names the ids that are not dead entries.
 */
export function retryUpdates(outbox: readonly OutboxEntry[], which: { ids: readonly string[] } | { dead: true }, time: string): { updates: OutboxUpdate[]; unknown: string[] } {
  const dead = outbox.filter((e) => e.state === 'dead');
  const chosen = 'dead' in which ? dead : dead.filter((e) => which.ids.includes(e.id));
  const unknown = 'dead' in which ? [] : which.ids.filter((id) => !chosen.some((e) => e.id === id));
  return { updates: chosen.map((e) => ({ id: e.id, state: 'pending', retriedAt: time, nextAttemptAt: time })), unknown };
}

/** Entries by state, for metrics. */
export function countOutbox(outbox: Map<string, OutboxEntry>): Record<OutboxState, number> {
  const counts = { pending: 0, sent: 0, dead: 0 };
  for (const entry of outbox.values()) counts[entry.state]++;
  return counts;
}
