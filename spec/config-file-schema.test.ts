import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normaliseHooksPath, parseDuration } from '../lib/config/file-schema.ts';

test('normaliseHooksPath() adds a leading slash and removes trailing ones', () => {
  const paths: [written: string, normalised: string][] = [
    ['hooks', '/hooks'],
    ['/hooks/', '/hooks'],
    ['/hooks///', '/hooks'],
    [' /a/b/ ', '/a/b'],
    ['/', '/'],
    ['///', '/'],
    ['', '/'],
  ];
  for (const [written, normalised] of paths) assert.equal(normaliseHooksPath(written), normalised, written);
});

test('parseDuration() reads ms, s, m, h and d, a bare number as minutes, and "0" as off', () => {
  assert.equal(parseDuration('500ms'), 500);
  assert.equal(parseDuration('90s'), 90_000);
  assert.equal(parseDuration('30m'), 1_800_000);
  assert.equal(parseDuration('1.5h'), 5_400_000);
  assert.equal(parseDuration('2d'), 172_800_000);
  assert.equal(parseDuration(' 5 m '), 300_000);
  assert.equal(parseDuration('15'), 900_000);
  assert.equal(parseDuration(15), 900_000);
  assert.equal(parseDuration('0'), 0);
  assert.equal(parseDuration('0s'), 0);
});

test('parseDuration() returns null for anything else', () => {
  for (const value of ['', 'm', '5w', '-1m', '1e3s', '5mm', '.5h', {}, null, undefined, -1, Number.NaN]) {
    assert.equal(parseDuration(value), null, String(value));
  }
});
