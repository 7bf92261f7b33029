/**
 * @module What a row of the inspector's list says besides the request line: the provider's event
 * type, the delivery id its sender gave, and one outcome in words. Derived on the server from the
 * ledger entry, each bounded and on one line; the page renders them as text only.
 */
import { senderDelivery } from '../guard/signatures/verify.ts';
import { headerDelivery } from '../guard/signatures/scheme.ts';
import type { LedgerEntry } from '../model/ledger-entry.ts';
import { describeCause } from '../model/cause.ts';
import { clipLine } from '../text.ts';

/** A row's words: `event` and `delivery` when the request carries them, `why` when the entry has a cause its outcome does not say. */
export interface RowFacts {
  event?: string;
  delivery?: string;
  outcome: string;
  /** The entry's cause in words (a transform's exception and where, hollow placeholders, the filter's condition, the policy's rule). */
  why?: string;
}

const _MAX = 120;
// Bodies past this are not parsed for a row: the list is polled, and the type sits near the top anyway.
const _MAX_PARSED = 256 * 1024;
// The ids senders put in headers, for an entry on a path without a signature scheme.
const _HEADER_IDS = headerDelivery(
  'x-github-delivery',
  'x-gitlab-event-uuid',
  'x-shopify-webhook-id',
  'webhook-id',
  'svix-id',
  'i-twilio-idempotency-token',
);
const _HEADER_EVENTS = ['x-github-event', 'x-gitlab-event', 'x-shopify-topic'];

/** The event type, delivery id and outcome of `entry`, for its row. */
export async function rowFacts(entry: LedgerEntry): Promise<RowFacts> {
  const facts: RowFacts = { outcome: outcome(entry) };
  const said = why(entry);
  if (said !== undefined) facts.why = said;
  const payload = _payload(entry);
  const event = eventType(entry.headers, payload.json ?? payload.form ?? {});
  if (event !== null) facts.event = _line(event);
  const request = { headers: entry.headers, body: Buffer.from(payload.text, 'utf8'), query: entry.query ?? '' };
  const given =
    (entry.signature === undefined
      ? null
      : await senderDelivery(entry.signature.scheme, request, payload.json ?? {})) ?? _HEADER_IDS(request, {});
  if (given !== null) facts.delivery = _line(given.id);
  return facts;
}

/** The provider's name for what happened, from the headers or the body as each provider sends it, or `null`. */
export function eventType(headers: LedgerEntry['headers'], body: Record<string, unknown>): string | null {
  for (const name of _HEADER_EVENTS) {
    const value = headers[name];
    const text = Array.isArray(value) ? value[0] : value;
    if (typeof text === 'string' && text !== '') return text;
  }
  const inner = body['event'];
  // Slack's Events API: the event inside the callback.
  if (_object(inner) && typeof inner['type'] === 'string') return inner['type'];
  // Meta: the object, and the field of the first change.
  if (typeof body['object'] === 'string' && Array.isArray(body['entry'])) {
    const first = body['entry'][0];
    const change = _object(first) && Array.isArray(first['changes']) ? first['changes'][0] : undefined;
    return _object(change) && typeof change['field'] === 'string'
      ? `${body['object']} ${change['field']}`
      : body['object'];
  }
  // Stripe, Standard Webhooks, Slack's own (url_verification); Twilio's form posts.
  for (const key of ['type', 'EventType', 'MessageStatus', 'SmsStatus', 'CallStatus']) {
    if (typeof body[key] === 'string' && body[key] !== '') {
      return key.endsWith('Status') ? `${key.slice(0, -6).toLowerCase()} ${body[key]}` : (body[key] as string);
    }
  }
  return null;
}

/** The entry's cause in words, one bounded line without control characters; none for a duplicate, which its outcome says. */
export function why(entry: Pick<LedgerEntry, 'cause'>): string | undefined {
  const { cause } = entry;
  return cause === undefined || cause.kind === 'duplicate' ? undefined : _line(describeCause(cause));
}

/** One outcome in words: accepted, ignored, duplicate of …, refused (why), failed (why), skipped, handshake. */
export function outcome(entry: LedgerEntry): string {
  const became = entry.became ?? {};
  if (became.duplicateOf !== undefined) return `duplicate of ${_line(became.duplicateOf).slice(0, 12)}`;
  const filter = entry.mapping ?? (entry.cause?.kind === 'filter' ? entry.cause.at : undefined);
  if (became.ignored === true) {
    return filter === undefined ? 'ignored by a filter' : `ignored by ${_line(filter)}'s filter`;
  }
  if (became.skipped === true) return 'skipped by its transform';
  if (became.limited === true) return 'dropped by its rate limit';
  if (became.heldUntil !== undefined) return `accepted, held until ${_line(became.heldUntil)}`;
  if (became.handshake !== undefined) return `handshake: ${_line(became.handshake)}`;
  if (entry.status < 400) return 'accepted';
  const why = entry.signature?.ok === false && entry.signature.why !== undefined
    ? entry.signature.why.replace(/-/g, ' ')
    : (entry.code ?? `status ${entry.status}`).replace(/^ERR_/, '').replace(/_/g, ' ').toLowerCase();
  return `${entry.status >= 500 ? 'failed' : 'refused'}: ${why}`;
}

// The body as text, and parsed: JSON to an object, a form to its fields; neither when cut or large.
function _payload(
  entry: LedgerEntry,
): { text: string; json?: Record<string, unknown>; form?: Record<string, unknown> } {
  const body = entry.body;
  if (body === undefined || body.encoding !== 'utf8' || body.truncated || body.data.length > _MAX_PARSED) {
    return { text: '' };
  }
  const text = body.data;
  if (/^\s*\{/.test(text)) {
    try {
      const json: unknown = JSON.parse(text);
      return _object(json) ? { text, json } : { text };
    } catch {
      return { text };
    }
  }
  return text.includes('=') ? { text, form: Object.fromEntries(new URLSearchParams(text)) } : { text };
}

function _object(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// One line, no control characters, bounded.
function _line(text: string): string {
  return clipLine(text.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, ' '), _MAX);
}
