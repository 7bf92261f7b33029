// The idempotency keys remembered with their first answers until they expire, then as taken alone until the
// ledger's retention, the oldest going first past each cap.

import type { StoredAnswer } from '../../model/records.ts';
import type { IdemRecord, TakenRecord } from './records.ts';

/**
 * The idempotency keys the store remembers. Each is answered with the first answer given under it
 * until that answer expires (at most `maxKeys` answers, the oldest going first); a key written with
 * `takenUntil` stays taken after that, without the answer's body, until then (at most `maxTaken`
 * such keys, the oldest going first): a provider's late retry of a delivery is still a duplicate.
 */
export class IdempotencyKeys {
  readonly #now: () => number;
  readonly #maxKeys: number;
  readonly #maxTaken: number;
  readonly #keys = new Map<string, IdemRecord>();
  readonly #taken = new Map<string, TakenRecord>();

  constructor(now: () => number, maxKeys: number, maxTaken = 100_000) {
    this.#now = now;
    this.#maxKeys = maxKeys;
    this.#maxTaken = maxTaken;
  }

  /** How many keys are remembered with their answer. */
  get size(): number {
    return this.#keys.size;
  }

  /** How many keys are remembered as taken (their answer kept or not). */
  get takenSize(): number {
    return this.#taken.size;
  }

  /**
   * The first answer to an earlier request with this key, while it is remembered; once only its
   * being taken is, a short answer that says so (`duplicate`) and names the request that took it.
   */
  replay(scope: string, key: string): StoredAnswer | null {
    const id = _idemId(scope, key);
    const now = this.#now();
    const found = this.#keys.get(id);
    if (found !== undefined && found.expiresAt > now) {
      return {
        status: found.status,
        body: found.body,
        ...(found.waitFor === undefined ? {} : { waitFor: found.waitFor }),
        ...(found.requestId === undefined ? {} : { requestId: found.requestId }),
      };
    }
    if (found !== undefined) this.#keys.delete(id);
    const taken = this.#taken.get(id);
    if (taken === undefined) return null;
    if (taken.takenUntil <= now) {
      this.#taken.delete(id);
      return null;
    }
    return {
      status: 200,
      body: { ok: true, duplicate: true, ...(taken.requestId === undefined ? {} : { duplicateOf: taken.requestId }) },
      ...(taken.requestId === undefined ? {} : { requestId: taken.requestId }),
    };
  }

  /** Remembers a key written (or replayed from the journal), as far as it has not expired; it becomes the newest. */
  remember(idem: IdemRecord): void {
    const now = this.#now();
    const id = _idemId(idem.scope, idem.key);
    const { scope, key, status, body, expiresAt, waitFor, requestId, takenUntil } = idem;
    if (takenUntil !== undefined && takenUntil > expiresAt) {
      this.take({ scope, key, takenUntil, ...(requestId === undefined ? {} : { requestId }) });
    }
    if (expiresAt <= now) return;
    this.#keys.delete(id);
    this.#keys.set(id, {
      scope,
      key,
      status,
      body,
      expiresAt,
      ...(waitFor === undefined ? {} : { waitFor }),
      ...(requestId === undefined ? {} : { requestId }),
      ...(takenUntil === undefined ? {} : { takenUntil }),
    });
    if (this.#keys.size > this.#maxKeys) this.#keys.delete(this.#keys.keys().next().value!);
  }

  /** Remembers a key as taken until `takenUntil`, unless that has passed; it becomes the newest. */
  take(taken: TakenRecord): void {
    if (taken.takenUntil <= this.#now()) return;
    const id = _idemId(taken.scope, taken.key);
    this.#taken.delete(id);
    const { scope, key, takenUntil, requestId } = taken;
    this.#taken.set(id, { scope, key, takenUntil, ...(requestId === undefined ? {} : { requestId }) });
    if (this.#taken.size > this.#maxTaken) this.#taken.delete(this.#taken.keys().next().value!);
  }

  /** Forgets this record (its line never reached the disk); a later one for the same key stays. */
  forget(idem: IdemRecord): void {
    const id = _idemId(idem.scope, idem.key);
    // Only this line's record: the body object is shared with it, a later one for the same key is not.
    if (this.#keys.get(id)?.body === idem.body) this.#keys.delete(id);
    const taken = this.#taken.get(id);
    if (taken !== undefined && taken.takenUntil === idem.takenUntil && taken.requestId === idem.requestId) {
      this.#taken.delete(id);
    }
  }

  /** The keys whose answer has not expired at `now`, oldest first. */
  live(now: number): IdemRecord[] {
    return [...this.#keys.values()].filter((idem) => idem.expiresAt > now);
  }

  /** The keys still taken at `now` whose answer is no longer kept, oldest first: what a compacted journal keeps of them. */
  takenOnly(now: number): TakenRecord[] {
    // One whose answer is kept, with the same end, is written with that answer.
    const withAnswer = (id: string, taken: TakenRecord) => {
      const idem = this.#keys.get(id);
      return idem !== undefined && idem.expiresAt > now && idem.takenUntil === taken.takenUntil;
    };
    return [...this.#taken.entries()].filter(([id, taken]) => taken.takenUntil > now && !withAnswer(id, taken)).map((
      [, taken],
    ) => taken);
  }
}

function _idemId(scope: string, key: string): string {
  return `${scope}\n${key}`;
}
