// The run queue asking each waiting run its rules (can-start.ts): lanes per hook, a rule that holds
// a run until a time, and a recheck after a rule's state changed. The model is in-process and
// answers a run only when the spec says so.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import type { RunSpec } from '../lib/model/actions.ts';
import type { RunRecord } from '../lib/model/records.ts';
import type { Attempt } from '../lib/retry.ts';
import type { StartRule } from '../lib/runtime/can-start.ts';
import { Runner } from '../lib/runtime/runner.ts';
import type { RunnerOptions } from '../lib/runtime/context.ts';
import { Store } from '../lib/store/journal/store.ts';
import { Transcripts } from '../lib/store/journal/transcripts.ts';
import { silentLogger, specConfig } from './_app.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { until } from './_until.ts';

interface Queue {
  runner: Runner;
  store: Store;
  dir: string;
  providerFor: RunnerOptions['providerFor'];
  /** The prompts the model was asked, in order; each answered by `answer`. */
  asked: string[];
  /** When each prompt was asked (Date.now()). */
  askedAt: Map<string, number>;
  /** Answers the model's call for `prompt`. */
  answer(prompt: string): void;
  run(over: Partial<RunSpec>): Promise<RunRecord>;
  done(run: RunRecord): Promise<void>;
}

async function queue(t: TestContext, raw: Record<string, unknown>, rules: StartRule[] = []): Promise<Queue> {
  const dir = await tempDir(t, 'rules-');
  const config = await specConfig({ agents: { defaults: { model: 'fake/m' } }, ...raw }, dir);
  const { store } = await Store.open(join(dir, 'state'), { idempotencyTtlMs: 60_000 });
  const asked: string[] = [];
  const askedAt = new Map<string, number>();
  const open = new Map<string, (a: Attempt<string>) => void>();
  const providerFor: RunnerOptions['providerFor'] = () => ({
    complete: (request) =>
      new Promise((resolve) => {
        asked.push(request.prompt);
        askedAt.set(request.prompt, Date.now());
        open.set(request.prompt, resolve);
      }),
  });
  const runner = new Runner({
    store,
    config,
    providerFor,
    transcripts: new Transcripts(join(dir, 'state')),
    heartbeat: { request() {} },
    log: silentLogger,
    rules,
  });
  defer(t, async () => {
    for (const resolve of open.values()) resolve({ ok: true, value: 'late' });
    await runner.stop();
    await store.close();
  });
  return {
    runner,
    store,
    dir,
    providerFor,
    asked,
    askedAt,
    answer(prompt) {
      open.get(prompt)!({ ok: true, value: `done ${prompt}` });
      open.delete(prompt);
    },
    async run(over) {
      const spec: RunSpec = {
        runId: randomUUID(),
        hook: 'agent',
        name: 'Test',
        message: 'hello',
        sessionKey: `hook:${randomUUID()}`,
        agentId: 'main',
        wakeMode: 'next-heartbeat',
        deliver: false,
        channel: 'last',
        ...over,
      };
      const [record] = (await store.commit({ runs: [spec] })).runs as [RunRecord];
      runner.enqueue(record);
      return record;
    },
    async done(run) {
      await until(`run ${run.runId} to finish`, () => store.run(run.runId)?.status === 'ok');
    },
  };
}

const MAPPINGS = [
  { id: 'slow', match: { path: 'slow' }, messageTemplate: 'x', concurrency: 1 },
  { id: 'fast', match: { path: 'fast' }, messageTemplate: 'x' },
];

test("Runner: a hook with concurrency 1 runs one run at a time while another hook's runs pass its waiting ones", async (t) => {
  const q = await queue(t, {
    hooks: { mappings: MAPPINGS },
    agents: { defaults: { model: 'fake/m', maxConcurrent: 4 } },
  });
  const slow = [await q.run({ mapping: 'slow', message: 's1' }), await q.run({ mapping: 'slow', message: 's2' })];
  const fast = [await q.run({ mapping: 'fast', message: 'f1' }), await q.run({ mapping: 'fast', message: 'f2' })];
  // s1 holds the slow lane; s2 waits in it, and the fast runs queued behind it start at once.
  await until('the fast runs to be asked', () => q.asked.includes('f1') && q.asked.includes('f2'));
  assert.deepEqual(q.asked.slice().sort(), ['f1', 'f2', 's1']);
  assert.deepEqual(Object.fromEntries(q.runner.hookLoads()), {
    slow: { queued: 1, running: 1 },
    fast: { queued: 0, running: 2 },
  });
  assert.equal(q.runner.depthOf('slow'), 2);
  q.answer('f1');
  q.answer('f2');
  for (const run of fast) await q.done(run);
  assert.equal(q.asked.includes('s2'), false, 'the slow lane still holds its second run');
  q.answer('s1');
  await until('the second slow run to be asked', () => q.asked.includes('s2'));
  q.answer('s2');
  for (const run of slow) await q.done(run);
  await until('the queue to be empty', () => q.runner.depth === 0);
  assert.equal(q.runner.hookLoads().size, 0);
});

test('Runner: /agent runs have the lane hooks.agent sets, and the global maxConcurrent still bounds every lane', async (t) => {
  const q = await queue(t, {
    hooks: { agent: { concurrency: 2 }, mappings: MAPPINGS },
    agents: { defaults: { model: 'fake/m', maxConcurrent: 3 } },
  });
  for (const m of ['a1', 'a2', 'a3']) await q.run({ message: m });
  for (const m of ['f1', 'f2']) await q.run({ mapping: 'fast', message: m });
  await until('three runs asked', () => q.asked.length === 3);
  // The model is asked once each run's turn is ready, which need not be the order they started in.
  assert.deepEqual(q.asked.slice().sort(), ['a1', 'a2', 'f1'], "a3 waits in /agent's lane; f2 waits for a global slot");
  assert.deepEqual(Object.fromEntries(q.runner.hookLoads()), {
    agent: { queued: 1, running: 2 },
    fast: { queued: 1, running: 1 },
  });
  q.answer('f1');
  await until('f2 asked', () => q.asked.includes('f2'));
  assert.equal(q.asked.includes('a3'), false);
  q.answer('a1');
  await until('a3 asked', () => q.asked.includes('a3'));
});

test('Runner: a reload that widens a lane starts its waiting runs at once', async (t) => {
  const q = await queue(t, { hooks: { mappings: MAPPINGS } });
  await q.run({ mapping: 'slow', message: 's1' });
  await q.run({ mapping: 'slow', message: 's2' });
  await until('s1 asked', () => q.asked.includes('s1'));
  assert.equal(q.asked.includes('s2'), false);
  const wider = await specConfig({
    agents: { defaults: { model: 'fake/m' } },
    hooks: { mappings: [{ ...MAPPINGS[0], concurrency: 2 }, MAPPINGS[1]] },
  }, q.dir);
  q.runner.reconfigure({ config: wider, providerFor: q.providerFor });
  await until('s2 asked after the reload', () => q.asked.includes('s2'));
  assert.deepEqual(q.runner.hookStatus().find((h) => h.hook === 'slow'), {
    hook: 'slow',
    running: 2,
    queued: 0,
    concurrency: 2,
    maxQueued: null,
    coalescing: 0,
    coalesce: null,
  });
});

test('Runner: with no lane set, runs start as before (maxConcurrent, one at a time per session key, in order)', async (t) => {
  const q = await queue(t, { agents: { defaults: { model: 'fake/m', maxConcurrent: 2 } } });
  await q.run({ message: 'A1', sessionKey: 'hook:A' });
  await q.run({ message: 'A2', sessionKey: 'hook:A' });
  await q.run({ message: 'B1', sessionKey: 'hook:B', mapping: 'ci' });
  await q.run({ message: 'C1', sessionKey: 'hook:C' });
  await until('two runs asked', () => q.asked.length === 2);
  assert.deepEqual(q.asked.slice().sort(), ['A1', 'B1']);
  q.answer('A1');
  await until('A2 asked', () => q.asked.length === 3);
  assert.equal(q.asked[2], 'A2', 'the session key next, before C1 behind it');
});

test("Runner: a rule's timed wait asks the queue again when it ends, and recheck() asks at once", async (t) => {
  let openAt = Date.now() + 150;
  let gate = false;
  const timed: StartRule = (run) =>
    run.message === 'later' && Date.now() < openAt ? { rule: 'test', until: openAt } : null;
  const held: StartRule = (run) => run.message === 'gated' && !gate ? { rule: 'gate' } : null;
  const q = await queue(t, {}, [timed, held]);
  await q.run({ message: 'later' });
  await q.run({ message: 'gated' });
  await q.run({ message: 'now' });
  await until('the free run asked', () => q.asked.includes('now'));
  await until('the timed run asked once its wait ended', () => q.asked.includes('later'));
  assert.ok(q.askedAt.get('later')! >= openAt, 'not before its wait ended');
  assert.equal(q.asked.includes('gated'), false);
  gate = true;
  q.runner.recheck();
  await until('the gated run asked after recheck()', () => q.asked.includes('gated'));
  openAt = 0;
});
