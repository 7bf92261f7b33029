import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode, HttpError } from '../lib/errors.ts';

test('HttpError carries its status, stable code, message and defaults', () => {
  const error = new HttpError(404, ErrorCode.NotFound, 'no hook with this name');
  assert.ok(error instanceof Error);
  assert.deepEqual([error.name, error.status, error.code, error.message, error.headers, error.close], ['HttpError', 404, 'ERR_NOT_FOUND', 'no hook with this name', {}, false]);
});

test('HttpError keeps the headers, close flag and cause it is given', () => {
  const cause = new Error('socket hang up');
  const error = new HttpError(429, ErrorCode.TooManyFailures, 'retry later', { headers: { 'retry-after': '7' }, close: true, cause });
  assert.deepEqual(error.headers, { 'retry-after': '7' });
  assert.equal(error.close, true);
  assert.equal(error.cause, cause);
});

test('HttpError captures no stack frames and leaves Error.stackTraceLimit as it was', () => {
  const before = Error.stackTraceLimit;
  const error = new HttpError(401, ErrorCode.Unauthorized, 'invalid hook token');
  assert.equal(Error.stackTraceLimit, before);
  assert.doesNotMatch(error.stack ?? '', /\n\s+at /);
  assert.match(new Error('ordinary').stack ?? '', /\n\s+at /, 'other errors still get their stacks');
});

test('ErrorCode values are unique stable strings', () => {
  const codes = Object.values(ErrorCode);
  assert.equal(new Set(codes).size, codes.length);
  for (const code of codes) assert.match(code, /^ERR_[A-Z_]+$/);
});
