import assert from 'node:assert/strict';
import { test } from 'node:test';
import { idSequence, randomHex } from '../lib/random.ts';

test('randomHex() returns the asked number of bytes as hex, never the same twice across pool refills', () => {
  const seen = new Set<string>();
  // 8-byte ids: 512 fit in one pool, so this crosses several refills.
  for (let i = 0; i < 3_000; i++) {
    const id = randomHex(8);
    assert.match(id, /^[0-9a-f]{16}$/);
    assert.equal(seen.has(id), false, 'a pool byte is handed out once');
    seen.add(id);
  }
  assert.match(randomHex(5000), /^[0-9a-f]{10000}$/, 'more than a pool holds comes straight from randomBytes');
});

test('randomHex() refuses a count that is not a positive whole number', () => {
  for (const bad of [0, -1, 1.5, Number.NaN]) assert.throws(() => randomHex(bad), RangeError);
});

test('randomHex() spreads its output over every hex digit', () => {
  const counts = new Map<string, number>();
  for (const c of randomHex(4000)) counts.set(c, (counts.get(c) ?? 0) + 1);
  assert.equal(counts.size, 16);
  // 8000 digits, 500 expected each: a pool that repeated or zeroed bytes would skew this far.
  for (const [digit, n] of counts) assert.ok(n > 350 && n < 650, `${digit}: ${n}`);
});

test('idSequence() gives UUID-shaped ids, each new, from a random per-sequence prefix', () => {
  const next = idSequence();
  const ids = Array.from({ length: 1000 }, next);
  for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  assert.equal(new Set(ids).size, ids.length);
  assert.notEqual(idSequence()().slice(0, 19), ids[0]!.slice(0, 19), 'another sequence has another random prefix');
  assert.equal(ids[1]!.slice(19), '0000-000000000002');
});
