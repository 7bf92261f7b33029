// The completion callbacks' sender: a queue per receiver origin, each sent in the order its runs settled,
// signed afresh at each attempt, retried with backoff and Retry-After until its maximum age.

import type { Config } from '../config/types.ts';
import type { Logger } from '../log.ts';
import type { Alerts } from '../model/alerts.ts';
import type { CallbackEntry, CallbackUpdate } from '../store/journal/callbacks.ts';
import type { Store } from '../store/journal/store.ts';
import type { WebhookAnswer } from '../delivery/signed-webhook.ts';
import { clipLine } from '../text.ts';

export interface CallbackSenderOptions {
  store: Pick<Store, 'callbackHeads' | 'commit'>;
  /** Where each entry's secrets are read, at each attempt (a reload's rotation applies at once). */
  config: Config;
  log: Logger;
  alerts?: Alerts;
  fetch?: typeof fetch;
  now?: () => number;
  random?: () => number;
  /** The first backoff after a failure; each next one doubles (full jitter) up to `maxDelayMs`. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** How long one POST may take. */
  timeoutMs?: number;
}

const MAX_ERROR = 300;

/** How long an origin waits after an attempt whose outcome could not be written. */
const HOLD_MS = 5_000;

/**
 * Sends the journal's pending callbacks: per origin (`scheme://host:port`) one POST at a time, the
 * oldest first, the others of that origin waiting behind it until it is sent or dead; origins never
 * wait for one another, nor for forward mode's outbox. Every outcome is committed before the next
 * entry of its origin goes, so retries and give-ups survive restarts; the `webhook-id` is the same
 * on every attempt, so a POST that arrived before a crash and goes again is a repeat the receiver drops.
 */
export class CallbackSender {
  #o: CallbackSenderOptions;
  readonly #now: () => number;
  readonly #inflight = new Map<string, Promise<void>>();
  // Origins whose last attempt could not be recorded (the journal failed): held back a while, so the
  // same POST is not made again at once, and again, while the disk is full.
  readonly #held = new Map<string, number>();
  #timer: ReturnType<typeof setTimeout> | null = null;
  readonly #stopping = new AbortController();

  constructor(options: CallbackSenderOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** Takes a reloaded config: the next attempt signs with its secrets. */
  reconfigure(config: Config): void {
    this.#o = { ...this.#o, config };
  }

  /** Sends each origin's head that is due and not already on its way; the others are picked up when their time comes. */
  kick(): void {
    if (this.#stopping.signal.aborted) return;
    for (const head of this.#o.store.callbackHeads()) {
      if (this.#inflight.has(head.origin) || this.#due(head) > this.#now()) continue;
      this.#held.delete(head.origin);
      const work = this.#attempt(head)
        .catch((error: unknown) => {
          this.#held.set(head.origin, this.#now() + HOLD_MS);
          this.#o.log.error('callback failed unexpectedly', { ..._fields(head), error: String(error) });
        })
        .finally(() => {
          this.#inflight.delete(head.origin);
          this.kick();
        });
      this.#inflight.set(head.origin, work);
    }
    this.#schedule();
  }

  /** Stops: a POST in flight is abandoned (the entry stays pending and goes again after a restart). */
  async stop(): Promise<void> {
    this.#stopping.abort();
    if (this.#timer !== null) clearTimeout(this.#timer);
    await Promise.allSettled([...this.#inflight.values()]);
  }

  async #attempt(entry: CallbackEntry): Promise<void> {
    const deadline = Date.parse(entry.retriedAt ?? entry.acceptedAt) + entry.maxAgeSeconds * 1000;
    if (this.#now() >= deadline) {
      const last = entry.lastError === undefined ? '' : ` (last: ${entry.lastError})`;
      return this.#dead(entry, entry.attempts, `not accepted within ${entry.maxAgeSeconds} s${last}`);
    }
    const secrets = _secrets(this.#o.config, entry.mapping);
    if (secrets === null) {
      const where = entry.mapping === undefined ? 'hooks.onComplete' : `mapping ${entry.mapping}'s onComplete`;
      return this.#dead(entry, entry.attempts, `nothing to sign it with: ${where} is no longer configured`);
    }
    // Imported at the first callback: a server that sends none never loads the outgoing call.
    const { postWebhook, webhookHeaders } = await import('../delivery/signed-webhook.ts');
    const body = JSON.stringify(entry.body);
    const now = this.#now();
    const signal = AbortSignal.any([this.#stopping.signal, AbortSignal.timeout(this.#o.timeoutMs ?? 15_000)]);
    const answer = await postWebhook(entry.url, body, webhookHeaders(secrets, entry.id, Math.floor(now / 1000), body), {
      fetch: this.#o.fetch ?? fetch,
      signal,
      now,
    });
    const sent = answer.ok && answer.status >= 200 && answer.status < 300;
    // A failure during a stop may be the stop itself: nothing is recorded, the next process sends it.
    if (this.#stopping.signal.aborted && !sent) return;
    const attempts = entry.attempts + 1;
    const status = answer.ok ? { status: answer.status } : {};
    if (sent) {
      await this.#commit({ id: entry.id, state: 'sent', attempts, sentAt: _iso(this.#now()), ...status });
      this.#o.log.info('callback sent', { ..._fields(entry), attempts, ...status });
      return;
    }
    const error = _failure(answer, entry.url);
    const backoff = Math.min(this.#o.maxDelayMs ?? 300_000, (this.#o.baseDelayMs ?? 1_000) * 2 ** (attempts - 1)) *
      (this.#o.random ?? Math.random)();
    const wait = answer.ok ? answer.retryAfterMs : undefined;
    const next = Math.min(deadline, this.#now() + (wait ?? backoff));
    await this.#commit({ id: entry.id, attempts, lastError: error, nextAttemptAt: _iso(next), ...status });
    this.#o.log.warn('callback will retry', { ..._fields(entry), attempts, error });
  }

  async #dead(entry: CallbackEntry, attempts: number, error: string): Promise<void> {
    await this.#commit({ id: entry.id, state: 'dead', attempts, deadAt: _iso(this.#now()), lastError: error });
    this.#o.log.error('callback dead', { ..._fields(entry), attempts, error });
    this.#o.alerts?.note({
      kind: 'outbox-dead',
      hook: entry.hook,
      code: entry.status === undefined ? 'callback unanswered' : `callback HTTP ${entry.status}`,
    });
  }

  #commit(update: CallbackUpdate): Promise<unknown> {
    return this.#o.store.commit({ callbackUpdates: [update] });
  }

  // When an origin's head may go: its retry time, or later while the origin is held back.
  #due(head: CallbackEntry): number {
    return Math.max(_due(head), this.#held.get(head.origin) ?? 0);
  }

  // One timer, for the earliest head that waits; kicks also come from runs that settle.
  #schedule(): void {
    if (this.#stopping.signal.aborted) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    const waiting = this.#o.store.callbackHeads().filter((head) => !this.#inflight.has(head.origin));
    if (waiting.length === 0) return;
    const delay = Math.max(0, Math.min(...waiting.map((head) => this.#due(head))) - this.#now());
    this.#timer = setTimeout(() => this.kick(), Math.min(delay, 2 ** 31 - 1));
    this.#timer.unref?.();
  }
}

// The secrets an entry is signed with now: its mapping's onComplete, else hooks.onComplete; null when gone.
function _secrets(config: Config, mapping: string | undefined): readonly string[] | null {
  const onComplete = mapping === undefined
    ? config.hooks.onComplete
    : config.hooks.mappings.find((m) => m.id === mapping)?.onComplete;
  return onComplete?.secrets ?? null;
}

// Why an attempt failed, in words that quote no URL (its query may hold a token) and no secret.
function _failure(answer: WebhookAnswer, url: string): string {
  if (!answer.ok) return `no answer: ${clipLine(_withoutUrls(answer.message), MAX_ERROR)}`;
  if (answer.status >= 300 && answer.status < 400) {
    const to = answer.location === null ? '' : ` to ${_place(answer.location, url)}`;
    return `receiver answered ${answer.status}, a redirect${to}, which is not followed`;
  }
  const said = answer.text.trim() === '' ? '' : `: ${clipLine(answer.text, MAX_ERROR)}`;
  return `receiver answered ${answer.status}${said}`;
}

// A fetch error with each URL it quotes cut to its origin, as log lines and the listing name a
// callback: Deno's errors name the URL whole ("error sending request for url (http://…?token=…):"),
// Node's one with a user:password; a query or a path (Slack's, Discord's) may hold a token.
function _withoutUrls(message: string): string {
  return message.replace(/\bhttps?:\/\/[^\s"'<>]+/gi, (quoted) => {
    // The punctuation the URL is quoted in stays: "(url):" keeps its "):".
    let end = quoted.length;
    while (end > 0 && ')]:,.;'.includes(quoted[end - 1]!)) end--;
    const url = quoted.slice(0, end);
    return `${URL.canParse(url) ? new URL(url).origin : '(a URL)'}${quoted.slice(end)}`;
  });
}

// Where a redirect pointed, without what could be secret in it (user:password, the query).
function _place(location: string, base?: string): string {
  // A Location is often relative ("/moved"): it is read against the URL that answered it.
  if (!URL.canParse(location, base)) return '(an address that is not a URL)';
  const url = new URL(location, base);
  return clipLine(`${url.origin}${url.pathname}`, MAX_ERROR);
}

// What a log line says of an entry: never its URL (a query may hold a token), only its origin.
function _fields(entry: CallbackEntry): Record<string, string> {
  return { callback: entry.id, runId: entry.runId, hook: entry.hook, origin: entry.origin };
}

function _due(entry: CallbackEntry): number {
  return entry.nextAttemptAt === undefined ? 0 : Date.parse(entry.nextAttemptAt);
}

function _iso(ms: number): string {
  return new Date(ms).toISOString();
}
