import { test } from 'node:test';
import assert from 'node:assert/strict';
import { keptHeaders } from '../lib/edge/ledger-note.ts';

test('keptHeaders() redacts bearer credentials and keeps a header named __proto__ as data, never as the prototype', () => {
  const headers = JSON.parse('{"__proto__":"p","authorization":"Bearer t","x-hub-signature-256":"sha256=ab","x-gitlab-token":"g"}') as Record<string, string>;
  const kept = keptHeaders(headers, 'gitlab');
  assert.equal(Object.getPrototypeOf(kept), Object.prototype);
  assert.deepEqual(Object.entries(kept), [['__proto__', 'p'], ['authorization', '[redacted]'], ['x-hub-signature-256', 'sha256=ab'], ['x-gitlab-token', '[redacted]']]);
  assert.equal(JSON.stringify(kept), '{"__proto__":"p","authorization":"[redacted]","x-hub-signature-256":"sha256=ab","x-gitlab-token":"[redacted]"}');
});
