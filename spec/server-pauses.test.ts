import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { ErrorCode, HttpError } from '../lib/errors.ts';
import type { RunRecord } from '../lib/model/records.ts';
import { HookPauses } from '../lib/server/pauses.ts';
import { Store } from '../lib/store/journal/store.ts';
import { silentLogger } from './_app.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { until } from './_until.ts';

// A run queue that only holds runs: what pause reads of it and does to it.
function queue(runs: RunRecord[]) {
  const told = { kicks: 0, back: [] as string[] };
  return {
    told,
    waiting: () => runs,
    take(ids: readonly string[]) {
      const taken = runs.filter((r) => ids.includes(r.runId));
      runs.splice(0, runs.length, ...runs.filter((r) => !ids.includes(r.runId)));
      return taken;
    },
    enqueue(run: RunRecord) {
      told.back.push(run.runId);
      runs.push(run);
    },
    recheck() {
      told.kicks++;
    },
  };
}

async function setup(t: TestContext, hooks = ['ci', 'agent', 'wake']) {
  const dir = await tempDir(t, 'server-pauses-');
  const { store } = await Store.open(dir, { idempotencyTtlMs: 60_000 });
  defer(t, () => store.close());
  const committed = await store.commit({
    runs: [1, 2].map((n) => ({
      runId: `run-${n}`,
      hook: 'ci',
      mapping: 'ci',
      name: 'CI',
      message: `m${n}`,
      sessionKey: `s${n}`,
      agentId: 'main',
      wakeMode: 'next-heartbeat' as const,
      deliver: false,
      channel: 'last' as const,
      requestId: `req-${n}`,
    })),
  });
  const runner = queue([...committed.runs]);
  const beats: string[] = [];
  const pauses = new HookPauses({
    store,
    runner,
    heartbeat: { request: (why) => void beats.push(why) },
    hooks: () => hooks,
    log: silentLogger,
  });
  pauses.start();
  defer(t, () => pauses.stop());
  return { store, runner, pauses, beats };
}

const refused = (code: string) => (error: unknown) => error instanceof HttpError && error.code === code;

test('HookPauses: pause, list, resume; a `now` wake held asks for a heartbeat on resume; refusals carry their codes', async (t) => {
  const { store, runner, pauses, beats } = await setup(t);
  await assert.rejects(pauses.pause({ hook: 'nosuch' }), refused(ErrorCode.UnknownHook));
  await assert.rejects(pauses.pause({ hook: '' }), refused(ErrorCode.ControlBadRequest));
  await assert.rejects(pauses.pause({ hook: 'ci', forSeconds: 0 }), refused(ErrorCode.ControlBadRequest));
  await assert.rejects(pauses.resume({ hook: 'ci' }), refused(ErrorCode.NotPaused));
  await assert.rejects(pauses.drop({ hook: 'ci' }), refused(ErrorCode.NotPaused));

  const first = await pauses.pause({ hook: 'ci' });
  assert.equal(first.again, false);
  const again = await pauses.pause({ hook: 'ci', forSeconds: 3600 });
  assert.deepEqual([again.again, again.since, typeof again.until], [true, first.since, 'string']);
  await store.commit({
    events: [{ kind: 'system', text: 'held', source: 'hook:ci', mode: 'now', workHook: 'ci', requestId: 'req-9' }],
  });
  const [listed] = pauses.list();
  assert.deepEqual([listed?.hook, listed?.runs, listed?.wakes, listed?.outbox], ['ci', 2, 1, 0]);
  assert.equal(listed?.oldest, store.run('run-1')?.acceptedAt);
  assert.deepEqual(pauses.hooks().map((h) => [h.hook, h.paused?.runs]), [['ci', 2], ['agent', undefined], [
    'wake',
    undefined,
  ]]);

  const { resumed } = await pauses.resume({ all: true });
  assert.deepEqual(resumed.map((p) => p.hook), ['ci']);
  assert.equal(runner.told.kicks, 1);
  assert.deepEqual(beats, ['resume']);
  assert.deepEqual(store.events().map((e) => e.text), ['held']);
  assert.deepEqual((await pauses.resume({ all: true })).resumed, []);
});

test('HookPauses: drop plans, then discards the waiting runs and held wakes, marking each request; the hook stays paused', async (t) => {
  const { store, runner, pauses } = await setup(t);
  await pauses.pause({ hook: 'ci' });
  await store.commit({
    events: [{ kind: 'system', text: 'w', source: 'hook:ci', workHook: 'ci', requestId: 'req-3' }],
  });
  const plan = await pauses.drop({ hook: 'ci' });
  assert.deepEqual(plan, {
    hook: 'ci',
    dryRun: true,
    runs: ['run-1', 'run-2'],
    wakes: 1,
    outbox: [],
    requests: ['req-1', 'req-2', 'req-3'],
  });
  assert.equal(runner.waiting().length, 2, 'a plan takes nothing');
  const done = await pauses.drop({ hook: 'ci', dryRun: false });
  assert.deepEqual([done.dryRun, done.runs], [false, ['run-1', 'run-2']]);
  assert.deepEqual([store.run('run-1')?.status, store.run('run-1')?.error], [
    'dropped',
    'dropped while hook ci was paused',
  ]);
  assert.deepEqual(store.held(), []);
  assert.deepEqual(store.dropped('req-3'), { requestId: 'req-3', hook: 'ci', time: store.dropped('req-3')?.time });
  assert.notEqual(store.paused('ci'), null);
  assert.deepEqual(runner.waiting(), []);
});

test('HookPauses: a pause given an end resumes by itself when it passes', async (t) => {
  const { store, runner, pauses } = await setup(t);
  await pauses.pause({ hook: 'ci', forSeconds: 1 });
  await until('the pause to end and the queue to be told', () => (runner.told.kicks === 1 ? true : undefined));
  assert.equal(store.paused('ci'), null);
  assert.deepEqual(pauses.list(), []);
});
