// The idempotency key of a request (hookKey: as its hook reads it, live or stored), and the first answer
// replayed to a retry (also while the first is in flight).

import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Store } from '../store/journal/store.ts';
import type { IdempotencyWrite } from '../model/records.ts';
import { makeCause } from '../model/cause.ts';
import { extend } from '../object.ts';
import type { Signature } from '../guard/signatures/config.ts';
import type { DeliveryId } from '../guard/signatures/scheme.ts';
import { deliveryId } from '../guard/signatures/verify.ts';
import type { Answer } from './answer.ts';
import type { Trace } from './trace.ts';
import { CLIENT_GONE, type Gone, type Waiter } from './wait.ts';

const MAX_IDEMPOTENCY_KEY = 256;

/** The hook path and key a request is made idempotent by (and how long, when not the default). */
export type IdempotencyKey = Pick<IdempotencyWrite, 'scope' | 'key' | 'ttlMs' | 'keepMs'>;

/** A request's idempotency key, and how long its answer is kept when not `hooks.idempotencyTtlSeconds`. */
export interface RequestKey {
  key: string;
  ttlMs?: number;
  /** A replay run with `--force`: it runs even when the key is taken (after any copy in flight), and takes it. */
  again?: boolean;
}

/**
 * Runs `work` at most once per hook and key (a retry answered from the record carries `trace`
 * marked as a duplicate); see {@link createIdempotency}. `gone` ends a copy's wait when its client leaves.
 */
export type Idempotent = (
  name: string,
  key: RequestKey | null,
  work: (idem: IdempotencyKey | null) => Promise<Answer>,
  trace?: Trace,
  gone?: Gone,
) => Promise<Answer>;

/** Requests waiting behind the first copy of their key, counted for metrics. */
export interface Behind {
  count: number;
}

/**
 * A retry with a key already answered gets that answer again; one arriving while the first is
 * still being handled waits for it, so two copies can never both take effect. `inflight` outlives
 * a reload; `wait` holds a replayed answer whose first request waited for its runs. A copy whose
 * client goes away while it waits is let go at once (`gone`), holding nothing. A key taken with
 * the default answer window stays taken for `keepMs` when that is longer (the ledger's retention).
 */
export function createIdempotency(
  store: Pick<Store, 'replay'>,
  inflight: Map<string, Promise<Answer>>,
  wait?: Waiter,
  behind: Behind = { count: 0 },
  keepMs?: number,
): Idempotent {
  // Without a key there is nothing to hold: the work's own promise is the answer, not one wrapped in another.
  return (name, key, work, trace, gone) => (key === null ? work(null) : keyed(name, key, work, trace, gone));
  async function keyed(
    name: string,
    { key, ttlMs, again }: RequestKey,
    work: (idem: IdempotencyKey | null) => Promise<Answer>,
    trace?: Trace,
    gone?: Gone,
  ): Promise<Answer> {
    const id = `${name}\n${key}`;
    // Wait while any copy is in flight; from the last check to the `set` below nothing awaits,
    // so exactly one copy goes ahead when the one before it failed.
    for (let running = inflight.get(id); running !== undefined; running = inflight.get(id)) {
      behind.count++;
      const left = await _settledOrGone(running, gone).finally(() => behind.count--);
      if (left) return trace === undefined ? LEFT : extend(LEFT, { trace });
    }
    const prior = again === true ? null : store.replay(name, key);
    if (prior !== null) {
      // A first request that waited for its runs: the retry waits for the same ones (or has them at once).
      const { waitFor } = prior;
      const answer = waitFor !== undefined && wait !== undefined ? await wait(extend(prior, { waitFor }), gone) : prior;
      const duplicate: Answer = {
        status: answer.status,
        body: answer.body,
        headers: { 'idempotent-replayed': 'true' },
      };
      if (trace !== undefined) {
        duplicate.trace = extend(trace, {
          became: { duplicateOf: prior.requestId ?? '' },
          cause: makeCause('duplicate', prior.requestId ?? ''),
        });
      }
      return duplicate;
    }
    // A window of the scheme's own (a body's hash) is the whole of its memory.
    const pending = work({
      scope: name,
      key,
      ...(ttlMs === undefined ? (keepMs === undefined ? {} : { keepMs }) : { ttlMs }),
    });
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
export function idempotencyKey(
  headers: IncomingHttpHeaders,
  body: Record<string, unknown>,
  delivery: DeliveryId | null = null,
): RequestKey | null {
  if (delivery?.signed === true) {
    // Signed ids are short; an over-long one is kept by its hash, since ignoring it would let its replays through.
    const key = delivery.id.length <= MAX_IDEMPOTENCY_KEY
      ? delivery.id
      : `id-sha256:${createHash('sha256').update(delivery.id).digest('hex')}`;
    return { key, ...(delivery.windowSeconds === undefined ? {} : { ttlMs: delivery.windowSeconds * 1000 }) };
  }
  for (
    const candidate of [
      headers['idempotency-key'],
      headers['x-openclaw-idempotency-key'],
      delivery?.id,
      headers['webhook-id'],
      body['idempotencyKey'],
    ]
  ) {
    if (typeof candidate !== 'string') continue;
    const key = candidate.trim();
    // Over-long keys are ignored rather than refused: the request still works, just without dedupe.
    if (key !== '' && key.length <= MAX_IDEMPOTENCY_KEY) return { key };
  }
  return null;
}

/**
 * The idempotency key of a hook request as its hook reads it: the delivery id a signed path's scheme
 * finds (`signature` is the path's, whether or not the request verifies), else {@link idempotencyKey}'s
 * headers; `/wake` and `/agent` also read the body's `idempotencyKey`, as OpenClaw's gateway does.
 */
export function hookKey(
  request: { name: string; headers: IncomingHttpHeaders; bytes: Buffer; rawQuery: string },
  body: Record<string, unknown>,
  signature: Signature | undefined,
): RequestKey | null {
  const { name, headers } = request;
  const delivery = signature === undefined
    ? null
    : deliveryId(signature, { headers, body: request.bytes, query: request.rawQuery }, body);
  return idempotencyKey(headers, name === 'agent' || name === 'wake' ? body : {}, delivery);
}

/** What a copy whose client went away ends with: logged and counted, never sent. */
const LEFT: Answer = Object.freeze({
  status: CLIENT_GONE,
  body: { ok: false, error: 'the client went away while an earlier copy of the request was handled' },
});

// Whether the client went away before `running` settled. `running` keeps a callback until the first
// copy is done; after a departure it reaches only an emptied watch, never the request (a closure
// over `gone` here would keep the request and its socket for as long as the first copy runs).
function _settledOrGone(running: Promise<unknown>, gone: Gone | undefined): Promise<boolean> {
  if (gone === undefined) return running.then(_no, _no);
  const watch = new _Watch();
  watch.leave = gone(watch.gone);
  if (watch.resolve !== null) running.then(watch.settled, watch.settled);
  return watch.promise;
}

class _Watch {
  resolve: ((left: boolean) => void) | null = null;
  leave: (() => void) | null = null;
  readonly promise = new Promise<boolean>((resolve) => {
    this.resolve = resolve;
  });
  readonly gone = () => this.#end(true);
  readonly settled = () => this.#end(false);
  #end(left: boolean): void {
    const { resolve, leave } = this;
    this.resolve = null;
    this.leave = null;
    if (!left) leave?.();
    resolve?.(left);
  }
}

const _no = () => false;
