import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  MAX_ATTEMPTS,
  type ReplayAttempt,
  replayedChange,
  resolvedChange,
  retriedChange,
  type RootChange,
} from '../lib/model/replays.ts';
import { Journal } from '../lib/store/journal/journal.ts';
import { JOURNAL_FILE } from '../lib/store/journal/lines.ts';
import { readEvents, readRoots } from '../lib/store/journal/read.ts';
import { checkLine } from '../lib/store/journal/records.ts';
import { applyChange, MAX_ROOTS, rootBound, Roots } from '../lib/store/journal/replays.ts';
import { ledgerCapacity } from '../lib/store/ledger/config.ts';
import { Store } from '../lib/store/journal/store.ts';
import { withDir } from './_dir.ts';

const attempt = (
  n: number,
  status: number,
  time = `2026-01-01T00:00:${String(n).padStart(2, '0')}.000Z`,
): ReplayAttempt => ({ entry: `r${n}`, requestId: `q${n}`, status, time });

test('Roots.apply(): a change sets the state it carries, adds its replays and makes the record the newest', () => {
  const roots = new Roots();
  roots.apply([replayedChange('a', null, attempt(1, 401)), replayedChange('b', null, attempt(2, 401))]);
  assert.equal(roots.get('a')?.state, 'failed');
  roots.apply([replayedChange('a', roots.get('a'), attempt(3, 200))]);
  assert.deepEqual(roots.get('a'), {
    root: 'a',
    state: 'succeeded',
    replays: [attempt(1, 401), attempt(3, 200)],
    time: attempt(3, 200).time,
  });
  assert.deepEqual(roots.list().map((r) => r.root), ['b', 'a']);
  // A failed replay after a success (forced) leaves it succeeded; one after a resolution by hand leaves it resolved.
  roots.apply([replayedChange('a', roots.get('a'), attempt(4, 500)), resolvedChange('b', '2026-01-02T00:00:00.000Z')]);
  roots.apply([replayedChange('b', roots.get('b'), attempt(5, 500))]);
  assert.deepEqual([roots.get('a')?.state, roots.get('b')?.state, roots.get('b')?.resolvedAt], [
    'succeeded',
    'resolved',
    '2026-01-02T00:00:00.000Z',
  ]);
  assert.equal(roots.get('c'), null);
});

test('Roots: at most MAX_ROOTS records (the one changed longest ago goes), at most MAX_ATTEMPTS replays each (the first success kept)', () => {
  const roots = new Roots(3);
  for (const root of ['a', 'b', 'c', 'd']) roots.apply([resolvedChange(root, '2026-01-01T00:00:00.000Z')]);
  assert.deepEqual(roots.list().map((r) => r.root), ['b', 'c', 'd']);
  let record = applyChange(undefined, replayedChange('x', null, attempt(0, 401)));
  record = applyChange(record, replayedChange('x', record, attempt(1, 200)));
  for (let n = 2; n < MAX_ATTEMPTS + 10; n++) {
    record = applyChange(record, replayedChange('x', record, attempt(n, 500)));
  }
  assert.equal(record.replays.length, MAX_ATTEMPTS);
  assert.deepEqual(record.replays[0], attempt(1, 200), 'the success that resolved it stays');
  assert.deepEqual(record.replays.at(-1), attempt(MAX_ATTEMPTS + 9, 500));
  let failing = applyChange(undefined, replayedChange('y', null, attempt(0, 401)));
  for (let n = 1; n < MAX_ATTEMPTS + 5; n++) {
    failing = applyChange(failing, replayedChange('y', failing, attempt(n, 401)));
  }
  assert.deepEqual(failing.replays.map((r) => r.entry), Array.from({ length: MAX_ATTEMPTS }, (_, i) => `r${i + 5}`));
});

test('Roots: before()/restore() put records back as they were; trim() drops those last changed before the cutoff; changes() make them again', () => {
  const roots = new Roots();
  roots.apply([replayedChange('a', null, attempt(1, 401, '2026-01-01T00:00:00.000Z'))]);
  const change: RootChange[] = [
    replayedChange('a', roots.get('a'), attempt(2, 200)),
    resolvedChange('n', '2026-01-03T00:00:00.000Z'),
  ];
  const saved = roots.before(change);
  roots.apply(change);
  roots.restore(saved);
  assert.deepEqual([roots.get('a')?.state, roots.get('n')], ['failed', null]);
  roots.apply([resolvedChange('late', '2026-03-01T00:00:00.000Z')]);
  const again = new Roots();
  again.apply(roots.changes());
  assert.deepEqual(again.list(), roots.list());
  roots.trim(Date.parse('2026-02-01T00:00:00.000Z'));
  assert.deepEqual(roots.list().map((r) => r.root), ['late']);
});

test("Roots: a retry of a root's run makes it succeeded and is kept beside its replays (the newest MAX_ATTEMPTS), through changes() and checkLine()", () => {
  const roots = new Roots();
  roots.apply([replayedChange('a', null, attempt(1, 401))]);
  roots.apply([retriedChange('a', { run: 'r1', as: 'r2', time: 't2' })]);
  assert.deepEqual(
    [roots.get('a')?.state, roots.get('a')?.replays.length, roots.get('a')?.retries],
    ['succeeded', 1, [{ run: 'r1', as: 'r2', time: 't2' }]],
  );
  for (let n = 0; n < MAX_ATTEMPTS + 3; n++) {
    roots.apply([retriedChange('b', { run: `b${n}`, as: `b${n + 1}`, time: 't' })]);
  }
  assert.equal(roots.get('b')?.retries?.length, MAX_ATTEMPTS);
  assert.equal(roots.get('b')?.retries?.at(-1)?.as, `b${MAX_ATTEMPTS + 3}`);
  const again = new Roots();
  again.apply(roots.changes());
  assert.deepEqual(again.list(), roots.list());
  const line = { t: 'commit', seq: 1, time: 't', roots: roots.changes() };
  assert.deepEqual(checkLine(JSON.parse(JSON.stringify(line))), { line, problems: [] });
  const bad = checkLine({
    t: 'commit',
    seq: 1,
    time: 't',
    roots: [{ root: 'c', state: 'succeeded', time: 't', retries: [{ run: '' }] }],
  });
  assert.match(bad.problems.join('\n'), /roots\[0\]\.retries\[0\]\.run/);
});

test('checkLine() takes a line with roots, and leaves out a root of the wrong shape, naming the field', () => {
  const good = {
    t: 'commit',
    seq: 1,
    time: 't',
    roots: [replayedChange('a', null, attempt(1, 200)), resolvedChange('b', 't')],
  };
  assert.deepEqual(checkLine(JSON.parse(JSON.stringify(good))), { line: good, problems: [] });
  const bad = checkLine({
    t: 'commit',
    seq: 1,
    time: 't',
    roots: [{ root: 'a', state: 'claimed', time: 't' }, {
      root: 'b',
      state: 'failed',
      time: 't',
      replays: [{ requestId: 'q', status: 99, time: 't' }],
    }, resolvedChange('c', 't')],
  });
  assert.deepEqual((bad.line as { roots: RootChange[] }).roots.map((r) => r.root), ['c']);
  assert.match(bad.problems.join('\n'), /roots\[0\]\.state/);
  assert.match(bad.problems.join('\n'), /roots\[1\]\.replays\[0\]\.status/);
  assert.equal(checkLine({ t: 'commit', seq: 1, time: 't', roots: {} }).line, null);
});

test("Store: a replay's record rides on the line of its event, survives a reopen and a compaction, and readRoots() reads it without the store", async () => {
  await withDir(async (dir) => {
    const store = (await Store.open(dir, { idempotencyTtlMs: 60_000, compactBytes: 2_000 })).store;
    await store.commit({
      events: [{ kind: 'system', text: 'push', source: 'hook:gh' }],
      roots: [replayedChange('root-1', null, attempt(1, 200))],
    });
    const lines = (await readFile(join(dir, JOURNAL_FILE), 'utf8')).trim().split('\n').map((l) =>
      JSON.parse(l) as Record<string, unknown>
    );
    assert.equal(lines.length, 1, 'one line: the event and the outcome together');
    assert.deepEqual(Object.keys(lines[0]!).sort(), ['events', 'roots', 'seq', 't', 'time']);
    await store.commit({ roots: [resolvedChange('root-2', new Date().toISOString())] });
    // Past compactBytes: the journal is rewritten with what is live, the roots among it.
    for (let n = 0; n < 40; n++) {
      await store.addEvent({ kind: 'system', text: `filler ${n} ${'x'.repeat(40)}`, source: 'wake' });
    }
    await store.close();
    const compacted = (await readFile(join(dir, JOURNAL_FILE), 'utf8')).trim().split('\n').map((l) =>
      JSON.parse(l) as { seq: number; roots?: RootChange[] }
    );
    assert.deepEqual(compacted.filter((l) => l.seq === 0 && l.roots !== undefined).map((l) => l.roots![0]!.root), [
      'root-1',
      'root-2',
    ], 'compacted, the roots kept');
    const roots = await readRoots(dir);
    assert.deepEqual([...roots.keys()], ['root-1', 'root-2']);
    const reopened = (await Store.open(dir, { idempotencyTtlMs: 60_000 })).store;
    assert.deepEqual(reopened.root('root-1'), roots.get('root-1'));
    assert.deepEqual(reopened.roots().map((r) => r.state), ['succeeded', 'resolved']);
    await reopened.close();
  });
});

test('Store: a line whose write failed leaves its root as it was; records past the age bound go at a compaction', async () => {
  await withDir(async (dir) => {
    let now = Date.parse('2026-01-01T00:00:00.000Z');
    const store = (await Store.open(dir, {
      idempotencyTtlMs: 60_000,
      compactBytes: 2_000,
      retainRootsMs: 86_400_000,
      now: () => now,
    })).store;
    await store.commit({ roots: [replayedChange('old', null, attempt(1, 401, new Date(now).toISOString()))] });
    const append = Journal.prototype.append;
    Object.defineProperty(Journal.prototype, 'append', {
      value: () => Promise.reject(new Error('disk full')),
      configurable: true,
      writable: true,
    });
    try {
      await assert.rejects(
        store.commit({
          events: [{ kind: 'system', text: 'lost', source: 'hook:gh' }],
          roots: [replayedChange('old', store.root('old'), attempt(2, 200))],
        }),
        /disk full/,
      );
    } finally {
      Object.defineProperty(Journal.prototype, 'append', { value: append, configurable: true, writable: true });
    }
    assert.deepEqual([store.root('old')?.state, store.root('old')?.replays.length], ['failed', 1]);
    now += 2 * 86_400_000;
    await store.commit({ roots: [resolvedChange('new', new Date(now).toISOString())] });
    for (let n = 0; n < 40; n++) {
      await store.addEvent({ kind: 'system', text: `filler ${n} ${'x'.repeat(40)}`, source: 'wake' });
    }
    await store.close();
    assert.deepEqual([...(await readRoots(dir)).keys()], ['new']);
    assert.equal((await readEvents(dir)).some((e) => e.text === 'lost'), false);
  });
});

test('Store: as many roots are kept as the ledger holds entries (both lanes), so one resolved by hand is not forgotten while an entry of it is listed', async () => {
  const ledger = {
    enabled: true,
    maxAgeSeconds: 604_800,
    coalesceSeconds: 60,
    maxEntries: 10_000,
    maxBytes: 1 << 26,
    maxBodyBytes: 65_536,
    unauthenticated: { maxEntries: 2_000, maxBytes: 1 << 24, maxBodyBytes: 8_192 },
  };
  const capacity = ledgerCapacity(ledger);
  assert.equal(capacity, 12_000);
  assert.equal(rootBound(capacity), 12_000);
  assert.equal(rootBound(5), MAX_ROOTS, 'never fewer than MAX_ROOTS');
  await withDir(async (dir) => {
    const time = '2026-01-01T00:00:00.000Z';
    const store = (await Store.open(dir, { idempotencyTtlMs: 60_000, ledgerEntries: capacity })).store;
    // The oldest root resolved by hand, then one root per entry the rest of the ledger can hold.
    await store.commit({ roots: [resolvedChange('first', time)] });
    await store.commit({ roots: Array.from({ length: capacity - 1 }, (_, n) => resolvedChange(`r${n}`, time)) });
    assert.equal(store.root('first')?.state, 'resolved');
    assert.equal(store.roots().length, capacity);
    await store.commit({ roots: [resolvedChange('one-more', time)] });
    assert.equal(store.root('first'), null, "bounded: past the ledger's capacity the oldest goes");
    await store.close();
    const reopened = (await Store.open(dir, { idempotencyTtlMs: 60_000, ledgerEntries: capacity })).store;
    assert.equal(reopened.root('r0')?.state, 'resolved');
    assert.equal(reopened.roots().length, capacity);
    await reopened.close();
  });
});
