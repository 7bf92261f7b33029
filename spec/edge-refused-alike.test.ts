import assert from 'node:assert/strict';
import { test } from 'node:test';
import { refusalKey } from '../lib/edge/refused-alike.ts';

test('refusalKey() is the same for refusals alike and differs when the client, status, code, hook or signature failure differs', () => {
  const key = refusalKey('127.0.0.1', 401, 'ERR_UNAUTHORIZED', 'wake', undefined);
  assert.equal(refusalKey('127.0.0.1', 401, 'ERR_UNAUTHORIZED', 'wake', undefined), key);
  assert.notEqual(refusalKey('127.0.0.2', 401, 'ERR_UNAUTHORIZED', 'wake', undefined), key);
  assert.notEqual(refusalKey('127.0.0.1', 429, 'ERR_UNAUTHORIZED', 'wake', undefined), key);
  assert.notEqual(refusalKey('127.0.0.1', 401, 'ERR_RATE_LIMITED', 'wake', undefined), key);
  assert.notEqual(refusalKey('127.0.0.1', 401, 'ERR_UNAUTHORIZED', 'agent', undefined), key);
  assert.notEqual(refusalKey('127.0.0.1', 401, 'ERR_UNAUTHORIZED', 'wake', 'bad-signature'), key);
  // No hook and the base path's empty name are one key: neither names a hook.
  assert.equal(
    refusalKey('::1', 404, undefined, null, undefined),
    refusalKey('::1', 404, undefined, undefined, undefined),
  );
});
