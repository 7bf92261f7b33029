// Daily budgets per hook end to end, on a clock the spec sets: the app on a real socket over a real
// store, its run queue calling a local OpenAI-compatible model, the day's end passed by moving the
// clock (the queue is then asked again, as its timer would at that time).
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { Runner } from '../lib/runtime/runner.ts';
import { providerRegistry } from '../lib/runtime/providers/registry.ts';
import { Store } from '../lib/store/journal/store.ts';
import { Transcripts } from '../lib/store/journal/transcripts.ts';
import type { RunRecord } from '../lib/model/records.ts';
import { type AppHarness, startApp } from './_app.ts';
import type { AlertNote } from '../lib/model/alerts.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { fake } from './_fake-server.ts';
import { post, type Reply } from './_http.ts';
import { openAiCompletion } from './_turn.ts';
import { until } from './_until.ts';

const TOKEN = 'budget-e2e-token-0123456789abcdef';

/** A clock the spec moves: it runs at the wall clock's pace from the time it was last set to. */
function clock(iso: string): { now: () => number; set: (iso: string) => void } {
  let offset = Date.parse(iso) - Date.now();
  return { now: () => Date.now() + offset, set: (to) => void (offset = Date.parse(to) - Date.now()) };
}

async function model(t: TestContext): Promise<{ url: string; calls: () => number }> {
  let calls = 0;
  const server = await fake(t, (_req, res: ServerResponse) => {
    calls++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(openAiCompletion('done')));
  });
  return { url: `${server.url}/v1`, calls: () => calls };
}

interface Served {
  app: AppHarness;
  store: Store;
  runner: Runner;
  /** Stops the runner, the listener and the store, as a restart does. */
  stop(): Promise<void>;
}

/** The app and its run queue over the state in `dir`, on `now`. */
async function serve(
  t: TestContext,
  dir: string,
  now: () => number,
  budget: unknown,
  modelUrl: string,
  hooks: Record<string, unknown> = { agent: { budget } },
  noted: AlertNote[] = [],
): Promise<Served> {
  const { store } = await Store.open(join(dir, 'state'), { idempotencyTtlMs: 60_000, now });
  let runner: Runner | undefined;
  const app = await startApp(t, {
    dir,
    store,
    token: TOKEN,
    raw: {
      hooks,
      agents: { defaults: { model: 'fake/m', timeoutSeconds: 60 } },
      models: { providers: { fake: { api: 'openai-completions', baseUrl: modelUrl } } },
    },
    with: ({ config, log }) => {
      runner = new Runner({
        store,
        config,
        providerFor: providerRegistry(config.providers),
        transcripts: new Transcripts(join(dir, 'state')),
        heartbeat: { request() {} },
        log,
        now,
      });
      runner.start();
      return { runs: runner, clock: now, alerts: { note: (n: AlertNote) => void noted.push(n) } };
    },
  });
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= (async () => {
    await app.stop();
    await runner!.stop();
    await store.close();
  })());
  defer(t, stop);
  return { app, store, runner: runner!, stop };
}

const agent = (url: string, n: number): Promise<Reply> =>
  post(url, '/hooks/agent', {
    headers: { authorization: `Bearer ${TOKEN}` },
    body: { message: `run ${n}`, deliver: false, wakeMode: 'next-heartbeat' },
  });

function finished(store: Store, count: number): Promise<RunRecord[]> {
  return until(`${count} runs to finish`, () => {
    const done = store.runs().filter((r) => r.status === 'ok');
    return done.length >= count ? done : undefined;
  });
}

test('budget wait: runsPerDay 3 makes the 4th wait for the next day (Berlin, the night of the DST change) and posts one event', async (t) => {
  const m = await model(t);
  // 23:00 in Berlin: the 28th ends at 23:00 UTC, and the 29th is 23 hours long.
  const time = clock('2026-03-28T22:00:00Z');
  const noted: AlertNote[] = [];
  const s = await serve(
    t,
    await tempDir(t, 'budget-wait-'),
    time.now,
    {
      runsPerDay: 3,
      over: 'wait',
      timeZone: 'Europe/Berlin',
    },
    m.url,
    undefined,
    noted,
  );
  const answers: Reply[] = [];
  for (const n of [1, 2, 3, 4]) answers.push(await agent(s.app.url, n));
  assert.deepEqual(answers.map((a) => a.status), [202, 202, 202, 202]);
  assert.deepEqual(answers.map((a) => a.body['heldUntil'] ?? null), [null, null, null, '2026-03-28T23:00:00.000Z']);
  await finished(s.store, 3);
  const fourth = s.store.run(answers[3]!.body['runId'] as string)!;
  assert.deepEqual([fourth.status, fourth.notBefore], ['pending', '2026-03-28T23:00:00.000Z']);
  assert.equal(m.calls(), 3, 'the fourth made no model call on the 28th');

  // One event in the main session, one warning: not one per request past the budget.
  const fifth = await agent(s.app.url, 5);
  assert.equal(fifth.body['heldUntil'], '2026-03-28T23:00:00.000Z');
  const notices = s.store.events().filter((e) => e.source === 'budget');
  assert.deepEqual(notices.map((e) => [e.kind, e.mode, e.text]), [[
    'system',
    'next-heartbeat',
    'Budget reached: hook agent has used its 3 runs for 2026-03-28 (Europe/Berlin); further runs wait for the next day.',
  ]]);
  assert.equal(s.app.lines.filter((l) => l['msg'] === 'hook budget reached' && l['level'] === 'warn').length, 1);
  // And the owner's alerts hear of it once (alerts.on "budget"), by hook and code.
  assert.deepEqual(noted, [{ kind: 'budget', hook: 'agent', code: 'ERR_BUDGET_EXCEEDED' }]);

  // Past midnight in Berlin the held runs start, charged to the 29th.
  time.set('2026-03-28T23:00:01Z');
  s.runner.recheck();
  const done = await finished(s.store, 5);
  for (const run of done.filter((r) => r.notBefore !== undefined)) {
    assert.ok(Date.parse(run.startedAt!) >= Date.parse(run.notBefore!), `${run.startedAt} >= ${run.notBefore}`);
  }
  assert.equal(m.calls(), 5);
  assert.deepEqual(s.store.budget('agent', '2026-03-29'), { used: 2, told: false });
});

test('budget reject: past runsPerDay, 429 ERR_BUDGET_EXCEEDED until midnight; the spent budget and its one event survive a restart', async (t) => {
  const m = await model(t);
  const dir = await tempDir(t, 'budget-reject-');
  const time = clock('2026-11-27T12:00:00Z');
  const budget = { runsPerDay: 2, over: 'reject' };
  const first = await serve(t, dir, time.now, budget, m.url);
  const answers: Reply[] = [];
  for (const n of [1, 2, 3, 4]) answers.push(await agent(first.app.url, n));
  assert.deepEqual(answers.map((a) => [a.status, a.body['code'] ?? null]), [
    [202, null],
    [202, null],
    [429, 'ERR_BUDGET_EXCEEDED'],
    [429, 'ERR_BUDGET_EXCEEDED'],
  ]);
  const retry = Number(answers[2]!.headers['retry-after']);
  assert.ok(retry > 43_000 && retry <= 43_200, `Retry-After ${retry}: the seconds until midnight UTC`);
  await finished(first.store, 2);
  assert.equal(first.store.events().filter((e) => e.source === 'budget').length, 1);
  await first.stop();

  // A restart does not reset the day's count, nor post the notice again.
  const second = await serve(t, dir, time.now, budget, m.url);
  const after = await agent(second.app.url, 5);
  assert.deepEqual([after.status, after.body['code']], [429, 'ERR_BUDGET_EXCEEDED']);
  assert.equal(second.store.events().filter((e) => e.source === 'budget').length, 1);
  assert.equal(second.app.lines.filter((l) => l['msg'] === 'hook budget reached').length, 0);

  time.set('2026-11-28T00:00:01Z');
  const tomorrow = await agent(second.app.url, 6);
  assert.equal(tomorrow.status, 202, tomorrow.text);
  await finished(second.store, 3);
  assert.equal(m.calls(), 3, 'the refused requests made no model call');
});

test('budget counts the runs that start: requests that join a coalescing run are charged nothing', async (t) => {
  const m = await model(t);
  const time = clock('2026-11-27T12:00:00Z');
  const s = await serve(t, await tempDir(t, 'budget-coalesce-'), time.now, null, m.url, {
    mappings: [{
      id: 'pushes',
      match: { path: 'pushes' },
      action: 'agent',
      deliver: false,
      messageTemplate: 'push to {{repo}}',
      coalesce: { key: '{{repo}}', windowSeconds: 3600 },
      budget: { runsPerDay: 1, over: 'reject' },
    }],
  });
  const push = (repo: string) =>
    post(s.app.url, '/hooks/pushes', { headers: { authorization: `Bearer ${TOKEN}` }, body: { repo } });
  const joined = [await push('a/b'), await push('a/b'), await push('a/b')];
  assert.deepEqual(joined.map((a) => a.status), [202, 202, 202]);
  assert.equal(new Set(joined.map((a) => a.body['runId'])).size, 1, 'one run');
  assert.deepEqual(s.store.budget('pushes', '2026-11-27'), { used: 1, told: false });
  const other = await push('c/d');
  assert.deepEqual([other.status, other.body['code']], [429, 'ERR_BUDGET_EXCEEDED']);
});
