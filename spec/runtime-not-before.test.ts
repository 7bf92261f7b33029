import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RunRecord } from '../lib/model/records.ts';
import type { QueueView } from '../lib/runtime/can-start.ts';
import { notBefore } from '../lib/runtime/not-before.ts';
import { Runner } from '../lib/runtime/runner.ts';
import { Store } from '../lib/store/journal/store.ts';
import { Transcripts } from '../lib/store/journal/transcripts.ts';
import { silentLogger, specConfig } from './_app.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { until } from './_until.ts';

const view = (now: string): QueueView => ({
  config: undefined as never,
  now: Date.parse(now),
  busySessions: new Set(),
  running: new Map(),
});

test('notBefore lets a run start with no time or a time passed, and holds it until a time ahead', () => {
  const run = (at?: string) => ({ runId: 'r', ...(at === undefined ? {} : { notBefore: at }) }) as RunRecord;
  assert.equal(notBefore(run(), 'agent', view('2026-11-27T10:00:00Z')), null);
  assert.equal(notBefore(run('2026-11-27T10:00:00Z'), 'agent', view('2026-11-27T10:00:00Z')), null);
  assert.deepEqual(notBefore(run('2026-11-27T10:00:01Z'), 'agent', view('2026-11-27T10:00:00Z')), {
    rule: 'held',
    until: Date.parse('2026-11-27T10:00:01Z'),
  });
});

test('the run queue starts a held run once its time comes (its one timer), and the runs behind it meanwhile', async (t) => {
  const dir = await tempDir(t, 'not-before-');
  const config = await specConfig({ agents: { defaults: { model: 'fake/m' } } }, dir);
  const { store } = await Store.open(join(dir, 'state'), { idempotencyTtlMs: 60_000 });
  const started: { prompt: string; at: number }[] = [];
  const runner = new Runner({
    store,
    config,
    providerFor: () => ({
      complete: async (request) => {
        started.push({ prompt: request.prompt, at: Date.now() });
        return { ok: true, value: 'done' };
      },
    }),
    transcripts: new Transcripts(join(dir, 'state')),
    heartbeat: { request() {} },
    log: silentLogger,
  });
  defer(t, async () => {
    await runner.stop();
    await store.close();
  });
  const spec = (message: string, at?: string) => ({
    runId: randomUUID(),
    hook: 'agent',
    name: 'Test',
    message,
    sessionKey: `hook:${randomUUID()}`,
    agentId: 'main',
    wakeMode: 'next-heartbeat' as const,
    deliver: false,
    channel: 'last' as const,
    ...(at === undefined ? {} : { notBefore: at }),
  });
  const heldUntil = Date.now() + 400;
  const { runs } = await store.commit({ runs: [spec('held', new Date(heldUntil).toISOString()), spec('free')] });
  for (const run of runs) runner.enqueue(run);
  await until('both runs to start', () => (started.length === 2 ? true : undefined));
  assert.match(started[0]!.prompt, /free/, 'the run behind the held one started first');
  assert.match(started[1]!.prompt, /held/);
  assert.ok(started[1]!.at >= heldUntil, 'not before its time');
});
