import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Claims } from '../lib/server/claims.ts';

test('Claims: a root is taken once until it is released', () => {
  const claims = new Claims();
  assert.equal(claims.take('a'), true);
  assert.equal(claims.take('a'), false);
  assert.deepEqual([claims.held('a'), claims.held('b')], [true, false]);
  assert.equal(claims.take('b'), true);
  claims.release('a');
  assert.deepEqual([claims.held('a'), claims.take('a')], [false, true]);
});
