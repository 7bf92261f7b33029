import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FailureLimiter } from '../lib/guard/rate-limit.ts';
import type { FailureLimiterOptions } from '../lib/guard/rate-limit.ts';

function setup(options: Partial<FailureLimiterOptions> = {}) {
  const clock = { t: 1_000_000 };
  const limiter = new FailureLimiter({
    maxFailures: 3,
    windowMs: 60_000,
    lockoutMs: 300_000,
    now: () => clock.t,
    ...options,
  });
  return { clock, limiter };
}

/** Records a failure for each key, in order. */
function fail(limiter: FailureLimiter, ...keys: string[]): void {
  for (const key of keys) limiter.fail(key);
}

test('limiter.fail() counts failures within the window and reports what remains', () => {
  const { clock, limiter } = setup();
  assert.deepEqual(limiter.fail('a'), { locked: false, remaining: 2 });
  clock.t += 30_000;
  assert.deepEqual(limiter.fail('a'), { locked: false, remaining: 1 });
  assert.deepEqual(limiter.fail('b'), { locked: false, remaining: 2 });
  assert.equal(limiter.size, 2);
});

test('limiter.fail() lets failures older than windowMs slide out of the count', () => {
  const { clock, limiter } = setup();
  limiter.fail('a'); // t0
  clock.t += 40_000;
  limiter.fail('a'); // t0 + 40s
  clock.t += 20_000; // t0 + 60s: the first failure is exactly windowMs old and no longer counts
  assert.deepEqual(limiter.fail('a'), { locked: false, remaining: 1 });
  assert.equal(limiter.stats().locked, 0);
  clock.t += 39_999; // the second failure still counts, one ms before it expires
  assert.deepEqual(limiter.fail('a'), { locked: false, remaining: 0 });
  assert.equal(limiter.fail('a').locked, true);
});

test('limiter.fail() never locks a client that spreads its failures wider than the window', () => {
  const { clock, limiter } = setup({ maxFailures: 2, windowMs: 1_000 });
  for (let i = 0; i < 50; i++) {
    assert.deepEqual(limiter.fail('a'), { locked: false, remaining: 1 });
    clock.t += 1_000;
  }
  assert.equal(limiter.stats().lockouts, 0);
});

test('limiter.fail() locks a client at maxFailures but answers that failure normally', () => {
  const { limiter } = setup();
  fail(limiter, 'a', 'a');
  assert.deepEqual(limiter.fail('a'), { locked: false, remaining: 0 });
  assert.deepEqual(limiter.stats(), { keys: 1, locked: 1, lockouts: 1 });
  assert.deepEqual(limiter.fail('a'), { locked: true, retryAfterSeconds: 300 });
  assert.deepEqual(limiter.fail('b'), { locked: false, remaining: 2 }, 'another client is not locked');
});

test('limiter.fail() with maxFailures 1 locks on the first failure', () => {
  const { limiter } = setup({ maxFailures: 1 });
  assert.deepEqual(limiter.fail('a'), { locked: false, remaining: 0 });
  assert.equal(limiter.fail('a').locked, true);
});

test('limiter.fail() while locked rounds retry-after up to whole seconds, at least 1', () => {
  const { clock, limiter } = setup({ maxFailures: 1, lockoutMs: 2_500 });
  limiter.fail('a');
  assert.deepEqual(limiter.fail('a'), { locked: true, retryAfterSeconds: 3 });
  clock.t += 1_499; // 1001 ms left
  assert.deepEqual(limiter.fail('a'), { locked: true, retryAfterSeconds: 2 });
  clock.t += 1; // 1000 ms left
  assert.deepEqual(limiter.fail('a'), { locked: true, retryAfterSeconds: 1 });
  clock.t += 999; // 1 ms left
  assert.deepEqual(limiter.fail('a'), { locked: true, retryAfterSeconds: 1 });
  assert.equal(limiter.stats().lockouts, 1);
});

test('limiter.fail() while locked records nothing and does not extend the lock', () => {
  const { clock, limiter } = setup({ maxFailures: 2, lockoutMs: 10_000 });
  fail(limiter, 'a', 'a');
  for (let i = 0; i < 9; i++) {
    clock.t += 1_000;
    assert.deepEqual(limiter.fail('a'), { locked: true, retryAfterSeconds: 9 - i });
  }
  clock.t += 1_000; // exactly lockoutMs after the lock
  assert.deepEqual(limiter.fail('a'), { locked: false, remaining: 1 });
  assert.equal(limiter.stats().lockouts, 1);
});

test('limiter.fail() starts from a clean count once the lockout has expired', () => {
  const { clock, limiter } = setup({ windowMs: 1_000_000, lockoutMs: 5_000 });
  fail(limiter, 'a', 'a', 'a');
  clock.t += 5_000;
  // The three failures are still inside windowMs, yet the lock wiped them.
  assert.deepEqual(limiter.fail('a'), { locked: false, remaining: 2 });
  assert.deepEqual(limiter.fail('a'), { locked: false, remaining: 1 });
});

test('limiter.stats() does not count and does not add a key', () => {
  const { limiter } = setup();
  for (let i = 0; i < 10; i++) assert.deepEqual(limiter.stats(), { keys: 0, locked: 0, lockouts: 0 });
  assert.equal(limiter.size, 0);
  assert.deepEqual(limiter.fail('a'), { locked: false, remaining: 2 });
});

test('limiter.fail() counts afresh for a client whose failures have all slid out', () => {
  const { clock, limiter } = setup();
  fail(limiter, 'a', 'a', 'b');
  clock.t += 60_000;
  assert.deepEqual(limiter.fail('a'), { locked: false, remaining: 2 });
  assert.deepEqual(limiter.fail('b'), { locked: false, remaining: 2 });
  assert.equal(limiter.size, 2);
});

test('limiter.stats() reports keys, current locks and lockouts since start', () => {
  const { clock, limiter } = setup({ maxFailures: 1, lockoutMs: 1_000 });
  limiter.fail('a');
  clock.t += 500;
  limiter.fail('b');
  assert.deepEqual(limiter.stats(), { keys: 2, locked: 2, lockouts: 2 });
  clock.t += 500; // a's lock has ended
  assert.deepEqual(limiter.stats(), { keys: 1, locked: 1, lockouts: 2 });
  clock.t += 500; // and b's
  assert.deepEqual(limiter.stats(), { keys: 0, locked: 0, lockouts: 2 });
});

test('limiter.fail() keeps size <= maxKeys and a locked client locked under a flood of 100,000 keys', () => {
  const { limiter } = setup({ maxKeys: 1_000 });
  fail(limiter, 'attacker', 'attacker', 'attacker');
  for (let i = 0; i < 100_000; i++) {
    limiter.fail(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
    if (limiter.size > 1_000) assert.fail(`size ${limiter.size} exceeds maxKeys after ${i + 1} keys`);
  }
  assert.equal(limiter.size, 1_000);
  assert.equal(limiter.fail('attacker').locked, true);
  assert.deepEqual(limiter.stats(), { keys: 1_000, locked: 1, lockouts: 1 });
});

test('limiter.fail() evicts the least recently failed unlocked client first', () => {
  const { limiter } = setup({ maxKeys: 3 });
  fail(limiter, 'a', 'b', 'c', 'a'); // a is now the most recent; b is the least recently failed
  limiter.fail('d');
  assert.equal(limiter.size, 3);
  assert.deepEqual(limiter.fail('a'), { locked: false, remaining: 0 }); // kept: third failure
  assert.deepEqual(limiter.fail('c'), { locked: false, remaining: 1 }); // kept: second failure
  // b was forgotten and is admitted anew, evicting d, now the least recently failed
  assert.deepEqual(limiter.fail('b'), { locked: false, remaining: 2 });
  assert.deepEqual(limiter.fail('d'), { locked: false, remaining: 2 });
});

test('limiter.fail() evicts the lock that ends soonest when every client is locked', () => {
  const { clock, limiter } = setup({ maxFailures: 1, maxKeys: 2 });
  limiter.fail('a');
  clock.t += 10;
  limiter.fail('b');
  clock.t += 10;
  limiter.fail('c');
  assert.equal(limiter.size, 2);
  // fail() on a locked client changes nothing, so b and c are asked first
  assert.equal(limiter.fail('b').locked, true);
  assert.equal(limiter.fail('c').locked, true);
  assert.deepEqual(limiter.fail('a'), { locked: false, remaining: 0 }, 'a was evicted and counts afresh');
});

test('limiter.fail() drops an expired lock before evicting an unlocked client', () => {
  const { clock, limiter } = setup({ maxFailures: 2, maxKeys: 2, lockoutMs: 1_000, windowMs: 10_000 });
  fail(limiter, 'a', 'a'); // a locked until t0 + 1000
  limiter.fail('b');
  clock.t += 1_000;
  limiter.fail('c');
  assert.equal(limiter.size, 2);
  assert.deepEqual(limiter.fail('b'), { locked: false, remaining: 0 }); // b kept its failure
});

test('new FailureLimiter() defaults maxKeys to 10,000', () => {
  const { limiter } = setup({ maxKeys: undefined });
  for (let i = 0; i < 10_001; i++) limiter.fail(`k${i}`);
  assert.equal(limiter.size, 10_000);
});

test('new FailureLimiter() defaults the clock to Date.now', () => {
  const limiter = new FailureLimiter({ maxFailures: 1, windowMs: 1_000, lockoutMs: 3_600_000 });
  limiter.fail('a');
  const result = limiter.fail('a');
  assert.equal(result.locked, true);
  assert.ok(result.locked && result.retryAfterSeconds > 3_500);
});

test('new FailureLimiter() rejects an option that is not a positive integer, naming it', () => {
  const valid = { maxFailures: 3, windowMs: 1_000, lockoutMs: 1_000, maxKeys: 10 };
  for (const name of ['maxFailures', 'windowMs', 'lockoutMs', 'maxKeys'] as const) {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '5', null]) {
      assert.throws(
        () => new FailureLimiter({ ...valid, [name]: bad } as unknown as FailureLimiterOptions),
        { name: 'RangeError', message: `Invalid option ${name}: must be a positive integer` },
        `${name} = ${String(bad)}`,
      );
    }
  }
});

test('new FailureLimiter() rejects a clock that is not a function', () => {
  assert.throws(
    () => new FailureLimiter({ maxFailures: 1, windowMs: 1, lockoutMs: 1, now: 5 } as unknown as FailureLimiterOptions),
    { name: 'TypeError', message: 'Invalid option now: must be a function' },
  );
});

test('new FailureLimiter() rejects missing options', () => {
  assert.throws(() => new FailureLimiter(undefined as unknown as FailureLimiterOptions), {
    name: 'TypeError',
    message: 'Invalid options: must be an object',
  });
});

test('FailureLimiter counts exactly the failures inside the window when a window holds many of them', () => {
  let now = 0;
  const limiter = new FailureLimiter({ maxFailures: 1_000, windowMs: 10, lockoutMs: 1_000, now: () => now });
  for (now = 0; now < 500; now++) {
    let last: ReturnType<FailureLimiter['fail']> = { locked: false, remaining: 0 };
    for (let i = 0; i < 3; i++) last = limiter.fail('client');
    // Failures at now-9 .. now count; older ones have left the window.
    assert.deepEqual(last, { locked: false, remaining: 1_000 - 3 * Math.min(now + 1, 10) }, `at ${now}`);
  }
  now += 10;
  assert.deepEqual(limiter.fail('client'), { locked: false, remaining: 999 }, 'every earlier failure left the window');
  assert.equal(limiter.size, 1);
});
