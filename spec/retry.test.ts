import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRetryAfter, retry } from '../lib/retry.ts';
import type { Attempt, RetryOptions } from '../lib/retry.ts';

const BUSY: Attempt<string> = { ok: false, retryable: true, message: 'HTTP 503' };

// Answers the scripted attempts in order (the last one repeats), recording each attempt number.
function scripted(
  ...answers: Attempt<string>[]
): { attempt: (n: number) => Promise<Attempt<string>>; calls: number[] } {
  const calls: number[] = [];
  return {
    calls,
    attempt: async (n) => {
      calls.push(n);
      return answers[Math.min(n, answers.length) - 1]!;
    },
  };
}

// A sleep that only records what it was asked to wait, and a clock it advances by that much.
function fakeTime(start = 0): { sleeps: number[]; now: () => number; sleep: NonNullable<RetryOptions['sleep']> } {
  let time = start;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => time,
    sleep: async (ms) => {
      sleeps.push(ms);
      time += ms;
    },
  };
}

test('retry() returns the first success with the number of attempts made', async () => {
  const { attempt, calls } = scripted(BUSY, BUSY, { ok: true, value: 'done' });
  const time = fakeTime();
  const result = await retry(attempt, {
    maxAttempts: 5,
    baseDelayMs: 100,
    maxDelayMs: 10_000,
    random: () => 1,
    ...time,
  });
  assert.deepEqual(result, { ok: true, value: 'done', attempts: 3 });
  assert.deepEqual(calls, [1, 2, 3]);
  assert.deepEqual(time.sleeps, [100, 200]);
});

test('retry() stops at a permanent failure, making no further attempt', async () => {
  const { attempt, calls } = scripted(BUSY, { ok: false, retryable: false, message: 'HTTP 401' });
  const time = fakeTime();
  const result = await retry(attempt, { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 1000, random: () => 1, ...time });
  assert.deepEqual(result, { ok: false, retryable: false, message: 'HTTP 401', attempts: 2 });
  assert.deepEqual(calls, [1, 2]);
  assert.deepEqual(time.sleeps, [100]);
});

test('retry() doubles the backoff up to maxDelayMs with full jitter, and returns the last failure at maxAttempts', async () => {
  const { attempt } = scripted(BUSY);
  const time = fakeTime();
  const result = await retry(attempt, {
    maxAttempts: 6,
    baseDelayMs: 100,
    maxDelayMs: 500,
    random: () => 0.5,
    ...time,
  });
  assert.deepEqual(result, { ...BUSY, attempts: 6 });
  assert.deepEqual(time.sleeps, [50, 100, 200, 250, 250]);
});

test('retry() waits what Retry-After said instead of the backoff', async () => {
  const { attempt } = scripted({ ...BUSY, retryAfterMs: 7000 }, { ok: true, value: 'done' });
  const time = fakeTime();
  const result = await retry(attempt, { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 1000, random: () => 1, ...time });
  assert.deepEqual(result, { ok: true, value: 'done', attempts: 2 });
  assert.deepEqual(time.sleeps, [7000]);
});

test('retry() starts no wait that would reach the deadline', async () => {
  const { attempt, calls } = scripted(BUSY);
  const time = fakeTime(1000);
  const result = await retry(attempt, {
    maxAttempts: 10,
    baseDelayMs: 100,
    maxDelayMs: 10_000,
    deadline: 1000 + 100 + 200 + 400,
    random: () => 1,
    ...time,
  });
  // Waits of 100 and 200 fit; the third (400) would end exactly at the deadline.
  assert.deepEqual(time.sleeps, [100, 200]);
  assert.deepEqual(calls, [1, 2, 3]);
  assert.deepEqual(result, { ...BUSY, attempts: 3 });
});

test('retry() stops when the signal aborts during a wait or before the next attempt', async () => {
  const controller = new AbortController();
  const { attempt, calls } = scripted(BUSY);
  const result = await retry(attempt, {
    maxAttempts: 5,
    baseDelayMs: 100,
    maxDelayMs: 1000,
    sleep: async () => controller.abort(),
    signal: controller.signal,
  });
  assert.deepEqual(result, { ...BUSY, attempts: 1 });
  assert.deepEqual(calls, [1]);

  const aborted = scripted(BUSY);
  const again = await retry(aborted.attempt, {
    maxAttempts: 5,
    baseDelayMs: 100,
    maxDelayMs: 1000,
    signal: AbortSignal.abort(),
    sleep: () => assert.fail('no wait'),
  });
  assert.deepEqual(again, { ...BUSY, attempts: 1 });
});

test('retry() sleeps on real timers by default, and the default sleep ends early on abort', async () => {
  const quick = scripted(BUSY, { ok: true, value: 'done' });
  assert.deepEqual(await retry(quick.attempt, { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1, random: () => 0 }), {
    ok: true,
    value: 'done',
    attempts: 2,
  });

  // A 60 s Retry-After that the abort cuts short: the test finishes at once or not at all.
  const controller = new AbortController();
  const slow = scripted({ ...BUSY, retryAfterMs: 60_000 });
  const pending = retry(
    async (n) => {
      setImmediate(() => controller.abort());
      return slow.attempt(n);
    },
    { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1, signal: controller.signal },
  );
  assert.deepEqual(await pending, { ...BUSY, retryAfterMs: 60_000, attempts: 1 });
});

test('parseRetryAfter() reads delta-seconds, fractions included, never below zero', () => {
  assert.equal(parseRetryAfter('120'), 120_000);
  assert.equal(parseRetryAfter('0'), 0);
  assert.equal(parseRetryAfter(' 1.5 '), 1500);
  assert.equal(parseRetryAfter('-3'), 0);
});

test('parseRetryAfter() reads an HTTP date against now, a past date as zero', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  assert.equal(parseRetryAfter('Wed, 01 Jan 2025 00:00:30 GMT', now), 30_000);
  assert.equal(parseRetryAfter('Tue, 31 Dec 2024 23:59:00 GMT', now), 0);
});

test('parseRetryAfter() answers undefined for a missing, empty or unreadable value', () => {
  assert.equal(parseRetryAfter(null), undefined);
  assert.equal(parseRetryAfter(undefined), undefined);
  assert.equal(parseRetryAfter('  '), undefined);
  assert.equal(parseRetryAfter('soon'), undefined);
});
