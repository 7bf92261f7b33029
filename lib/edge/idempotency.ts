import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Became } from '../store/ledger-entry.ts';
import type { Store, StoredAnswer } from '../store/store.ts';
import type { DeliveryId } from '../guard/signature.ts';
import type { Answer } from './answer.ts';
import type { IdempotencyKey } from './dispatch.ts';
import type { WaitingReply } from './wait.ts';

const MAX_IDEMPOTENCY_KEY = 256;

/** A request's idempotency key, and how long its answer is kept when not `hooks.idempotencyTtlSeconds`. */
export interface RequestKey {
  key: string;
  ttlMs?: number;
}

/** Runs `work` at most once per hook and key (a retry answered from the record is noted as a duplicate); see {@link createIdempotency}. */
export type Idempotent = (name: string, key: RequestKey | null, work: (idem: IdempotencyKey | null) => Promise<Answer>, note?: { became?: Became }) => Promise<Answer>;

/**
 * A retry with a key already answered gets that answer again; one arriving while the first is
 * still being handled waits for it, so two copies can never both take effect. `inflight` outlives
 * a reload; `wait` holds a replayed answer whose first request waited for its runs.
 */
export function createIdempotency(
  store: Pick<Store, 'replay'>,
  inflight: Map<string, Promise<Answer>>,
  wait?: (reply: WaitingReply) => Promise<StoredAnswer>,
): Idempotent {
  // Without a key there is nothing to hold: the work's own promise is the answer, not one wrapped in another.
  return (name, key, work, note) => (key === null ? work(null) : keyed(name, key, work, note));
  async function keyed(name: string, { key, ttlMs }: RequestKey, work: (idem: IdempotencyKey | null) => Promise<Answer>, note?: { became?: Became }): Promise<Answer> {
    const id = `${name}\n${key}`;
    // Wait while any copy is in flight; from the last check to the `set` below nothing awaits,
    // so exactly one copy goes ahead when the one before it failed.
    for (let running = inflight.get(id); running !== undefined; running = inflight.get(id)) await running.catch(() => undefined);
    const prior = store.replay(name, key);
    if (prior !== null) {
      if (note !== undefined) note.became = prior.requestId === undefined ? { duplicateOf: '' } : { duplicateOf: prior.requestId };
      // A first request that waited for its runs: the retry waits for the same ones (or has them at once).
      const { waitFor } = prior;
      const answer = waitFor !== undefined && wait !== undefined ? await wait({ ...prior, waitFor }) : prior;
      return { status: answer.status, body: answer.body, headers: { 'idempotent-replayed': 'true' } };
    }
    const pending = work({ scope: name, key, ...(ttlMs === undefined ? {} : { ttlMs }) });
    inflight.set(id, pending);
    try {
      return await pending;
    } finally {
      if (inflight.get(id) === pending) inflight.delete(id);
    }
  }
}

/**
 * The request's idempotency key. A delivery id its signature covers is the key, and nothing the
 * request says beside it can replace it: a replay with a fresh `Idempotency-Key` is still the same
 * delivery. Otherwise `Idempotency-Key`, else `X-OpenClaw-Idempotency-Key` (what OpenClaw's own
 * clients send), else the sender's delivery id, else `webhook-id`, else the body's `idempotencyKey`.
 */
export function idempotencyKey(headers: IncomingHttpHeaders, body: Record<string, unknown>, delivery: DeliveryId | null = null): RequestKey | null {
  if (delivery?.signed === true) {
    // Signed ids are short; an over-long one is kept by its hash, since ignoring it would let its replays through.
    const key = delivery.id.length <= MAX_IDEMPOTENCY_KEY ? delivery.id : `id-sha256:${createHash('sha256').update(delivery.id).digest('hex')}`;
    return { key, ...(delivery.windowSeconds === undefined ? {} : { ttlMs: delivery.windowSeconds * 1000 }) };
  }
  for (const candidate of [headers['idempotency-key'], headers['x-openclaw-idempotency-key'], delivery?.id, headers['webhook-id'], body['idempotencyKey']]) {
    if (typeof candidate !== 'string') continue;
    const key = candidate.trim();
    // Over-long keys are ignored rather than refused: the request still works, just without dedupe.
    if (key !== '' && key.length <= MAX_IDEMPOTENCY_KEY) return { key };
  }
  return null;
}
