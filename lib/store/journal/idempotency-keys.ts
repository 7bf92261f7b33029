import type { StoredAnswer } from '../../model/records.ts';
import type { IdemRecord } from './records.ts';

/**
 * The idempotency keys the store remembers, each with the first answer given under it: until it
 * expires, and at most `maxKeys` of them, the oldest going first.
 */
export class IdempotencyKeys {
  readonly #now: () => number;
  readonly #maxKeys: number;
  readonly #keys = new Map<string, IdemRecord>();

  constructor(now: () => number, maxKeys: number) {
    this.#now = now;
    this.#maxKeys = maxKeys;
  }

  get size(): number {
    return this.#keys.size;
  }

  /** The first answer to an earlier request with this key, while it is remembered. */
  replay(scope: string, key: string): StoredAnswer | null {
    const id = _idemId(scope, key);
    const found = this.#keys.get(id);
    if (found === undefined) return null;
    if (found.expiresAt <= this.#now()) {
      this.#keys.delete(id);
      return null;
    }
    return { status: found.status, body: found.body, ...(found.waitFor === undefined ? {} : { waitFor: found.waitFor }), ...(found.requestId === undefined ? {} : { requestId: found.requestId }) };
  }

  /** Remembers a key written (or replayed from the journal), unless it has expired; it becomes the newest. */
  remember(idem: IdemRecord): void {
    if (idem.expiresAt <= this.#now()) return;
    const id = _idemId(idem.scope, idem.key);
    this.#keys.delete(id);
    const { scope, key, status, body, expiresAt, waitFor, requestId } = idem;
    this.#keys.set(id, { scope, key, status, body, expiresAt, ...(waitFor === undefined ? {} : { waitFor }), ...(requestId === undefined ? {} : { requestId }) });
    if (this.#keys.size > this.#maxKeys) this.#keys.delete(this.#keys.keys().next().value!);
  }

  /** Forgets this record (its line never reached the disk); a later one for the same key stays. */
  forget(idem: IdemRecord): void {
    const id = _idemId(idem.scope, idem.key);
    // Only this line's record: the body object is shared with it, a later one for the same key is not.
    if (this.#keys.get(id)?.body === idem.body) this.#keys.delete(id);
  }

  /** The keys that have not expired at `now`, oldest first. */
  live(now: number): IdemRecord[] {
    return [...this.#keys.values()].filter((idem) => idem.expiresAt > now);
  }
}

function _idemId(scope: string, key: string): string {
  return `${scope}\n${key}`;
}
