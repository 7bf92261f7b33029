import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  describePlan,
  openFailures,
  planReplay,
  resolutionFor,
  type RootRecords,
  rootResolved,
  type TakenIds,
} from '../lib/cli/failures.ts';
import type { LedgerEntry } from '../lib/model/ledger-entry.ts';
import { describeResolution, type RootRecord } from '../lib/model/replays.ts';

const body = { encoding: 'utf8' as const, data: '{}', bytes: 2, truncated: false };

function entry(id: string, fields: Partial<LedgerEntry> = {}, kept = true): LedgerEntry {
  return {
    id,
    requestId: `r-${id}`,
    time: 't',
    method: 'POST',
    path: '/hooks/gh',
    hook: 'gh',
    client: '127.0.0.1',
    lane: 'authenticated',
    auth: 'token',
    headers: {},
    status: 401,
    durationMs: 1,
    ...(kept ? { body } : {}),
    ...fields,
  };
}

const record = (root: string, state: RootRecord['state']): RootRecord => ({
  root,
  state,
  replays: state === 'succeeded' ? [{ entry: `${root}-ok`, requestId: 'q', status: 200, time: 't' }] : [],
  time: 't',
});

test('openFailures(): one line per original still open (its own entry, else its newest replay); resolved ones and a root that succeeded are left out; with all, every failure', () => {
  const entries = [
    entry('a'),
    entry('a1', { replayOf: 'a' }),
    entry('b1', { replayOf: 'b' }),
    entry('b2', { replayOf: 'b' }),
    entry('c'),
    entry('d'),
    entry('e', { status: 200 }),
    entry('e1', { replayOf: 'e', status: 500 }),
  ];
  const roots: RootRecords = new Map([['c', record('c', 'succeeded')], ['d', record('d', 'resolved')]]);
  const failures = entries.filter((e) => e.status >= 400);
  assert.deepEqual(openFailures(failures, { entries, roots }).map((e) => e.id), ['a', 'b2']);
  assert.deepEqual(openFailures(failures, { entries, roots }, true).map((e) => e.id), [
    'a',
    'a1',
    'b1',
    'b2',
    'c',
    'd',
    'e1',
  ]);
  assert.deepEqual([rootResolved(entries[7]!, { entries, roots }), rootResolved(entries[2]!, { entries, roots })], [
    true,
    false,
  ]);
  assert.equal(resolutionFor(entries[4]!, roots)?.state, 'succeeded');
  assert.equal(resolutionFor(entries[0]!, roots), undefined);
});

test('a failure whose delivery id another request took (accepted live, or by a replay) is resolved by it: left out of --failed with its replays, named in its resolution; a root resolved already keeps its own', () => {
  const entries = [
    entry('a'),
    entry('a1', { replayOf: 'a', status: 500 }),
    entry('b'),
    entry('c'),
    entry('live', { status: 200, requestId: 'r-live' }),
  ];
  const roots: RootRecords = new Map([['a', {
    ...record('a', 'failed'),
    replays: [{ entry: 'a1', requestId: 'r-a1', status: 500, time: 't' }],
  }], ['c', record('c', 'resolved')]]);
  const taken: TakenIds = new Map([['a', { requestId: 'r-live', entry: 'live', live: true }], ['b', {
    requestId: 'r-x',
    live: false,
  }], ['c', { requestId: 'r-live', entry: 'live', live: true }]]);
  const failures = entries.filter((e) => e.status >= 400);
  assert.deepEqual(openFailures(failures, { entries, roots, taken }).map((e) => e.id), []);
  assert.deepEqual(openFailures(failures, { entries, roots }).map((e) => e.id), ['a', 'b']);
  const a = resolutionFor(entries[1]!, roots, taken)!;
  assert.deepEqual(a, {
    root: 'a',
    state: 'resolved',
    delivery: { requestId: 'r-live', entry: 'live', live: true },
    replays: roots.get('a')!.replays,
  });
  assert.equal(describeResolution(a), 'resolved by delivery live (accepted live)');
  assert.equal(
    describeResolution(resolutionFor(entries[2]!, roots, taken)!),
    'resolved by delivery request r-x (accepted by a replay)',
  );
  assert.equal(describeResolution(resolutionFor(entries[3]!, roots, taken)!), 'resolved by hand');
});

test('planReplay() and describePlan(): each original once; resolved, succeeded and stale ones need --force, a body not kept never runs; the line counts each reason', () => {
  const entries = [
    entry('a'),
    entry('a1', { replayOf: 'a' }),
    entry('b'),
    entry('c', { status: 202 }),
    entry('s', { signature: { scheme: 'stripe', ok: false, why: 'stale-timestamp' } }),
    entry('m', { body: { ...body, truncated: true } }),
    entry('n', { bodyOmitted: 'not-read' }, false),
  ];
  const roots: RootRecords = new Map([['b', record('b', 'resolved')]]);
  const plan = planReplay(entries, { entries, roots }, false);
  assert.deepEqual([plan.run.map((e) => e.id), plan.forced, plan.skipped.map((s) => `${s.entry.id}:${s.why}`)], [
    ['a'],
    [],
    ['a1:again', 'b:resolved', 'c:succeeded', 's:stale', 'm:not-kept', 'n:not-kept'],
  ]);
  assert.equal(
    describePlan(plan),
    'will replay 1 request, skip 6: 1 already counted with their original; 1 resolved already, by a replay or by hand (--force replays); 1 that succeeded (--force replays); 1 signed too far from the clock when they arrived (--force replays, if genuine); 2 with no body kept (cannot be replayed)',
  );
  const forced = planReplay(entries, { entries, roots }, true);
  assert.deepEqual([forced.run.map((e) => e.id), forced.forced], [['a', 'b', 'c', 's'], ['b', 'c', 's']]);
  assert.equal(
    describePlan(forced),
    'will replay 4 requests (3 forced), skip 3: 1 already counted with their original; 2 with no body kept (cannot be replayed)',
  );
  // A replay whose original left the ledger runs for it (the server replays its bytes).
  const orphan = [entry('x1', { replayOf: 'x' }), entry('x2', { replayOf: 'x' })];
  assert.deepEqual(planReplay(orphan, { entries: orphan, roots: new Map() }, false).run.map((e) => e.id), ['x1']);
  assert.equal(describePlan({ run: [], forced: [], skipped: [] }), 'will replay 0 requests');
});

test('planReplay(): a request whose run was retried is skipped, forced or not, and the line says its run was retried', () => {
  const entries = [entry('r', { status: 202 }), entry('f')];
  const retried: RootRecord = { ...record('r', 'succeeded'), replays: [], retries: [{ run: 'x', as: 'y', time: 't' }] };
  const roots: RootRecords = new Map([['r', retried], ['f', { ...retried, root: 'f' }]]);
  for (const force of [false, true]) {
    const plan = planReplay(entries, { entries, roots }, force);
    assert.deepEqual([plan.run, plan.skipped.map((s) => `${s.entry.id}:${s.why}`)], [[], ['r:retried', 'f:retried']]);
    assert.equal(
      describePlan(plan),
      'will replay 0 requests, skip 2: 2 whose run was retried (runs retry goes on with them)',
    );
  }
  assert.equal(
    openFailures([entries[1]!], { entries, roots }).length,
    0,
    'a failure whose run was retried is resolved',
  );
});
