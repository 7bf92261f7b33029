import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deeperThan, MAX_CONFIG_DEPTH } from '../lib/config/read.ts';

test('deeperThan() names the first object or array nested past the limit, walking without recursion', () => {
  const nest = (levels: number, leaf: unknown = 1): unknown => {
    let value = leaf;
    for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : { k: value };
    return value;
  };
  assert.equal(deeperThan({ a: nest(MAX_CONFIG_DEPTH - 1) }), null);
  assert.deepEqual(deeperThan({ a: [1, { 'odd key': nest(3) }] }, 4), {
    path: 'a[1]["odd key"][0]',
    message: 'may nest objects and arrays at most 4 levels deep',
  });
  assert.equal(deeperThan({ a: nest(1_000_000) })?.path.startsWith('a.k[0].k[0]'), true);
  assert.equal(deeperThan('text', 0), null);
});
