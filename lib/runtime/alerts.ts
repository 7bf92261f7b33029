// The owner's alerts: trouble the edge and the runtime note is counted per kind and hook, and a
// short message goes to the configured channel when a kind starts (signature failures: when
// `count` arrive within `minutes`), at most one per throttle window while it goes on (counting what
// came since; signature failures go on while their rate holds at the window's end), and one
// "recovered" once a whole window passed with none. Messages name the hook, the
// count, the codes and the first and last time, never request text. Nothing is journaled: an
// alert is a message about now, and a restart starts counting afresh. Alerts never alert: a
// message that cannot be sent is logged and nothing else.

import type { Deliver } from '../delivery/adapter.ts';
import type { Logger } from '../log.ts';
import type { AlertKind, AlertNote, Alerts, AlertsConfig } from '../model/alerts.ts';
import type { DeliveryOutcome } from '../model/records.ts';
import { clipLine } from '../text.ts';
import { plainLabel } from '../untrusted/label.ts';
import { summarise } from './context.ts';

/** What an alerter is built with. */
export interface AlerterOptions {
  /** `null`: alerts are off, and nothing noted is counted. */
  config: AlertsConfig | null;
  deliver: Deliver;
  log: Logger;
  now?: () => number;
  /** Calls `fn` once after `ms`; returns what cancels it. Tests hand in their own. */
  schedule?: (ms: number, fn: () => void) => () => void;
}

/** What each kind is called in a message. */
export const ALERT_WORDS: { readonly [K in AlertKind]: string } = {
  'signature-failures': 'signature failures',
  'run-failures': 'failed runs',
  'delivery-failures': 'failed deliveries',
  'outbox-dead': 'dead outbox entries',
  storage: 'storage write failures',
  backlog: 'requests refused at a bound',
  budget: 'daily budgets reached',
};

// At most this many kinds and hooks are followed at once: a hook name may be the request's.
const _MAX_FOLLOWED = 1_000;
// Times kept per kind and hook, enough for any threshold the config allows to be judged.
const _MAX_TIMES = 10_000;

// One kind on one hook: what arrived since the last alert, and the window that alert opened.
interface _Followed {
  kind: AlertKind;
  hook: string;
  /** When each occurrence since the last alert arrived (the newest `_MAX_TIMES`). */
  times: number[];
  count: number;
  codes: string[];
  /** The last alert's window is open until it ends; `null` when no alert was sent. */
  cancel: (() => void) | null;
  last: number;
}

/** Counts noted trouble and sends the owner alerts, throttled per kind and hook. */
export class Alerter implements Alerts {
  #o: AlerterOptions;
  readonly #now: () => number;
  readonly #schedule: (ms: number, fn: () => void) => () => void;
  readonly #followed = new Map<string, _Followed>();
  readonly #sending = new Set<Promise<void>>();
  readonly #stopping = new AbortController();

  constructor(options: AlerterOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#schedule = options.schedule ?? _timer;
  }

  /** Takes a reloaded `alerts` and delivery; what is being counted goes on. */
  reconfigure(config: AlertsConfig | null, deliver: Deliver): void {
    this.#o = { ...this.#o, config, deliver };
    if (config !== null) return;
    for (const followed of this.#followed.values()) followed.cancel?.();
    this.#followed.clear();
  }

  /** Notes one occurrence; sends an alert when its kind on its hook starts (or its threshold is reached). */
  note(note: AlertNote): void {
    const { config } = this.#o;
    if (this.#stopping.signal.aborted || config === null || !config.on.includes(note.kind)) return;
    const key = `${note.kind}\n${note.hook}`;
    let followed = this.#followed.get(key);
    if (followed === undefined) {
      if (this.#followed.size >= _MAX_FOLLOWED) return;
      followed = { kind: note.kind, hook: note.hook, times: [], count: 0, codes: [], cancel: null, last: 0 };
      this.#followed.set(key, followed);
    }
    const now = this.#now();
    followed.times.push(now);
    if (followed.times.length > _MAX_TIMES) followed.times.shift();
    followed.count++;
    followed.last = now;
    if (!followed.codes.includes(note.code) && followed.codes.length < 3) followed.codes.push(note.code);
    if (followed.cancel !== null) return; // within the last alert's window: counted, said at its end
    if (this.#reached(followed, now)) this.#alert(key, followed, now);
    else this.#forgetOld(key, followed, now);
  }

  /** Sends one test message to the alerts' channel and recipient, and says how it went. */
  test(): Promise<DeliveryOutcome> {
    return this.#deliver('hooks-ingress alert test: alerts reach this chat.');
  }

  #config(): AlertsConfig {
    // Only followed kinds reach here, and following stops when alerts are turned off.
    return this.#o.config!;
  }

  /** Ends every window and waits for the messages under way. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    for (const followed of this.#followed.values()) followed.cancel?.();
    this.#followed.clear();
    await Promise.allSettled([...this.#sending]);
  }

  // Signature failures need `count` within `minutes`; any other kind starts with one.
  #reached(followed: _Followed, now: number): boolean {
    if (followed.kind !== 'signature-failures') return followed.count > 0;
    const { count, minutes } = this.#config().signatureFailures;
    const since = now - minutes * 60_000;
    return followed.times.filter((t) => t > since).length >= count;
  }

  // Below the threshold, occurrences older than its span no longer count.
  #forgetOld(key: string, followed: _Followed, now: number): void {
    const since = now - this.#config().signatureFailures.minutes * 60_000;
    const kept = followed.times.filter((t) => t > since);
    followed.count -= followed.times.length - kept.length;
    followed.times = kept;
    if (followed.count === 0) this.#followed.delete(key);
  }

  #alert(key: string, followed: _Followed, now: number): void {
    const first = followed.times[0] ?? now;
    const text = `hooks-ingress alert: ${ALERT_WORDS[followed.kind]} on ${_where(followed.hook)}: ${followed.count}` +
      ` (${followed.codes.join(', ')}), first ${_iso(first)}, last ${_iso(followed.last)}`;
    this.#send(followed, text, followed.count);
    followed.times = [];
    followed.count = 0;
    followed.codes = [];
    followed.cancel = this.#schedule(this.#config().throttleSeconds * 1000, () => this.#windowEnd(key, followed));
  }

  // A window ends: what came during it is alerted (once its threshold holds), or a quiet window says recovered.
  #windowEnd(key: string, followed: _Followed): void {
    followed.cancel = null;
    if (this.#stopping.signal.aborted) return;
    const now = this.#now();
    if (followed.count === 0) {
      this.#followed.delete(key);
      const quiet = this.#config().throttleSeconds;
      this.#send(
        followed,
        `hooks-ingress recovered: no ${ALERT_WORDS[followed.kind]} on ${_where(followed.hook)} for ${quiet} s (last ${
          _iso(followed.last)
        })`,
        0,
      );
      return;
    }
    // Still going on (signature failures: at their threshold's rate now): said, and another window.
    if (this.#reached(followed, now)) return this.#alert(key, followed, now);
    // Some came, but they stopped short of the rate: not alerted, and not quiet yet; a window later tells.
    followed.times = [];
    followed.count = 0;
    followed.codes = [];
    followed.cancel = this.#schedule(this.#config().throttleSeconds * 1000, () => this.#windowEnd(key, followed));
  }

  #send(followed: _Followed, text: string, count: number): void {
    const fields = { kind: followed.kind, hook: clipLine(followed.hook, 200), count };
    const work: Promise<void> = this.#deliver(text)
      .then((outcome) => {
        if (outcome.status === 'delivered') this.#o.log.info('alert sent', fields);
        else {this.#o.log.warn('alert not delivered', {
            ...fields,
            status: outcome.status,
            error: summarise(outcome.reason),
          });}
      })
      .catch((error: unknown) => this.#o.log.error('alert not delivered', { ...fields, error: String(error) }))
      .finally(() => this.#sending.delete(work));
    this.#sending.add(work);
  }

  #deliver(text: string): Promise<DeliveryOutcome> {
    if (this.#o.config === null) return Promise.resolve({ status: 'skipped', reason: 'alerts are not configured' });
    const { channel, to } = this.#o.config;
    return this.#o.deliver({ channel, ...(to === null ? {} : { to }), text, signal: this.#stopping.signal });
  }
}

// The hook as a message names it: a plain label as it is, the server for trouble of no hook, else a
// stand-in (a hook name may be the request's text).
function _where(hook: string): string {
  if (hook === '') return 'the server';
  return plainLabel(hook) ? `hook ${hook}` : 'a hook whose name is not a plain label';
}

function _iso(ms: number): string {
  return new Date(ms).toISOString();
}

function _timer(ms: number, fn: () => void): () => void {
  const timer = setTimeout(fn, ms);
  timer.unref?.();
  return () => clearTimeout(timer);
}
