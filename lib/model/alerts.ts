// What the owner is alerted about: the kinds of trouble, one noted occurrence of one, and the sink
// the edge and the runtime note them in. The alerter (runtime/alerts.ts) counts, throttles and
// sends; the parts that see trouble only say what happened, where, and under which code.

import type { Channel } from './actions.ts';

/** The kinds of trouble an alert is sent for (`alerts.on`). */
export const ALERT_KINDS = [
  'signature-failures',
  'run-failures',
  'delivery-failures',
  'outbox-dead',
  'storage',
  'backlog',
  'budget',
] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

/**
 * One occurrence of trouble: its kind, the hook it concerns (`''` for the server as a whole) and a
 * short code from a fixed vocabulary or a platform's status (never request text).
 */
export interface AlertNote {
  kind: AlertKind;
  hook: string;
  code: string;
}

/** `alerts` as the config holds it. */
export interface AlertsConfig {
  channel: Exclude<Channel, 'last'>;
  /** The recipient; `null`: the channel's `defaultTo`. */
  to: string | null;
  /** The kinds alerted about. */
  on: readonly AlertKind[];
  throttleSeconds: number;
  /** Signature failures alert once `count` arrived within `minutes` on one hook. */
  signatureFailures: { count: number; minutes: number };
}

/** Where trouble is noted; an alerter that is off notes nothing. */
export interface Alerts {
  note(note: AlertNote): void;
}

/**
 * The code of a failure message, without its text: the status a provider or platform answered
 * (`HTTP 401 invalid_api_key`, `Telegram 403`), `timeout`, `connection failed`, else the fallback.
 * A message may quote what a model or a platform said, and that may quote the request.
 */
export function failureCode(message: string, fallback: string): string {
  const status = /^(HTTP|[A-Z][A-Za-z]{1,20}) (\d{3})\b(?: ([A-Za-z][\w.-]{0,40})(?=[:\s]|$))?/.exec(message);
  if (status !== null) return [status[1], status[2], status[3]].filter((part) => part !== undefined).join(' ');
  if (/^no reply within/.test(message)) return 'timeout';
  if (/^Connection failed/.test(message)) return 'connection failed';
  return fallback;
}
