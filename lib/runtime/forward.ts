// Forward mode's running part, in one place: the loop that sends the outbox upstream in acceptance
// order (the Forwarder, the outbox's client) and what `serve` starts, reconfigures and stops.

import { parseJson, post, retryAfterMs } from '../delivery/http-call.ts';
import { asObject } from '../object.ts';
import { clipLine, hideUrlCredentials } from '../text.ts';
import type { Logger } from '../log.ts';
import type { OutboxEntry, OutboxUpdate } from '../store/journal/outbox.ts';
import type { Store } from '../store/journal/store.ts';
import type { Config } from '../config/types.ts';
import { retryOutbox, type RetryOutcome, type RetryRequest } from '../store/journal/outbox-retry.ts';
import { randomHex } from '../random.ts';
import { mergeable, mergeTexts } from './forward-merge.ts';
import { type WakeTarget, wakeTarget, WakeWindows } from './forward-window.ts';

/** Where forward mode sends: `hooks.forward`. */
export interface ForwardTarget {
  url: string;
  token: string;
  maxAgeSeconds: number;
  /** At most this many wakes go to one upstream agent in a heartbeat window (forward-window.ts). */
  maxPendingWakes: number;
  /** The upstream's agents, its default first (hooks.forward.agents): a wake naming none goes to the first. */
  agents?: readonly string[] | null;
}

export interface ForwarderOptions {
  store: Pick<Store, 'outboxHead' | 'outbox' | 'commit'> & Partial<Pick<Store, 'outboxWaits'>>;
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
  /** A heartbeat window's length (forward-window.ts). */
  windowMs?: number;
  /** The random id that frames a merged wake (forward-merge.ts). */
  frameId?: () => string;
  /** How long the queue waits after an attempt whose outcome could not be written (default 5 s). */
  failureHoldMs?: number;
}

/** What one attempt came to, before it is written down. */
type Outcome =
  | { kind: 'sent'; upstreamRunId?: string }
  | { kind: 'retry'; error: string; retryAfterMs?: number }
  | { kind: 'dead'; error: string; refusedField?: string };

/** One POST: the head entry, and the wakes behind it that go merged with it (none for a single entry). */
interface _Post {
  entries: readonly OutboxEntry[];
  body: Record<string, unknown>;
}

const MAX_ERROR = 300;

/**
 * Sends forward mode's outbox to the upstream gateway in acceptance order, one at a time, /wake
 * and /agent alike: wakes are events in a session, so none may overtake another. The oldest
 * pending entry goes first; while it waits for a retry the ones behind it wait too, until it is
 * sent or dead (at most `maxAgeSeconds`). Each entry carries `Idempotency-Key: <entry id>`: the
 * upstream answers a repeated /agent with the first runId and starts nothing (for a few minutes
 * after that run ends, in memory); it does not key /wake, so a wake sent again after a crash is a
 * second event there. Every outcome is committed before the next entry goes, so retries, backoff
 * and give-ups survive restarts.
 *
 * Wakes to one upstream agent go at most `maxPendingWakes` per heartbeat window, its heartbeat
 * asked for one of its sessions (forward-window.ts): a session's last wake of a window carries
 * the wakes queued right behind it for that session, merged (forward-merge.ts), and a wake the
 * window cannot take waits, with the queue, for the next window. Merged entries stay pending until
 * the merged wake is accepted, and are then recorded sent together.
 */
export class Forwarder {
  #o: ForwarderOptions;
  readonly #now: () => number;
  readonly #windows: WakeWindows;
  #running: Promise<void> | null = null;
  #again = false;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #stopping = new AbortController();
  // Until when the queue waits after an attempt whose outcome the journal did not take: its entry
  // is still pending on disk, and sending it again at once would repeat it upstream in a tight loop.
  #heldUntil = 0;

  constructor(options: ForwarderOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#windows = new WakeWindows(options.target.maxPendingWakes, options.windowMs);
    this.#windows.seed(options.store.outbox(), this.#now(), (body) => this.#target(body));
  }

  /** Takes a reloaded `hooks.forward`: the next attempt uses it. */
  reconfigure(target: ForwardTarget): void {
    this.#o = { ...this.#o, target };
    this.#windows.max = target.maxPendingWakes;
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
        await this.#drain().catch((error: unknown) => {
          this.#heldUntil = this.#now() + (this.#o.failureHoldMs ?? 5_000);
          this.#o.log.error('forward failed unexpectedly', { error: String(error) });
        });
      } while (this.#again && !this.#stopping.signal.aborted);
    })().finally(() => {
      this.#running = null;
      this.#schedule();
    });
  }

  /** When the head of the queue may go (`null`: nothing pending): later than now while it waits for a retry or a window. */
  dueAt(): number | null {
    const head = this.#o.store.outboxHead();
    return head === null ? null : Math.max(this.#due(head), this.#heldUntil);
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
      if (head === null || Math.max(this.#due(head), this.#heldUntil) > this.#now()) return;
      await this.#attempt(head);
      if (this.#o.store.outboxHead()?.id === head.id) return;
    }
  }

  // Where a wake goes upstream: its agent (named, else the upstream's default) and session.
  #target(body: Readonly<Record<string, unknown>>): WakeTarget {
    return wakeTarget(body, this.#o.target.agents?.[0] ?? null);
  }

  // When the head may go: its retry time, and for a wake its agent's window.
  #due(head: OutboxEntry): number {
    const due = _due(head);
    if (head.target !== 'wake') return due;
    const target = this.#target(head.body);
    const now = this.#now();
    return this.#windows.admit(target, _asks(head.body), now) !== 'wait'
      ? due
      : Math.max(due, this.#windows.reopensAt(target.agent, now));
  }

  async #attempt(entry: OutboxEntry): Promise<void> {
    const { store, log, target } = this.#o;
    const deadline = Date.parse(entry.retriedAt ?? entry.acceptedAt) + target.maxAgeSeconds * 1000;
    if (this.#now() >= deadline) {
      return this.#record([entry], {
        kind: 'dead',
        error: `not accepted upstream within ${target.maxAgeSeconds} s${
          entry.lastError ? ` (last: ${entry.lastError})` : ''
        }`,
      }, entry.attempts);
    }
    const attempts = entry.attempts + 1;
    const post = this.#post(entry);
    const outcome = await this.#send(entry, post.body);
    if (this.#stopping.signal.aborted && outcome.kind !== 'sent') return;
    if (outcome.kind === 'retry') {
      const backoff = Math.min(this.#o.maxDelayMs ?? 300_000, (this.#o.baseDelayMs ?? 1_000) * 2 ** (attempts - 1)) *
        (this.#o.random ?? Math.random)();
      const next = Math.min(deadline, this.#now() + (outcome.retryAfterMs ?? backoff));
      const update: OutboxUpdate = {
        id: entry.id,
        attempts,
        lastError: outcome.error,
        nextAttemptAt: new Date(next).toISOString(),
      };
      await store.commit({ outboxUpdates: [update] });
      log.warn('forward will retry', { outbox: entry.id, target: entry.target, attempts, error: outcome.error });
      return;
    }
    if (outcome.kind === 'sent' && entry.target === 'wake') {
      this.#windows.sent(this.#target(entry.body), this.#now(), _asks(post.body));
    }
    return this.#record(post.entries, outcome, attempts);
  }

  /**
   * What the head's POST carries: the head as accepted, or, when it is the last wake its session's
   * window takes, the wakes queued right behind it for the same session merged with it (under
   * 256 KiB), asking for a heartbeat now. The queue's order holds: only consecutive wakes merge,
   * so each session's texts go in a wake of that session.
   */
  #post(head: OutboxEntry): _Post {
    if (head.target !== 'wake') return { entries: [head], body: head.body };
    const target = this.#target(head.body);
    if (this.#windows.admit(target, _asks(head.body), this.#now()) !== 'last') {
      return { entries: [head], body: head.body };
    }
    const run: OutboxEntry[] = [];
    let reached = false;
    for (const entry of this.#o.store.outbox()) {
      if (entry.id === head.id) reached = true;
      // A paused hook's wake waits; the ones behind it, of other hooks, go on without it.
      if (!reached || entry.state !== 'pending' || this.#o.store.outboxWaits?.(entry) === true) continue;
      if (
        entry.target !== 'wake' || this.#target(entry.body).session !== target.session ||
        typeof entry.body['text'] !== 'string'
      ) break;
      run.push(entry);
    }
    const texts = run.map((e) => e.body['text'] as string);
    const id = (this.#o.frameId ?? (() => randomHex(12)))();
    const fits = run.length < 2
      ? 1
      : mergeable(texts, Buffer.byteLength(JSON.stringify({ ...head.body, text: '', mode: 'now' })), id.length);
    if (fits < 2) return { entries: [head], body: { ...head.body, mode: 'now' } };
    return {
      entries: run.slice(0, fits),
      body: { ...head.body, text: mergeTexts(texts.slice(0, fits), id), mode: 'now' },
    };
  }

  async #record(
    entries: readonly OutboxEntry[],
    outcome: Exclude<Outcome, { kind: 'retry' }>,
    attempts: number,
  ): Promise<void> {
    const at = new Date(this.#now()).toISOString();
    const [head] = entries as [OutboxEntry];
    const batch = entries.length > 1 ? { batch: head.id } : {};
    const updates = entries.map((entry): OutboxUpdate => {
      const tried = entry === head ? attempts : entry.attempts + 1;
      if (outcome.kind === 'sent') {
        return {
          id: entry.id,
          attempts: tried,
          state: 'sent',
          sentAt: at,
          ...batch,
          ...(outcome.upstreamRunId === undefined ? {} : { upstreamRunId: outcome.upstreamRunId }),
        };
      }
      return {
        id: entry.id,
        attempts: tried,
        state: 'dead',
        deadAt: at,
        lastError: outcome.error,
        ...batch,
        ...(outcome.refusedField === undefined ? {} : { refusedField: outcome.refusedField }),
      };
    });
    await this.#o.store.commit({ outboxUpdates: updates });
    const merged = entries.length > 1 ? { merged: entries.length } : {};
    if (outcome.kind === 'sent') {
      this.#o.log.info('forward sent', {
        outbox: head.id,
        target: head.target,
        attempts,
        ...merged,
        ...(outcome.upstreamRunId === undefined ? {} : { upstreamRunId: outcome.upstreamRunId }),
      });
    } else {this.#o.log.error('forward dead', {
        outbox: head.id,
        target: head.target,
        attempts,
        ...merged,
        error: outcome.error,
        ...(outcome.refusedField === undefined ? {} : { refusedField: outcome.refusedField }),
      });}
  }

  async #send(entry: OutboxEntry, sent: Record<string, unknown>): Promise<Outcome> {
    const { target } = this.#o;
    const signal = AbortSignal.any([this.#stopping.signal, AbortSignal.timeout(this.#o.timeoutMs ?? 30_000)]);
    const reply = await post(`${target.url}/${entry.target}`, JSON.stringify(sent), {
      fetch: this.#o.fetch ?? fetch,
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${target.token}`,
        'idempotency-key': entry.id,
      },
      signal,
    });
    if (!reply.ok) return { kind: 'retry', error: `no answer: ${clipLine(reply.message, MAX_ERROR)}` };
    const body = asObject(reply.json ?? parseJson(reply.text));
    if (reply.status >= 200 && reply.status < 300) {
      const runId = body?.['runId'];
      return typeof runId === 'string' && runId !== ''
        ? { kind: 'sent', upstreamRunId: clipLine(runId, 200) }
        : { kind: 'sent' };
    }
    // Never followed (the message and the token would go to another address); not retried either:
    // the same URL will redirect again, and `outbox retry` sends it once hooks.forward.url is fixed.
    if (reply.status >= 300 && reply.status < 400) {
      const to = reply.headers.get('location');
      return {
        kind: 'dead',
        error: `upstream answered ${reply.status}, a redirect${
          to === null ? '' : ` to ${clipLine(_place(to, target.url), MAX_ERROR)}`
        }, which is not followed: set hooks.forward.url to the address that answers`,
      };
    }
    // The upstream's own words (its JSON `error`, else its text), never our token.
    const said = typeof body?.['error'] === 'string' ? (body['error'] as string) : reply.text;
    const error = `upstream answered ${reply.status}${
      said.trim() === ''
        ? ''
        : `: ${clipLine(hideUrlCredentials(said.split(target.token).join('[redacted]')), MAX_ERROR)}`
    }`;
    if (reply.status === 429 || reply.status >= 500) {
      const wait = retryAfterMs(reply.headers, this.#now());
      return wait === undefined ? { kind: 'retry', error } : { kind: 'retry', error, retryAfterMs: wait };
    }
    // Anything accepted here that the upstream refuses is a defect here: the entry names the field it refused.
    const field = refusedField(said);
    return field === undefined ? { kind: 'dead', error } : { kind: 'dead', error, refusedField: field };
  }

  // One timer, for the head of the queue; kicks also come from new requests.
  #schedule(): void {
    if (this.#stopping.signal.aborted) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    const head = this.#o.store.outboxHead();
    if (head === null) return;
    const delay = Math.max(0, Math.max(this.#due(head), this.#heldUntil) - this.#now());
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

// The payload fields OpenClaw's /wake and /agent take, as its refusals name them.
const _FIELDS = new Set([
  'text',
  'mode',
  'agentId',
  'sessionKey',
  'message',
  'name',
  'wakeMode',
  'sessionMode',
  'deliver',
  'channel',
  'to',
  'accountId',
  'model',
  'thinking',
  'timeoutSeconds',
  'idempotencyKey',
]);

/**
 * The payload field an upstream refusal names: OpenClaw's 400s begin with it ("channel and to must
 * be set together…", "sessionKey must start with…", "text required"), or with "unknown" before it
 * ("unknown agentId …"). Undefined when the words name none (401 "Unauthorized").
 */
export function refusedField(said: string): string | undefined {
  const words = said.trim().split(/[^A-Za-z]+/);
  const first = words[0] === 'unknown' ? words[1] : words[0];
  return first !== undefined && _FIELDS.has(first) ? first : undefined;
}

// A wake sent with mode "now" asks the upstream for a heartbeat at once.
function _asks(body: Readonly<Record<string, unknown>>): boolean {
  return body['mode'] !== 'next-heartbeat';
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
