import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RunSpec } from '../lib/model/actions.ts';
import type { CoalesceSpec } from '../lib/model/coalesce.ts';
import type { RunRecord } from '../lib/model/records.ts';
import { joinRun, joinsUndo, Windows } from '../lib/store/journal/coalesce-windows.ts';
import { Journal } from '../lib/store/journal/journal.ts';
import { checkLine } from '../lib/store/journal/records.ts';
import { readRuns } from '../lib/store/journal/read.ts';
import { Store, type StoreOptions } from '../lib/store/journal/store.ts';
import { withDir } from './_dir.ts';

const T0 = Date.UTC(2026, 10, 27, 12);

function clock(start = T0): { t: number; now: () => number } {
  const c = { t: start, now: () => c.t };
  return c;
}

async function open(dir: string, options: Partial<StoreOptions> = {}): Promise<Store> {
  return (await Store.open(dir, { idempotencyTtlMs: 60_000, ...options })).store;
}

function window(over: Partial<CoalesceSpec> = {}): CoalesceSpec {
  return {
    group: 'pushes\nacme/widgets',
    key: 'acme/widgets',
    windowSeconds: 30,
    maxWaitSeconds: 300,
    messages: 'latest',
    maxBytes: 1_000,
    ...over,
  };
}

function spec(runId: string, message: string, coalesce: CoalesceSpec | null = window()): RunSpec {
  return {
    runId,
    hook: 'github',
    name: 'Pushes',
    message,
    sessionKey: `hook:${runId}`,
    agentId: 'main',
    wakeMode: 'now',
    deliver: false,
    channel: 'last',
    requestId: `req-${runId}`,
    ...(coalesce === null ? {} : { coalesce }),
  };
}

test('Store.commit(): a run of an open window joins its pending run; the first opens the window, later ones count', async () => {
  await withDir(async (dir) => {
    const c = clock();
    const store = await open(dir, { now: c.now });
    const first = await store.commit({ runs: [spec('a', 'push 1')] });
    assert.equal(first.joined.size, 0);
    assert.deepEqual(first.runs[0]!.coalesce, {
      ...window(),
      count: 1,
      firstAt: new Date(T0).toISOString(),
      lastAt: new Date(T0).toISOString(),
    });
    c.t += 10_000;
    const second = await store.commit({ runs: [spec('b', 'push 2')] });
    assert.deepEqual(second.runs, []);
    assert.equal(second.joined.get('b')?.runId, 'a');
    const run = store.run('a')!;
    assert.deepEqual([run.message, run.coalesce?.count, run.coalesce?.lastAt], [
      'push 2',
      2,
      new Date(T0 + 10_000).toISOString(),
    ]);
    assert.equal(store.run('b'), null);
    assert.deepEqual([...store.openWindows()], [['agent', 1]]);
    await store.close();
  });
});

test('Store.commit(): past the quiet time, or maxWaitSeconds after the first, a run opens a new window', async () => {
  await withDir(async (dir) => {
    const c = clock();
    const store = await open(dir, { now: c.now });
    await store.commit({ runs: [spec('a', '1', window({ windowSeconds: 10, maxWaitSeconds: 25 }))] });
    for (const [id, at] of [['b', 9_000], ['c', 18_000], ['d', 24_999]] as const) {
      c.t = T0 + at;
      assert.equal((await store.commit({ runs: [spec(id, id, window({ windowSeconds: 10 }))] })).joined.size, 1, id);
    }
    c.t = T0 + 25_000;
    assert.equal(store.joining([spec('e', 'e')]).size, 0, 'maxWaitSeconds after the first closes it');
    const opened = await store.commit({ runs: [spec('e', 'e')] });
    assert.deepEqual(opened.runs.map((r) => r.runId), ['e']);
    c.t += 30_000;
    assert.equal(store.openWindows().size, 0);
    assert.equal((await store.commit({ runs: [spec('f', 'f')] })).runs.length, 1, 'quiet for windowSeconds');
    await store.close();
  });
});

test('Store.commit(): other groups, runs without a window and runs no longer pending open or join nothing', async () => {
  await withDir(async (dir) => {
    const store = await open(dir);
    await store.commit({ runs: [spec('a', 'a')] });
    const other = await store.commit({ runs: [spec('b', 'b', window({ group: 'other' })), spec('c', 'c', null)] });
    assert.deepEqual(other.runs.map((r) => r.runId), ['b', 'c']);
    assert.equal(other.runs[1]!.coalesce, undefined);
    await store.commit({ runUpdates: [{ runId: 'a', status: 'running' }] });
    assert.equal(store.joining([spec('d', 'd')]).size, 0, 'a started run takes no more requests');
    await store.close();
  });
});

test('Store.commit(): runs of one commit join the window one of them opened; two commits at once open one window', async () => {
  await withDir(async (dir) => {
    const store = await open(dir);
    const batch = await store.commit({ runs: [spec('a', '1'), spec('b', '2'), spec('c', '3')] });
    assert.deepEqual(batch.runs.map((r) => r.runId), ['a']);
    assert.deepEqual([...batch.joined].map(([planned, run]) => [planned, run.runId]), [['b', 'a'], ['c', 'a']]);
    assert.equal(store.run('a')!.coalesce!.count, 3);
    const together = await Promise.all([
      store.commit({ runs: [spec('x', 'x', window({ group: 'g' }))] }),
      store.commit({ runs: [spec('y', 'y', window({ group: 'g' }))] }),
    ]);
    assert.deepEqual(together.map((c) => c.runs.length), [1, 0]);
    assert.equal(together[1]!.joined.get('y')?.runId, 'x');
    await store.close();
  });
});

test('Store: a join and its idempotency key are one line; after a reopen and a compaction the window is as it was, and still open', async () => {
  await withDir(async (dir) => {
    const c = clock();
    const store = await open(dir, { now: c.now });
    await store.commit({ runs: [spec('a', '1', window({ messages: 'all' }))] });
    const idem = (_outcomes: unknown, joined: ReadonlyMap<string, RunRecord>) => ({
      scope: '/hooks/github',
      key: 'k2',
      status: 202,
      body: { runId: joined.get('b')?.runId ?? 'b', coalesced: joined.size > 0 },
    });
    await store.commit({ runs: [spec('b', '2', window({ messages: 'all' }))] }, idem);
    assert.deepEqual(store.replay('/hooks/github', 'k2')?.body, { runId: 'a', coalesced: true });
    await store.close();

    const reopened = await open(dir, { now: c.now, compactBytes: 1 });
    const run = reopened.run('a')!;
    assert.deepEqual([run.coalesce?.count, run.message], [2, 'Message 1:\n1\n\nMessage 2:\n2']);
    assert.deepEqual(reopened.replay('/hooks/github', 'k2')?.body, { runId: 'a', coalesced: true });
    // The next line passes compactBytes: the journal is rewritten from memory, the window with it.
    await reopened.commit({ runs: [spec('c', '3', window({ messages: 'all' }))] });
    await reopened.close();
    const compacted = await open(dir, { now: c.now });
    assert.equal(compacted.run('a')!.coalesce!.count, 3);
    assert.match(compacted.run('a')!.message, /Message 3:\n3$/);
    assert.deepEqual([...compacted.joining([spec('d', '4')])], ['d']);
    await compacted.close();
    const [read] = await readRuns(dir);
    assert.equal(read!.coalesce!.count, 3, 'the CLI reads the joins too');
  });
});

test('Store: with messages "all", a message past the window\'s bound is counted and left out', async () => {
  await withDir(async (dir) => {
    const store = await open(dir);
    const bound = window({ messages: 'all', maxBytes: 70 });
    await store.commit({ runs: [spec('a', 'x'.repeat(20), bound)] });
    await store.commit({ runs: [spec('b', 'y'.repeat(20), bound)] });
    await store.commit({ runs: [spec('c', 'z'.repeat(40), bound)] });
    const run = store.run('a')!;
    assert.deepEqual([run.coalesce!.count, run.coalesce!.leftOut], [3, 1]);
    assert.doesNotMatch(run.message, /z/);
    assert.ok(Buffer.byteLength(run.message) <= 70);
    await store.close();
  });
});

test('Store: a join whose line failed is taken back, and a join waits for the line that opened its window', async () => {
  await withDir(async (dir) => {
    const store = await open(dir);
    await store.commit({ runs: [spec('a', 'kept')] });
    const original = Journal.prototype.append;
    Object.defineProperty(Journal.prototype, 'append', {
      value: () => Promise.reject(new Error('disk full')),
      configurable: true,
      writable: true,
    });
    try {
      await assert.rejects(store.commit({ runs: [spec('b', 'lost')] }), /disk full/);
      assert.deepEqual([store.run('a')!.message, store.run('a')!.coalesce!.count], ['kept', 1]);
      // The opening line fails while a second request waits on it: the second opens a window of its own.
      const opening = store.commit({ runs: [spec('x', 'lost', window({ group: 'g' }))] });
      const joining = store.commit({ runs: [spec('y', 'y', window({ group: 'g' }))] });
      await assert.rejects(opening, /disk full/);
      await assert.rejects(joining, /disk full/);
    } finally {
      Object.defineProperty(Journal.prototype, 'append', { value: original, configurable: true, writable: true });
    }
    const opening = store.commit({ runs: [spec('x2', 'x', window({ group: 'g' }))] });
    const joining = store.commit({ runs: [spec('y2', 'y', window({ group: 'g' }))] });
    assert.equal((await joining).joined.get('y2')?.runId, 'x2');
    await opening;
    await store.close();
  });
});

test('joinRun() leaves a run without a window as it is; joinsUndo() puts back only what no later change replaced', () => {
  const plain = { ...spec('p', 'p', null), status: 'pending', acceptedAt: '', attempts: 0 } as RunRecord;
  assert.equal(joinRun(plain, { runId: 'p', at: '' }), plain);
  const runs = new Map<string, RunRecord>([['p', plain]]);
  const undo = joinsUndo(
    [{ runId: 'p', at: '' }, { runId: 'gone', at: '' }],
    (id) => runs.get(id),
    (id, r) => void runs.set(id, r),
  )!;
  const applied = { ...plain, message: 'joined' };
  runs.set('p', applied);
  undo.applied();
  runs.set('p', { ...applied, status: 'running' });
  undo.undo();
  assert.equal(runs.get('p')!.status, 'running', 'a later change stands');
  runs.set('p', applied);
  undo.undo();
  assert.equal(runs.get('p'), plain);
  assert.equal(joinsUndo(undefined, () => undefined, () => {}), null);
  assert.equal(new Windows().unwritten(undefined).length, 0);
});

test('checkLine(): a join entry of the wrong shape is left out, the rest of the line stands', () => {
  const { line, problems } = checkLine({
    t: 'commit',
    seq: 1,
    time: 't',
    joins: [{ runId: 'a', at: 't', message: 'm' }, { runId: '', at: 1 }],
  });
  assert.deepEqual((line as { joins?: unknown[] }).joins, [{ runId: 'a', at: 't', message: 'm' }]);
  assert.equal(problems.length > 0, true);
});
