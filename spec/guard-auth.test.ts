import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode, HttpError } from '../lib/errors.ts';
import { createAuth } from '../lib/guard/auth.ts';
import { FailureLimiter } from '../lib/guard/rate-limit.ts';
import { tokenDigest } from '../lib/guard/token.ts';

const client = { address: '192.0.2.7', key: '192.0.2.7' };

function setup(maxFailures = 2) {
  const clock = { t: 1_000_000 };
  const limiter = new FailureLimiter({ maxFailures, windowMs: 60_000, lockoutMs: 30_000, now: () => clock.t });
  return { limiter, auth: createAuth(limiter) };
}

test('auth.authenticate() passes a token that matches any expected digest and counts nothing', () => {
  const { limiter, auth } = setup();
  const expected = [null, tokenDigest('first'), tokenDigest('second')];
  assert.equal(auth.authenticate('second', expected, client, 'invalid hook token'), null);
  assert.equal(auth.authenticate('first', expected, client, 'invalid hook token'), null);
  assert.equal(limiter.size, 0);
});

test('auth.authenticate() returns the refusal as a value, never throws, and counts the failure', () => {
  const { limiter, auth } = setup(3);
  const expected = [tokenDigest('right')];
  for (const presented of ['wrong', null, 'righ']) {
    const refused = auth.authenticate(presented, expected, client, 'invalid hook token');
    assert.ok(refused instanceof HttpError);
    assert.equal(refused.status, 401);
    assert.equal(refused.code, ErrorCode.Unauthorized);
    assert.equal(refused.message, 'invalid hook token');
  }
  // A configured token of null (none set) matches nothing, not even an absent token.
  assert.ok(auth.authenticate(null, [null], client, 'missing hook token') instanceof HttpError);
  assert.deepEqual(limiter.stats(), { keys: 1, locked: 1, lockouts: 1 });
});

test('auth tells onLockout once per lock, as it begins, and again only for a new lock', () => {
  const clock = { t: 1_000_000 };
  const limiter = new FailureLimiter({ maxFailures: 2, windowMs: 60_000, lockoutMs: 30_000, now: () => clock.t });
  const told: string[] = [];
  const auth = createAuth(limiter, (c) => void told.push(c.address));
  auth.refuse(client, 'invalid hook token');
  assert.deepEqual(told, []);
  auth.refuse(client, 'invalid hook token'); // reaches the limit: the lock begins
  assert.deepEqual(told, ['192.0.2.7']);
  for (let i = 0; i < 5; i++) assert.equal(auth.refuse(client, 'invalid hook token').status, 429);
  assert.deepEqual(told, ['192.0.2.7']);
  clock.t += 30_000 + 60_000; // the lock and the window are over
  auth.refuse(client, 'invalid hook token');
  auth.refuse(client, 'invalid hook token');
  assert.deepEqual(told, ['192.0.2.7', '192.0.2.7']);
});

test('auth.refuse() answers 401, 403 when named, and 429 with Retry-After once the client is locked', () => {
  const { auth } = setup(2);
  const first = auth.refuse(client, 'bad signature');
  assert.equal(first.status, 401);
  const second = auth.refuse(client, 'subscription token does not match', 403);
  assert.deepEqual([second.status, second.code], [403, ErrorCode.NotAllowed]);
  const locked = auth.refuse(client, 'bad signature');
  assert.deepEqual([locked.status, locked.code, locked.headers], [429, ErrorCode.TooManyFailures, {
    'retry-after': '30',
  }]);
  // A correct token still passes while its client is locked: an attacker cannot lock the operator out.
  assert.equal(auth.authenticate('right', [tokenDigest('right')], client, 'invalid hook token'), null);
});

test('auth.refuse() makes each refusal once: the same text and status give the same immutable error', () => {
  const { auth } = setup(1_000);
  const first = auth.refuse(client, 'invalid hook token');
  assert.equal(auth.refuse(client, 'invalid hook token'), first);
  assert.notEqual(auth.refuse(client, 'invalid hook token', 403), first);
  assert.notEqual(auth.refuse(client, 'missing hook token'), first);
  assert.throws(
    () => Object.assign(first, { status: 200 }),
    TypeError,
    'a shared refusal cannot be changed by whoever holds it',
  );
});
