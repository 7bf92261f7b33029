import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { test, type TestContext } from 'node:test';
import { buildConfig } from '../lib/config/load.ts';
import type { Config } from '../lib/config/types.ts';
import { admitEvents, reserveHookRuns, reserveRuns, type RunQueue, unavailable } from '../lib/edge/capacity.ts';
import type { RunSpec } from '../lib/model/actions.ts';
import { HttpError } from '../lib/errors.ts';
import { Store } from '../lib/store/journal/store.ts';
import { JournalReplacedError } from '../lib/store/journal/journal.ts';
import { tempDir } from './_dir.ts';
import { defer } from './_cleanup.ts';

async function config(hooks: Record<string, unknown>): Promise<Config> {
  const built = await buildConfig({ hooks: { enabled: true, token: 'admission-token-0123456789', ...hooks } }, {
    file: null,
    env: {},
    dir: tmpdir(),
  });
  assert.ok(built.ok);
  return built.config;
}

async function store(t: TestContext): Promise<Store> {
  const dir = await tempDir(t, 'admission-');
  const { store } = await Store.open(dir, { idempotencyTtlMs: 60_000 });
  defer(t, () => store.close());
  return store;
}

test('reserveRuns() holds slots until released, counts them with the queue depth, and answers 503 with Retry-After past the bound', async () => {
  const c = await config({ maxQueuedRuns: 3 });
  const queue: RunQueue = { enqueue: () => {}, depth: 1 };
  const first = reserveRuns(queue, 2, c);
  assert.throws(
    () => reserveRuns(queue, 1, c),
    (e: unknown) => e instanceof HttpError && e.status === 503 && e.headers['retry-after'] === '30',
  );
  first();
  reserveRuns(queue, 2, c)();
  assert.throws(() => reserveRuns(queue, 3, c), HttpError, 'a batch counts all its runs');
  assert.doesNotThrow(() => reserveRuns(undefined, 99, c)());
  assert.doesNotThrow(() => reserveRuns(queue, 0, c)());
});

test("reserveHookRuns() holds each hook's slots against its own maxQueued, answering 503 ERR_HOOK_BACKLOG for that hook only", async () => {
  const c = await config({
    agent: { maxQueued: 1 },
    mappings: [{ id: 'ci', match: { path: 'ci' }, messageTemplate: 'x', maxQueued: 3 }, {
      id: 'free',
      match: { path: 'free' },
      messageTemplate: 'x',
    }],
  });
  const depths: Record<string, number> = { ci: 1 };
  const queue: RunQueue = { enqueue: () => {}, depth: 1, depthOf: (hook) => depths[hook] ?? 0 };
  const runs = (mapping: string | undefined, n: number) =>
    Array.from({ length: n }, () => ({ ...(mapping === undefined ? {} : { mapping }) }) as RunSpec);
  const refusedFor = (hook: string) => (e: unknown) =>
    e instanceof HttpError && e.status === 503 && e.code === 'ERR_HOOK_BACKLOG' &&
    e.headers['retry-after'] === '30' && e.message.includes(JSON.stringify(hook));
  const held = reserveHookRuns(queue, runs('ci', 2), c);
  assert.throws(() => reserveHookRuns(queue, runs('ci', 1), c), refusedFor('ci'), 'queued 1 + held 2 + 1 > 3');
  assert.doesNotThrow(() => reserveHookRuns(queue, runs('free', 500), c)(), 'a hook with no maxQueued');
  const agent = reserveHookRuns(queue, runs(undefined, 1), c);
  assert.throws(() => reserveHookRuns(queue, runs(undefined, 1), c), refusedFor('agent'));
  assert.throws(
    () => reserveHookRuns(queue, [...runs('free', 1), ...runs(undefined, 1)], c),
    refusedFor('agent'),
    'a batch is refused whole',
  );
  held();
  agent();
  reserveHookRuns(queue, runs('ci', 2), c)();
  assert.throws(() => reserveHookRuns(queue, runs('ci', 3), c), refusedFor('ci'), 'a batch counts all its runs');
  const none = await config({});
  assert.doesNotThrow(() => reserveHookRuns(queue, runs('ci', 99), none)(), 'nothing counted with no maxQueued set');
  assert.doesNotThrow(() => reserveHookRuns(undefined, runs('ci', 99), c)());
});

test('admitEvents() answers 413 naming the field past hooks.maxEventBytes, counted in UTF-8 bytes', async (t) => {
  const c = await config({ maxEventBytes: 4 });
  const s = await store(t);
  assert.doesNotThrow(() => admitEvents(s, c, ['abcd'], () => 'text'));
  assert.throws(
    () => admitEvents(s, c, ['ok', 'ééé'], (i) => `mapping m: wake text [${i}]`),
    (e: unknown) =>
      e instanceof HttpError && e.status === 413 && e.code === 'ERR_FIELD_TOO_LARGE' &&
      e.message === 'mapping m: wake text [1]: is 6 bytes; the limit is 4 (hooks.maxEventBytes)',
  );
  assert.doesNotThrow(() => admitEvents(s, c, [], () => 'text'));
});

test('admitEvents() answers 503 with Retry-After once the unconsumed backlog would pass its bounds', async (t) => {
  const s = await store(t);
  await s.addEvent({ kind: 'system', text: 'one', source: 'wake' });
  await s.addEvent({ kind: 'heartbeat', text: 'not counted', source: 'schedule' });
  const byCount = await config({ maxBacklogEvents: 2 });
  admitEvents(s, byCount, ['two'], () => 'text');
  assert.throws(
    () => admitEvents(s, byCount, ['two', 'three'], () => 'text'),
    (e: unknown) => e instanceof HttpError && e.status === 503 && e.headers['retry-after'] === '30',
  );
  const byBytes = await config({ maxBacklogBytes: 5 });
  admitEvents(s, byBytes, ['tw'], () => 'text');
  assert.throws(() => admitEvents(s, byBytes, ['two'], () => 'text'), HttpError);
});

test('unavailable() turns a replaced-journal refusal into 503 with Retry-After: 1 and leaves other errors as they are', () => {
  const mapped = unavailable(new JournalReplacedError('/x/journal.jsonl'));
  assert.ok(mapped instanceof HttpError && mapped.status === 503 && mapped.headers['retry-after'] === '1');
  const other = new Error('disk full');
  assert.equal(unavailable(other), other);
});
