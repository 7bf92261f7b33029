// A Meta delivery told apart from another by what its signed payload reports (Meta sends no delivery id).
//
// Meta sends no delivery id and signs no timestamp, so a captured delivery verifies for ever. What
// its signed payload reports is what tells one delivery from another: each entry's id and time, and
// in it the ids of the messages (WhatsApp `messages[].id`, Messenger `message.mid`) and of the
// status changes (id, status and time). An item that carries none of them is known by all of its
// text, so two different events never share a key; a payload of another shape, by its bytes.

import { createHash } from 'node:crypto';
import type { DeliveryId, SignedRequest } from './scheme.ts';

function _object(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function _list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

// A WhatsApp change: its messages and statuses by id; anything else by its text.
function _change(item: unknown): string[] {
  const value = _object(item) ? item['value'] : undefined;
  if (!_object(value)) return [JSON.stringify(item)];
  const marks = [
    ..._list(value['messages']).map((
      m,
    ) => (_object(m) && typeof m['id'] === 'string' ? `m:${m['id']}` : JSON.stringify(m))),
    ..._list(value['statuses']).map((
      s,
    ) => (_object(s) && typeof s['id'] === 'string'
      ? `s:${s['id']}:${String(s['status'])}:${String(s['timestamp'])}`
      : JSON.stringify(s))
    ),
  ];
  return marks.length > 0 ? marks : [JSON.stringify(item)];
}

// A Messenger or Instagram messaging item: the message's id, else all of it.
function _messaging(item: unknown): string {
  const message = _object(item) ? item['message'] : undefined;
  return _object(message) && typeof message['mid'] === 'string' ? `m:${message['mid']}` : JSON.stringify(item);
}

function _entry(entry: Record<string, unknown>): unknown[] {
  const items = [
    ..._list(entry['changes']).flatMap(_change),
    ..._list(entry['messaging']).map(_messaging),
    ..._list(entry['standby']).map(_messaging),
  ];
  return items.length > 0 ? [entry['id'] ?? null, entry['time'] ?? null, ...items] : [JSON.stringify(entry)];
}

/** A Meta delivery's identity from its signed payload (see above); signed, as the whole body is. */
export function metaDelivery(request: SignedRequest, payload: Record<string, unknown>): DeliveryId {
  const entries = payload['entry'];
  const hash = createHash('sha256');
  if (Array.isArray(entries) && entries.length > 0 && entries.every(_object)) {
    hash.update(JSON.stringify([payload['object'] ?? null, ...entries.map(_entry)]));
    return { id: `meta:${hash.digest('hex')}`, signed: true };
  }
  return { id: `meta-body:${hash.update(request.body).digest('hex')}`, signed: true };
}
