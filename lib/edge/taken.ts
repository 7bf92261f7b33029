// Whether a stored request's delivery id (its idempotency key, read as live dedupe reads it) is
// already taken, and by which request: a replay of it would then be a second delivery of the same
// event. A replay that succeeds takes the id in the same journal line as its effects, so the
// provider's own retry of the delivery is answered as a duplicate afterwards, and the other way round.

import type { Config } from '../config/types.ts';
import { HttpError } from '../errors.ts';
import { signedPaths } from '../guard/signatures/paths.ts';
import type { LedgerEntry } from '../model/ledger-entry.ts';
import type { Store } from '../store/journal/store.ts';
import { hookKey } from './idempotency.ts';
import { parseHookBody } from './plan.ts';
import { replayInput } from './replay.ts';

/** A stored request's delivery id as its hook reads it, and the request that took it (`null`: not taken). */
export interface DeliveryTaken {
  /** The hook the key is scoped to, and the key. */
  scope: string;
  key: string;
  /** The request that took it (its id unknown in a record older than request ids on keys), or `null`. */
  by: { requestId?: string } | null;
}

/**
 * The delivery id of `entry` under `config` and whether it is taken in `store`, or `null` when the
 * stored request has none (nothing kept names it: no such header or body field, a body that does
 * not parse, or a header the ledger redacts, as Twilio's `I-Twilio-Idempotency-Token`).
 */
export function deliveryTaken(entry: LedgerEntry, config: Config, store: Pick<Store, 'replay'>): DeliveryTaken | null {
  if (entry.hook === undefined || entry.hook === '' || entry.body === undefined || entry.body.truncated) return null;
  const request = replayInput(entry, 'taken', config);
  const signature = signedPaths(config).get(request.name);
  let body: Record<string, unknown>;
  try {
    body = parseHookBody(request.name, request.headers, request.bytes, signature);
  } catch (error) {
    if (error instanceof HttpError) return null;
    throw error;
  }
  const key = hookKey(request, body, signature);
  if (key === null) return null;
  const prior = store.replay(request.name, key.key);
  return {
    scope: request.name,
    key: key.key,
    by: prior === null ? null : prior.requestId === undefined ? {} : { requestId: prior.requestId },
  };
}

/** Why a replay of `entry` is skipped: its delivery id was already taken by `requestId` (unknown in an old record). */
export function takenReason(entry: Pick<LedgerEntry, 'id'>, requestId: string | undefined): string {
  return `entry ${entry.id}'s delivery id was already accepted${
    requestId === undefined || requestId === '' ? '' : ` as request ${requestId}`
  }; replay it again with --force`;
}

/** Why a replay of `entry` would be skipped in a run that replays `first` before it, with the same delivery id. */
export function takenInRun(entry: Pick<LedgerEntry, 'id'>, first: string): string {
  return `entry ${entry.id}'s delivery id would already be accepted by the replay of entry ${first} before it; replay it again with --force`;
}

/**
 * Says, entry by entry through one replay call, why a replay is skipped for its delivery id: taken
 * by a request on record, or in a dry run by an entry before it in the same call whose replay
 * would take it (a real run finds that one on record, as each replay is committed before the next);
 * `inRun` says which entry before it that is, `by` which request took it on record.
 */
export function takenCheck(
  taken: (entry: LedgerEntry) => Promise<DeliveryTaken | null>,
): {
  why(entry: LedgerEntry): Promise<string | null>;
  wouldTake(entry: LedgerEntry): void;
  inRun(entry: LedgerEntry): string | null;
  by(entry: LedgerEntry): string | null;
} {
  const keys = new Map<string, string>();
  // The entries `why` found taken on record, and the request that took each.
  const byRecord = new Map<string, string>();
  const planned = new Map<string, string>();
  // The entries `why` found taken by an entry before them in the call, and by which.
  const inRun = new Map<string, string>();
  return {
    async why(entry) {
      const found = await taken(entry);
      if (found === null) return null;
      const id = `${found.scope}\n${found.key}`;
      keys.set(entry.id, id);
      if (found.by !== null) {
        if (found.by.requestId !== undefined) byRecord.set(entry.id, found.by.requestId);
        return takenReason(entry, found.by.requestId);
      }
      const first = planned.get(id);
      if (first !== undefined) inRun.set(entry.id, first);
      return first === undefined ? null : takenInRun(entry, first);
    },
    inRun(entry) {
      return inRun.get(entry.id) ?? null;
    },
    by(entry) {
      return byRecord.get(entry.id) ?? null;
    },
    wouldTake(entry) {
      const id = keys.get(entry.id);
      if (id !== undefined && !planned.has(id)) planned.set(id, entry.id);
    },
  };
}
