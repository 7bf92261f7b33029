import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Budget, RateLimit } from '../lib/hooks/limits.ts';
import type { RunRecord } from '../lib/model/records.ts';
import { type BudgetStep, type LimitsStore, type RateStep, WorkLimits } from '../lib/edge/work-limits.ts';
import { captureLog } from './_app.ts';

// The limits over a fake store and a clock the test sets: the windows and the days' arithmetic.

function limits(start: string, store: Partial<LimitsStore> = {}) {
  let now = Date.parse(start);
  const { log, lines } = captureLog();
  const work = new WorkLimits({
    store: { runs: () => [], budget: () => ({ used: 0, told: false }), ...store },
    log,
    now: () => now,
  });
  return { work, lines, set: (iso: string) => void (now = Date.parse(iso)), add: (ms: number) => void (now += ms) };
}

const RUNS = { runs: 1, other: false };

function kinds(steps: readonly RateStep[]): string[] {
  return steps.map((s) => s.kind);
}

test('rate() reject: max requests pass, the next is refused 429 ERR_RATE_LIMITED with the seconds until the window has room', () => {
  const { work, add } = limits('2026-11-27T10:00:00Z');
  const limit: RateLimit = { max: 2, windowSeconds: 60, over: 'reject' };
  const first = work.rate('ci', limit, RUNS);
  add(10_000);
  const steps = [first, work.rate('ci', limit, RUNS), work.rate('ci', limit, RUNS)];
  assert.deepEqual(kinds(steps), ['pass', 'pass', 'refused']);
  const refused = steps[2] as Extract<RateStep, { kind: 'refused' }>;
  assert.deepEqual([refused.refusal.status, refused.refusal.code], [429, 'ERR_RATE_LIMITED']);
  assert.equal(refused.refusal.headers['retry-after'], '50', 'the first leaves the window 50 s from now');
  assert.deepEqual(refused.mark, { hook: 'ci', by: 'rate', over: 'reject' });
  assert.equal(work.rate('other', limit, RUNS).kind, 'pass', 'each hook has its own window');
  add(50_000);
  assert.equal(work.rate('ci', limit, RUNS).kind, 'pass');
});

test('rate() ignore drops what is past the limit; queue holds runs until the window allows, and refuses a wake', () => {
  const { work } = limits('2026-11-27T10:00:00Z');
  const ignore: RateLimit = { max: 1, windowSeconds: 60, over: 'ignore' };
  assert.deepEqual(kinds([work.rate('a', ignore, RUNS), work.rate('a', ignore, RUNS)]), ['pass', 'ignored']);
  const queue: RateLimit = { max: 1, windowSeconds: 60, over: 'queue' };
  const held = [work.rate('q', queue, RUNS), work.rate('q', queue, RUNS), work.rate('q', queue, RUNS)];
  assert.deepEqual(
    held.map((s) => s.kind === 'pass' ? new Date(s.at).toISOString() : s.kind),
    ['2026-11-27T10:00:00.000Z', '2026-11-27T10:01:00.000Z', '2026-11-27T10:02:00.000Z'],
  );
  assert.equal(work.rate('q', queue, { runs: 0, other: true }).kind, 'refused', 'a wake cannot wait');
  assert.equal(work.rate('q', queue, { runs: 1, other: true }).kind, 'refused', 'nor a run with a wake beside it');
  // A held place given back (the request was refused later on) is free again.
  (held[2] as Extract<RateStep, { kind: 'pass' }>).undo();
  const again = work.rate('q', queue, RUNS);
  assert.equal(again.kind === 'pass' && new Date(again.at).toISOString(), '2026-11-27T10:02:00.000Z');
});

test('rate() counts again, after a restart, the requests whose runs the journal holds (a held run at its start time)', () => {
  const run = (requestId: string, acceptedAt: string, notBefore?: string) =>
    ({
      runId: `r-${requestId}-${acceptedAt}`,
      requestId,
      hook: 'agent',
      acceptedAt,
      ...(notBefore ? { notBefore } : {}),
    }) as RunRecord;
  const { work } = limits('2026-11-27T10:00:30Z', {
    runs: () => [
      run('old', '2026-11-27T09:58:00Z'),
      run('a', '2026-11-27T10:00:00Z'),
      run('a', '2026-11-27T10:00:00Z'), // a second run of the same request: one place
      run('b', '2026-11-27T10:00:10Z', '2026-11-27T10:01:00Z'),
    ],
  });
  // Places at 10:00 (a) and 10:01 (b, held): a third fits once a has left the window, at 10:01.
  const step = work.rate('agent', { max: 2, windowSeconds: 60, over: 'queue' }, RUNS);
  assert.equal(step.kind === 'pass' && new Date(step.at).toISOString(), '2026-11-27T10:01:00.000Z');
  const fourth = work.rate('agent', { max: 2, windowSeconds: 60, over: 'queue' }, RUNS);
  assert.equal(fourth.kind === 'pass' && new Date(fourth.at).toISOString(), '2026-11-27T10:02:00.000Z');
});

const wait: Budget = { runsPerDay: 3, over: 'wait', timeZone: 'UTC' };

test('budget() wait: 3 runs a day, the 4th is charged to the next day and held until it starts; one notice and one log line', () => {
  const { work, lines } = limits('2026-11-27T22:00:00Z');
  const now = Date.parse('2026-11-27T22:00:00Z');
  const steps = [1, 2, 3, 4, 5].map(() => work.budget('ci', wait, 1, now));
  assert.deepEqual(
    steps.map(({ step }) => step.kind === 'pass' ? [step.charge.day, step.notBefore] : [step.kind]),
    [
      ['2026-11-27', null],
      ['2026-11-27', null],
      ['2026-11-27', null],
      ['2026-11-28', Date.parse('2026-11-28T00:00:00Z')],
      ['2026-11-28', Date.parse('2026-11-28T00:00:00Z')],
    ],
  );
  const notices = steps.flatMap(({ notice }) => notice === null ? [] : [notice]);
  assert.equal(notices.length, 1, 'one notice a hook a day');
  assert.match(
    notices[0]!.text,
    /^Budget reached: hook ci has used its 3 runs for 2026-11-27 \(UTC\); further runs wait/,
  );
  assert.deepEqual(notices[0]!.told, { hook: 'ci', day: '2026-11-27', runs: 0, told: true });
  assert.deepEqual(lines.filter((l) => l['msg'] === 'hook budget reached').map((l) => [l['level'], l['hook']]), [[
    'warn',
    'ci',
  ]]);
  assert.deepEqual(steps[3]!.step.mark, { hook: 'ci', by: 'budget', over: 'wait' });
});

test('budget() wait refuses once the next day is spoken for too; reject refuses at once, with the seconds until midnight', () => {
  const { work } = limits('2026-11-27T23:59:00Z');
  const now = Date.parse('2026-11-27T23:59:00Z');
  const one: Budget = { runsPerDay: 1, over: 'wait', timeZone: 'UTC' };
  const steps = [1, 2, 3].map(() => work.budget('w', one, 1, now).step);
  assert.deepEqual(steps.map((s) => s.kind), ['pass', 'pass', 'refused']);
  const refused = steps[2] as Extract<BudgetStep, { kind: 'refused' }>;
  assert.deepEqual([refused.refusal.status, refused.refusal.code], [429, 'ERR_BUDGET_EXCEEDED']);
  assert.equal(refused.refusal.headers['retry-after'], '60');
  const reject: Budget = { runsPerDay: 2, over: 'reject', timeZone: 'UTC' };
  assert.deepEqual([1, 2, 3].map(() => work.budget('r', reject, 1, now).step.kind), ['pass', 'pass', 'refused']);
  assert.equal(work.budget('r', reject, 3, now).step.kind, 'refused', 'more runs than a day holds never fit');
});

test('budget() days follow the time zone, a 23-hour day across the DST change included', () => {
  const { work, set } = limits('2026-03-28T22:30:00Z');
  const berlin: Budget = { runsPerDay: 1, over: 'wait', timeZone: 'Europe/Berlin' };
  // 22:30 UTC is 23:30 in Berlin on the 28th; the 29th starts at 23:00 UTC and has 23 hours.
  const a = work.budget('b', berlin, 1, Date.parse('2026-03-28T22:30:00Z')).step;
  const b = work.budget('b', berlin, 1, Date.parse('2026-03-28T22:30:00Z')).step;
  assert.deepEqual(
    [a, b].map((s) => s.kind === 'pass' ? [s.charge.day, s.notBefore && new Date(s.notBefore).toISOString()] : s.kind),
    [['2026-03-28', null], ['2026-03-29', '2026-03-28T23:00:00.000Z']],
  );
  set('2026-03-29T21:59:00Z');
  const c = work.budget('b', berlin, 1, Date.parse('2026-03-29T21:59:00Z')).step;
  assert.equal(c.kind === 'pass' && new Date(c.notBefore!).toISOString(), '2026-03-29T22:00:00.000Z');
});

test('budget() reads a day it has not counted yet from the store (a restart), notice posted included; undo gives a charge back', () => {
  const { work } = limits('2026-11-27T12:00:00Z', {
    budget: (hook, day) => (hook === 'ci' && day === '2026-11-27' ? { used: 3, told: true } : { used: 0, told: false }),
  });
  const now = Date.parse('2026-11-27T12:00:00Z');
  const { step, notice } = work.budget('ci', wait, 1, now);
  assert.equal(step.kind === 'pass' && step.charge.day, '2026-11-28');
  assert.equal(notice, null, 'the journal says the notice was posted');
  const fresh = work.budget('new', { ...wait, runsPerDay: 1 }, 1, now).step;
  assert.equal(fresh.kind, 'pass');
  (fresh as Extract<BudgetStep, { kind: 'pass' }>).undo();
  assert.equal(work.budget('new', { ...wait, runsPerDay: 1 }, 1, now).step.kind === 'pass' && true, true);
  const [stats] = work.stats(new Map([['ci', { budget: wait }]]));
  assert.deepEqual(stats, {
    hook: 'ci',
    limitedToday: 0,
    overBudgetToday: 1,
    budget: { day: '2026-11-27', used: 3, runsPerDay: 3, waiting: 1, timeZone: 'UTC' },
  });
});
