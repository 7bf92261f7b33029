import assert from 'node:assert/strict';
import { test } from 'node:test';
import { retryableStatus, tellFor } from '../lib/delivery/_platform.ts';

// What every adapter promises (text and recipient checks, aborts, unanswered calls, the answer cap,
// redirects, error wording and masking) is spec/_adapter-contract.ts, run by each adapter's spec.

test('tellFor() masks secrets before it puts the message on one line and clips it', () => {
  const tell = tellFor(['s3cret'], '<token>');
  assert.equal(tell('moved to https://u:p@h.test/x'), 'moved to https://[redacted]@h.test/x');
  assert.equal(tell('failed:\n  token s3cret\trejected'), 'failed: token <token> rejected');
  const long = tell(`${'x'.repeat(398)}s3cret`);
  assert.equal(long.length, 401);
  assert.doesNotMatch(long, /s3c/);
});

test('retryableStatus() is true for 429 and 5xx only', () => {
  assert.deepEqual([200, 400, 404, 409, 429, 500, 503].map(retryableStatus), [
    false,
    false,
    false,
    false,
    true,
    true,
    true,
  ]);
});
