import assert from 'node:assert/strict';
import { test } from 'node:test';
import { idempotencyKey } from '../lib/edge/idempotency.ts';

test("idempotencyKey() takes Idempotency-Key, then X-OpenClaw-Idempotency-Key, then an unsigned delivery id, then webhook-id, then the body's idempotencyKey", () => {
  const unsigned = { id: 'gh-1', signed: false };
  assert.deepEqual(idempotencyKey({ 'idempotency-key': ' a ', 'x-openclaw-idempotency-key': 'b' }, {}, unsigned), {
    key: 'a',
  });
  assert.deepEqual(idempotencyKey({ 'x-openclaw-idempotency-key': 'b' }, {}, unsigned), { key: 'b' });
  assert.deepEqual(idempotencyKey({ 'webhook-id': 'w' }, {}, unsigned), { key: 'gh-1' });
  assert.deepEqual(idempotencyKey({ 'webhook-id': 'w' }, { idempotencyKey: 'body' }), { key: 'w' });
  assert.deepEqual(idempotencyKey({}, { idempotencyKey: 'body' }), { key: 'body' });
  // Empty and over-long keys are passed over: the request works, without dedupe.
  assert.equal(idempotencyKey({ 'idempotency-key': ' ', 'x-openclaw-idempotency-key': 'x'.repeat(257) }, {}), null);
});

test("idempotencyKey() keys a signed delivery by its id whatever the request's key headers say, with its window when it has one", () => {
  const headers = { 'idempotency-key': 'fresh', 'x-openclaw-idempotency-key': 'fresher' };
  assert.deepEqual(idempotencyKey(headers, {}, { id: 'msg_1', signed: true }), { key: 'msg_1' });
  assert.deepEqual(idempotencyKey(headers, {}, { id: 'sha256:ab', signed: true, windowSeconds: 600 }), {
    key: 'sha256:ab',
    ttlMs: 600_000,
  });
  // An over-long signed id is kept by its hash: ignoring it would let its replays through.
  const long = idempotencyKey(headers, {}, { id: 'x'.repeat(300), signed: true });
  assert.match(long!.key, /^id-sha256:[0-9a-f]{64}$/);
  assert.deepEqual(idempotencyKey({}, {}, { id: 'x'.repeat(300), signed: true }), long);
});
