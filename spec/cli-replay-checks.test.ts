import assert from 'node:assert/strict';
import { test } from 'node:test';
import { skipLines, withTaken } from '../lib/cli/replay-checks.ts';
import { describePlan, type ReplayPlan } from '../lib/cli/failures.ts';
import type { LedgerEntry } from '../lib/model/ledger-entry.ts';

// A bulk replay's plan and the running server's checks of it: the requests whose delivery id was
// accepted already are skipped and counted, or run when forced.

const entry = (id: string) => ({ id }) as LedgerEntry;
const plan = (): ReplayPlan => ({
  run: [entry('a'), entry('b'), entry('c')],
  forced: [],
  skipped: [{ entry: entry('d'), why: 'resolved' }],
});
const checks = [{ id: 'a' }, { id: 'b', needsForce: 'taken' as const, skip: 'entry b was taken' }, {
  id: 'c',
  needsForce: 'succeeded' as const,
}];

test('withTaken() moves what the server says is taken to what the plan skips, and the plan says so', () => {
  const taken = withTaken(plan(), checks, false);
  assert.deepEqual(taken.run.map((e) => e.id), ['a', 'c']);
  assert.deepEqual(taken.skipped.map((s) => [s.entry.id, s.why, s.detail]), [['d', 'resolved', undefined], [
    'b',
    'taken',
    'entry b was taken',
  ]]);
  assert.equal(
    describePlan(taken),
    'will replay 2 requests, skip 2: 1 resolved already, by a replay or by hand (--force replays); 1 whose delivery id was already accepted, live or by a replay before them (--force replays)',
  );
  assert.deepEqual(skipLines(taken), ['skipped b: entry b was taken']);
});

test('withTaken() with --force runs a taken one, counted as forced; with no server (null) or no taken id the plan stands', () => {
  assert.deepEqual(withTaken(plan(), checks, true).forced, ['b']);
  assert.deepEqual(withTaken(plan(), checks, true).run.length, 3);
  assert.deepEqual(withTaken(plan(), null, false), plan());
  assert.deepEqual(withTaken(plan(), [{ id: 'a' }], false), plan());
});
