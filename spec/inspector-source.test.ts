import assert from 'node:assert/strict';
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { ledgerSource } from '../lib/inspector/source.ts';
import type { LedgerEntry } from '../lib/model/ledger-entry.ts';
import { lookupEntry } from '../lib/store/ledger/find.ts';
import { LedgerTail } from '../lib/store/ledger/read.ts';
import { tempDir } from './_dir.ts';
import type { RootRecord } from '../lib/model/replays.ts';
import type { DeliveryTaken } from '../lib/edge/taken.ts';

// What the inspector page reads from a state directory's ledger: the list (and how many older
// entries a cut list leaves out), one entry, and what it became.

function entry(n: number, fields: Partial<LedgerEntry> = {}): LedgerEntry {
  return {
    id: `e${n}`,
    requestId: `r${n}`,
    time: new Date(1_800_000_000_000 + n).toISOString(),
    method: 'POST',
    path: '/hooks/wake',
    client: '127.0.0.1',
    lane: 'authenticated',
    auth: 'token',
    headers: { 'x-a': 'b' },
    status: 200,
    durationMs: 1,
    ...fields,
  };
}

async function source(
  t: TestContext,
  entries: LedgerEntry[],
  roots: RootRecord[] = [],
  takenJudge?: () => Promise<(entry: LedgerEntry) => DeliveryTaken | null>,
  runs: Record<string, unknown>[] = [],
) {
  const dir = await tempDir(t, 'inspector-source-');
  await mkdir(join(dir, 'ledger'));
  await writeFile(join(dir, 'ledger', 'a-1.jsonl'), entries.map((e) => `${JSON.stringify(e)}\n`).join(''));
  const store = {
    run: (id: string) => (runs.find((r) => r['runId'] === id) ?? null) as never,
    events: () => [],
    outboxEntry: () => null,
    notice: () => null,
    root: (id: string) => roots.find((r) => r.root === id) ?? null,
    changes: () => 0,
  };
  return ledgerSource({
    tail: new LedgerTail(dir),
    find: (id) => lookupEntry(dir, id),
    store,
    replay: async () => ({}),
    ...(takenJudge === undefined ? {} : { takenJudge }),
  });
}

test('list() takes the newest entries that pass, without headers or body; asked, it counts the older ones that pass too', async (t) => {
  const all = Array.from(
    { length: 12 },
    (_, i) =>
      entry(i + 1, {
        status: i % 3 === 0 ? 500 : 200,
        body: { encoding: 'utf8', data: '{}', bytes: 2, truncated: false },
      }),
  );
  const s = await source(t, all);
  const failed = await s.list({ status: 'failed', limit: 2 });
  assert.deepEqual(failed.entries.map((e) => (e as LedgerEntry).id), ['e10', 'e7']);
  assert.equal(failed.more, undefined, 'polling never reads the whole ledger for a count');
  const first = failed.entries[0] as Record<string, unknown>;
  assert.equal(first['headers'], undefined);
  assert.equal(first['body'], undefined);
  assert.equal(first['failed'], true);
  assert.equal(first['replayable'], true);
  assert.deepEqual(await s.list({ status: 'failed', limit: 2, more: true }).then((r) => [r.entries.length, r.more]), [
    2,
    2,
  ]);
  assert.deepEqual(await s.list({ status: 'failed', limit: 10, more: true }).then((r) => [r.entries.length, r.more]), [
    4,
    0,
  ]);
  assert.deepEqual(await s.list({ text: 'nothing', limit: 10, more: true }).then((r) => [r.entries.length, r.more]), [
    0,
    0,
  ]);
});

// A tail that counts the reads of entries a list makes.
class CountingTail extends LedgerTail {
  reads = 0;
  override newest(limit: number, keep: (entry: LedgerEntry) => boolean, fresh?: boolean): Promise<LedgerEntry[]> {
    this.reads++;
    return super.newest(limit, keep, fresh);
  }
}

test('list() answers the version it read at; asked again with it while nothing changed, it reads no entry and answers unchanged; an appended line, a store change, another filter or the next minute is a new version', async (t) => {
  const dir = await tempDir(t, 'inspector-source-');
  await mkdir(join(dir, 'ledger'));
  const file = join(dir, 'ledger', 'a-1.jsonl');
  await writeFile(file, [entry(1), entry(2)].map((e) => `${JSON.stringify(e)}\n`).join(''));
  const tail = new CountingTail(dir);
  let changes = 0;
  let now = 1_800_000_000_000;
  const store = { run: () => null, events: () => [], outboxEntry: () => null, notice: () => null, root: () => null };
  const s = ledgerSource({
    tail,
    find: (id) => lookupEntry(dir, id),
    store: { ...store, changes: () => changes },
    replay: async () => ({}),
    now: () => now,
  });
  const ids = (answer: { entries: unknown[] }) => answer.entries.map((e) => (e as LedgerEntry).id);
  const first = await s.list({ limit: 10 });
  assert.deepEqual(ids(first), ['e2', 'e1']);
  assert.equal(typeof first.version, 'string');
  const reads = tail.reads;
  for (let i = 0; i < 3; i++) {
    assert.deepEqual(await s.list({ limit: 10, since: first.version! }), {
      entries: [],
      unchanged: true,
      version: first.version,
    });
  }
  assert.equal(tail.reads, reads, 'a poll with nothing new reads no entry');

  await appendFile(file, `${JSON.stringify(entry(3))}\n`);
  const appended = await s.list({ limit: 10, since: first.version! });
  assert.deepEqual([ids(appended), appended.unchanged], [['e3', 'e2', 'e1'], undefined]);
  assert.notEqual(appended.version, first.version);

  changes++;
  const changed = await s.list({ limit: 10, since: appended.version! });
  assert.deepEqual([ids(changed).length, changed.unchanged], [3, undefined]);
  const other = await s.list({ limit: 10, status: '5xx', since: changed.version! });
  assert.deepEqual([ids(other), other.unchanged], [[], undefined]);
  assert.equal((await s.list({ limit: 10, since: changed.version! })).unchanged, true);
  now += 60_000;
  assert.equal((await s.list({ limit: 10, since: changed.version! })).unchanged, undefined);
});

test('show() answers one entry with what it became, or null', async (t) => {
  const s = await source(t, [entry(1, { became: { runs: ['run-1'] } })]);
  assert.equal(await s.show('nope'), null);
  const shown = (await s.show('e1')) as Record<string, unknown>;
  assert.deepEqual(shown['became'], { runs: [{ runId: 'run-1', state: 'no longer kept' }] });
  assert.equal(shown['replayable'], false);
});

test("list() and show() hand the page each entry's cause, and why in words", async (t) => {
  const cause = { kind: 'transform' as const, text: 'threw: boom\u202e', at: 'ci.mjs:3' };
  const s = await source(t, [entry(1, { status: 500, code: 'ERR_MAPPING_FAILED', cause }), entry(2)]);
  const [second, first] = (await s.list({ limit: 10 })).entries as Record<string, unknown>[];
  assert.deepEqual([first!['cause'], first!['why']], [cause, 'transform ci.mjs:3 threw: boom']);
  assert.deepEqual([second!['cause'], second!['why']], [undefined, undefined]);
  const shown = (await s.show('e1')) as Record<string, unknown>;
  assert.deepEqual([shown['cause'], shown['why']], [cause, 'transform ci.mjs:3 threw: boom']);
});

test('each entry of a root that was replayed or resolved carries its resolution; the failed filter leaves resolved roots out, failed-all keeps them', async (t) => {
  const replay = { entry: 'e3', requestId: 'r3', status: 200, time: 't3' };
  const roots: RootRecord[] = [
    {
      root: 'e1',
      state: 'succeeded',
      replays: [{ entry: 'e2', requestId: 'r2', status: 401, time: 't2' }, replay],
      time: 't3',
    },
    { root: 'e4', state: 'resolved', replays: [], resolvedAt: 't5', time: 't5' },
  ];
  const s = await source(t, [
    entry(1, { status: 401 }),
    entry(2, { status: 401, replayOf: 'e1' }),
    entry(3, { replayOf: 'e1' }),
    entry(4, { status: 500 }),
    entry(5, { status: 500 }),
  ], roots);
  const listed = (await s.list({ limit: 10 })).entries as Record<string, unknown>[];
  assert.deepEqual(listed.map((e) => (e['resolution'] as { state?: string } | undefined)?.state ?? '-'), [
    '-',
    'resolved',
    'succeeded',
    'succeeded',
    'succeeded',
  ]);
  assert.deepEqual(listed.at(-1)!['resolution'], {
    root: 'e1',
    state: 'succeeded',
    by: replay,
    replays: roots[0]!.replays,
  });
  assert.deepEqual((await s.list({ status: 'failed', limit: 10 })).entries.map((e) => (e as LedgerEntry).id), ['e5']);
  assert.deepEqual((await s.list({ status: 'failed-all', limit: 10 })).entries.map((e) => (e as LedgerEntry).id), [
    'e5',
    'e4',
    'e2',
    'e1',
  ]);
  assert.deepEqual(((await s.show('e2')) as Record<string, unknown>)['resolution'], {
    root: 'e1',
    state: 'succeeded',
    by: replay,
    replays: roots[0]!.replays,
  });
  assert.equal(((await s.show('e5')) as Record<string, unknown>)['resolution'], undefined);
});

test("a failure whose delivery id another request took (the provider's retry accepted live) is resolved by that delivery: left out of the failed filter, kept in failed-all, its resolution names it", async (t) => {
  const refused = entry(1, { status: 401, code: 'ERR_UNAUTHORIZED', requestId: 'gh-refused', hook: 'github' });
  const retry = entry(2, { requestId: 'gh-retry', hook: 'github' });
  const other = entry(3, { status: 401, code: 'ERR_UNAUTHORIZED', requestId: 'gh-other', hook: 'github' });
  // The server's judge: e1's and e2's delivery id taken by gh-retry; e3's by nobody.
  const judge = (
    e: LedgerEntry,
  ):
    | DeliveryTaken
    | null => (e.id === 'e3'
      ? { scope: 'github', key: 'd-3', by: null }
      : { scope: 'github', key: 'd-1', by: { requestId: 'gh-retry' } });
  const s = await source(t, [refused, retry, other], [], async () => judge);
  const listed = async (status: string) => (await s.list({ limit: 10, status })).entries as Record<string, unknown>[];
  const ids = async (status: string) => (await listed(status)).map((e) => e['id']);
  assert.deepEqual(await ids('failed'), ['e3']);
  assert.deepEqual(await ids('failed-all'), ['e3', 'e1']);
  const delivered = {
    root: 'e1',
    state: 'resolved',
    delivery: { requestId: 'gh-retry', entry: 'e2', live: true },
    replays: [],
  };
  assert.deepEqual((await listed('failed-all'))[1]!['resolution'], delivered);
  assert.deepEqual(((await s.show('e1')) as Record<string, unknown>)['resolution'], delivered);
  assert.equal(
    ((await s.show('e2')) as Record<string, unknown>)['resolution'],
    undefined,
    'the request that took it did not fail',
  );
  assert.equal(((await s.show('e3')) as Record<string, unknown>)['resolution'], undefined);
});

test("show() lists a run's retries after it, each after the run it retries, and marks a run no longer kept", async (t) => {
  const runs = [
    { runId: 'a', status: 'error', retriedBy: 'b', message: 'm' },
    { runId: 'b', status: 'timeout', retryOf: 'a', retriedBy: 'c', message: 'm' },
  ];
  const s = await source(t, [entry(1, { status: 202, became: { runs: ['a'] } })], [], undefined, runs);
  const shown = (await s.show('e1')) as { became: { runs: { runId: string; status?: string; state?: string }[] } };
  assert.deepEqual(shown.became.runs.map((r) => [r.runId, r.status ?? r.state]), [
    ['a', 'error'],
    ['b', 'timeout'],
    ['c', 'no longer kept'],
  ]);
});
