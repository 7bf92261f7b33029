import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorAnswer } from '../lib/edge/answer.ts';
import { ErrorCode, HttpError } from '../lib/errors.ts';

test('errorAnswer() tells the client the status, message, stable code and headers, and whether the connection ends', () => {
  const error = new HttpError(413, ErrorCode.BodyTooLarge, 'body: must be at most 10 bytes', { headers: { 'retry-after': '1' }, close: true });
  assert.deepEqual(errorAnswer(error), {
    status: 413,
    body: { ok: false, error: 'body: must be at most 10 bytes', code: 'ERR_BODY_TOO_LARGE' },
    headers: { 'retry-after': '1' },
    close: true,
  });
  assert.deepEqual(errorAnswer(new HttpError(401, ErrorCode.Unauthorized, 'missing hook token')), {
    status: 401,
    body: { ok: false, error: 'missing hook token', code: 'ERR_UNAUTHORIZED' },
    headers: {},
    close: false,
  });
});
