import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EarliestDeadline } from '../lib/hooks/transforms/earliest-deadline.ts';
import { defer } from './_cleanup.ts';
import { until } from './_until.ts';

// A deadline an hour away never passes during a test: a timer armed for it instead of the earliest
// one shows as a wait that until() turns into a failure.
const HOUR_MS = 3_600_000;

test('EarliestDeadline arms its one timer for the earliest deadline, whatever the order they come in', async (t) => {
  const seen: number[] = [];
  const deadlines = new EarliestDeadline((now) => (seen.push(now), Infinity));
  defer(t, () => deadlines.stop());
  deadlines.add(performance.now() + HOUR_MS);
  const near = performance.now();
  deadlines.add(near);
  await until('the near deadline to expire', () => seen.length > 0);
  assert.equal(seen.length, 1);
  assert.ok(seen[0]! >= near, 'expire is told a time past the deadline');
});

test('EarliestDeadline waits next for the deadline expire returns', async (t) => {
  const seen: number[] = [];
  const deadlines = new EarliestDeadline((now) => (seen.push(now), seen.length === 1 ? performance.now() : Infinity));
  defer(t, () => deadlines.stop());
  deadlines.add(performance.now());
  await until('the deadline expire returned to pass', () => seen.length === 2);
  assert.ok(seen[1]! >= seen[0]!);
});

test('EarliestDeadline after stop() starts afresh: a deadline later than the one it was armed for is armed, not refused', async (t) => {
  const seen: number[] = [];
  const deadlines = new EarliestDeadline((now) => (seen.push(now), Infinity));
  defer(t, () => deadlines.stop());
  const far = performance.now() + HOUR_MS;
  deadlines.add(far);
  deadlines.stop();
  deadlines.add(far + 1);
  deadlines.add(performance.now());
  await until('a deadline added after stop() to expire', () => seen.length > 0);
});
