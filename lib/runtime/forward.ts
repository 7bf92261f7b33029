import { parseJson, post, retryAfterMs } from '../delivery/http-call.ts';
import { asObject } from '../object.ts';
import { clipLine, hideUrlCredentials } from '../text.ts';
import type { Logger } from '../log.ts';
import type { OutboxEntry, OutboxUpdate } from '../store/outbox.ts';
import type { Store } from '../store/store.ts';
import type { Config } from '../config/types.ts';
import { retryOutbox, type RetryOutcome, type RetryRequest } from '../store/outbox-retry.ts';

// Forward mode's running part, in one place: the loop that sends the outbox upstream in acceptance
// order (the Forwarder, the outbox's client) and what `serve` starts, reconfigures and stops.

/** Where forward mode sends: `hooks.forward`. */
export interface ForwardTarget {
  url: string;
  token: string;
  maxAgeSeconds: number;
}

export interface ForwarderOptions {
  store: Pick<Store, 'outboxHead' | 'commit'>;
  target: ForwardTarget;
  log: Logger;
  fetch?: typeof fetch;
  now?: () => number;
  random?: () => number;
  /** The first backoff after a failure; each next one doubles (full jitter) up to `maxDelayMs`. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** How long one POST may take. */
  timeoutMs?: number;
}

/** What one attempt came to, before it is written down. */
type Outcome =
  | { kind: 'sent'; upstreamRunId?: string }
  | { kind: 'retry'; error: string; retryAfterMs?: number }
  | { kind: 'dead'; error: string };

const MAX_ERROR = 300;

/**
 * Sends forward mode's outbox to the upstream gateway in acceptance order, one at a time, /wake
 * and /agent alike: wakes are events in a session, so none may overtake another. The oldest
 * pending entry goes first; while it waits for a retry the ones behind it wait too, until it is
 * sent or dead (at most `maxAgeSeconds`). Each entry carries `Idempotency-Key: <entry id>`, so a
 * repeat after a crash is dropped upstream. Every outcome is committed before the next entry
 * goes, so retries, backoff and give-ups survive restarts.
 */
export class Forwarder {
  #o: ForwarderOptions;
  readonly #now: () => number;
  #running: Promise<void> | null = null;
  #again = false;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #stopping = new AbortController();

  constructor(options: ForwarderOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** Takes a reloaded `hooks.forward`: the next attempt uses it. */
  reconfigure(target: ForwardTarget): void {
    this.#o = { ...this.#o, target };
  }

  /** Sends what is due now; later entries are picked up when their time comes. */
  kick(): void {
    if (this.#stopping.signal.aborted) return;
    if (this.#running !== null) {
      this.#again = true;
      return;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        await this.#drain().catch((error: unknown) => this.#o.log.error('forward failed unexpectedly', { error: String(error) }));
      } while (this.#again && !this.#stopping.signal.aborted);
    })().finally(() => {
      this.#running = null;
      this.#schedule();
    });
  }

  /** Stops: a POST in flight is abandoned (the entry stays pending and goes again after a restart). */
  async stop(): Promise<void> {
    this.#stopping.abort();
    if (this.#timer !== null) clearTimeout(this.#timer);
    await this.#running;
  }

  // The head goes while it is due; one that must wait stops the queue until its time.
  async #drain(): Promise<void> {
    while (!this.#stopping.signal.aborted) {
      const head = this.#o.store.outboxHead();
      if (head === null || _due(head) > this.#now()) return;
      await this.#attempt(head);
      if (this.#o.store.outboxHead()?.id === head.id) return;
    }
  }

  async #attempt(entry: OutboxEntry): Promise<void> {
    const { store, log, target } = this.#o;
    const deadline = Date.parse(entry.retriedAt ?? entry.acceptedAt) + target.maxAgeSeconds * 1000;
    if (this.#now() >= deadline) return this.#record(entry, { kind: 'dead', error: `not accepted upstream within ${target.maxAgeSeconds} s${entry.lastError ? ` (last: ${entry.lastError})` : ''}` }, entry.attempts);
    const attempts = entry.attempts + 1;
    const outcome = await this.#send(entry);
    if (this.#stopping.signal.aborted && outcome.kind !== 'sent') return;
    if (outcome.kind === 'retry') {
      const backoff = Math.min(this.#o.maxDelayMs ?? 300_000, (this.#o.baseDelayMs ?? 1_000) * 2 ** (attempts - 1)) * (this.#o.random ?? Math.random)();
      const next = Math.min(deadline, this.#now() + (outcome.retryAfterMs ?? backoff));
      const update: OutboxUpdate = { id: entry.id, attempts, lastError: outcome.error, nextAttemptAt: new Date(next).toISOString() };
      await store.commit({ outboxUpdates: [update] });
      log.warn('forward will retry', { outbox: entry.id, target: entry.target, attempts, error: outcome.error });
      return;
    }
    return this.#record(entry, outcome, attempts);
  }

  async #record(entry: OutboxEntry, outcome: Exclude<Outcome, { kind: 'retry' }>, attempts: number): Promise<void> {
    const at = new Date(this.#now()).toISOString();
    const update: OutboxUpdate =
      outcome.kind === 'sent'
        ? { id: entry.id, attempts, state: 'sent', sentAt: at, ...(outcome.upstreamRunId === undefined ? {} : { upstreamRunId: outcome.upstreamRunId }) }
        : { id: entry.id, attempts, state: 'dead', deadAt: at, lastError: outcome.error };
    await this.#o.store.commit({ outboxUpdates: [update] });
    if (outcome.kind === 'sent') this.#o.log.info('forward sent', { outbox: entry.id, target: entry.target, attempts, ...(outcome.upstreamRunId === undefined ? {} : { upstreamRunId: outcome.upstreamRunId }) });
    else this.#o.log.error('forward dead', { outbox: entry.id, target: entry.target, attempts, error: outcome.error });
  }

  async #send(entry: OutboxEntry): Promise<Outcome> {
    const { target } = this.#o;
    const signal = AbortSignal.any([this.#stopping.signal, AbortSignal.timeout(this.#o.timeoutMs ?? 30_000)]);
    const reply = await post(`${target.url}/${entry.target}`, JSON.stringify(entry.body), {
      fetch: this.#o.fetch ?? fetch,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${target.token}`, 'idempotency-key': entry.id },
      signal,
    });
    if (!reply.ok) return { kind: 'retry', error: `no answer: ${clipLine(reply.message, MAX_ERROR)}` };
    const body = asObject(reply.json ?? parseJson(reply.text));
    if (reply.status >= 200 && reply.status < 300) {
      const runId = body?.['runId'];
      return typeof runId === 'string' && runId !== '' ? { kind: 'sent', upstreamRunId: clipLine(runId, 200) } : { kind: 'sent' };
    }
    // Never followed (the message and the token would go to another address); not retried either:
    // the same URL will redirect again, and `outbox retry` sends it once hooks.forward.url is fixed.
    if (reply.status >= 300 && reply.status < 400) {
      const to = reply.headers.get('location');
      return { kind: 'dead', error: `upstream answered ${reply.status}, a redirect${to === null ? '' : ` to ${clipLine(_place(to, target.url), MAX_ERROR)}`}, which is not followed: set hooks.forward.url to the address that answers` };
    }
    // The upstream's own words (its JSON `error`, else its text), never our token.
    const said = typeof body?.['error'] === 'string' ? (body['error'] as string) : reply.text;
    const error = `upstream answered ${reply.status}${said.trim() === '' ? '' : `: ${clipLine(hideUrlCredentials(said.split(target.token).join('[redacted]')), MAX_ERROR)}`}`;
    if (reply.status === 429 || reply.status >= 500) {
      const wait = retryAfterMs(reply.headers, this.#now());
      return wait === undefined ? { kind: 'retry', error } : { kind: 'retry', error, retryAfterMs: wait };
    }
    return { kind: 'dead', error };
  }

  // One timer, for the head of the queue; kicks also come from new requests.
  #schedule(): void {
    if (this.#stopping.signal.aborted) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    const head = this.#o.store.outboxHead();
    if (head === null) return;
    const delay = Math.max(0, _due(head) - this.#now());
    this.#timer = setTimeout(() => this.kick(), Math.min(delay, 2 ** 31 - 1));
    this.#timer.unref?.();
  }
}

// Where a redirect pointed, without what could be secret in it (user:password, the query).
function _place(location: string, base: string): string {
  if (!URL.canParse(location, base)) return '(an address that is not a URL)';
  const url = new URL(location, base);
  return `${url.origin}${url.pathname}`;
}

function _due(entry: OutboxEntry): number {
  return entry.nextAttemptAt === undefined ? 0 : Date.parse(entry.nextAttemptAt);
}

/** Forward mode's sender, running with the server; `null` when `hooks.forward` is not set. */
export interface ForwardMode {
  kick(): void;
  reconfigure(config: Config): void;
  /** `outbox retry` over the control channel: the entries become pending and are sent now. */
  retry(request: RetryRequest): Promise<RetryOutcome>;
  stop(): Promise<void>;
}

/**
 * Starts forward mode for `serve`: the outbox is sent from the start (what a previous process
 * left pending goes first). `outbox retry` reaches it over the control channel, so the server
 * stays the journal's only writer. `serve` imports this file only in forward mode.
 */
export function startForward(config: Config, store: Store, log: Logger): ForwardMode | null {
  if (config.hooks.forward === null) return null;
  const forwarder = new Forwarder({ store, target: config.hooks.forward, log });
  forwarder.kick();
  return {
    kick: () => forwarder.kick(),
    reconfigure: (next) => {
      if (next.hooks.forward !== null) forwarder.reconfigure(next.hooks.forward);
    },
    retry: async (request) => {
      const outcome = await retryOutbox(store, request);
      if (outcome.retried.length > 0) log.info('outbox retry', { entries: outcome.retried.length });
      forwarder.kick();
      return outcome;
    },
    stop: () => forwarder.stop(),
  };
}
