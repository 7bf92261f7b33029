import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readDrops, readEvents } from '../lib/store/journal/read.ts';
import { dropOf, MAX_DROPS, Pauses } from '../lib/store/journal/pauses.ts';
import { Store } from '../lib/store/journal/store.ts';
import { checkLine } from '../lib/store/journal/records.ts';
import type { OutboxSpec } from '../lib/store/journal/outbox.ts';
import { withDir } from './_dir.ts';

const T = '2026-01-01T00:00:00.000Z';

async function open(dir: string, compactBytes?: number): Promise<Store> {
  return (await Store.open(dir, { idempotencyTtlMs: 60_000, ...(compactBytes === undefined ? {} : { compactBytes }) }))
    .store;
}

const wake = (text: string, workHook: string) => ({
  kind: 'system' as const,
  text,
  source: `hook:${workHook}`,
  mode: 'next-heartbeat' as const,
  requestId: `req-${text}`,
  workHook,
});

test("Store: a paused hook's wakes are held out of the session, counted in the backlog, and join in order on resume", async () => {
  await withDir(async (dir) => {
    const store = await open(dir);
    await store.commit({ pause: [{ hook: 'ci', since: T }] });
    const first = await store.commit({ events: [wake('a', 'ci'), wake('other', 'gh')] });
    assert.deepEqual(first.outcomes, ['queued', 'held']);
    assert.deepEqual(first.events.map((e) => e.text), ['other']);
    await store.commit({ events: [wake('b', 'ci')] });
    assert.deepEqual(store.events().map((e) => e.text), ['other']);
    assert.deepEqual(store.held('ci').map((h) => h.text), ['a', 'b']);
    assert.deepEqual(store.backlog(), { events: 3, bytes: 'other'.length + 2 });

    const resumed = await store.commit({ resume: ['ci'] });
    assert.deepEqual(resumed.events.map((e) => [e.text, e.requestId]), [['a', 'req-a'], ['b', 'req-b']]);
    assert.ok(resumed.events[0]!.seq > first.events[0]!.seq, 'they join after what the session had');
    assert.equal(store.paused('ci'), null);
    assert.deepEqual(store.held(), []);
    assert.deepEqual(store.backlog().events, 3);
    const later = await store.commit({ events: [wake('c', 'ci')] });
    assert.deepEqual(later.outcomes, ['queued']);
    await store.close();
    assert.deepEqual((await readEvents(dir)).map((e) => e.text), ['other', 'a', 'b', 'c']);
  });
});

test('Store: pauses, their ends, held wakes and drop records survive a reopen and a compaction', async () => {
  await withDir(async (dir) => {
    let store = await open(dir, 1);
    await store.commit({
      pause: [{ hook: 'ci', since: T, until: '2026-01-02T00:00:00.000Z' }, { hook: 'x', since: T }],
    });
    await store.commit({ events: [wake('held one', 'ci')] });
    await store.commit({ drops: [{ requestId: 'r1', hook: 'x', time: T }] });
    // compactBytes 1: every write past the first compacts; give it a moment by writing once more.
    await store.commit({ events: [wake('held two', 'ci')] });
    await store.close();
    store = await open(dir);
    assert.deepEqual(store.pauses(), [
      { hook: 'ci', since: T, until: '2026-01-02T00:00:00.000Z' },
      { hook: 'x', since: T },
    ]);
    assert.deepEqual(store.held('ci').map((h) => h.text), ['held one', 'held two']);
    assert.deepEqual(store.dropped('r1'), { requestId: 'r1', hook: 'x', time: T });
    // A new event after the reopen never takes a held wake's number.
    const next = await store.commit({ events: [wake('fresh', 'gh')] });
    assert.ok(next.events[0]!.seq > Math.max(...store.held().map((h) => h.id)));
    await store.close();
    const drops = await readDrops(dir);
    assert.equal(dropOf(drops, { requestId: 'r1', mapping: 'x' })?.hook, 'x');
    assert.equal(dropOf(drops, { requestId: 'r1', hook: 'agent' }), undefined, "another hook's request of that id");
  });
});

test("Store: a paused hook's outbox entries wait while the entries of other hooks behind them go first", async () => {
  await withDir(async (dir) => {
    const store = await open(dir);
    const entry = (id: string, mapping?: string): OutboxSpec => ({
      id,
      target: 'wake',
      body: { text: id },
      hook: 'h',
      ...(mapping === undefined ? {} : { mapping }),
    });
    await store.commit({ outbox: [entry('1', 'ci'), entry('2'), entry('3', 'ci')] });
    assert.equal(store.outboxHead()?.id, '1');
    await store.commit({ pause: [{ hook: 'ci', since: T }] });
    assert.equal(store.outboxHead()?.id, '2');
    assert.equal(store.outboxWaits(store.outboxEntry('3')!), true);
    await store.commit({ outboxUpdates: [{ id: '2', state: 'sent' }] });
    assert.equal(store.outboxHead(), null);
    await store.commit({ resume: ['ci'] });
    assert.equal(store.outboxHead()?.id, '1');
    await store.commit({ outboxUpdates: [{ id: '1', state: 'dropped' }] });
    assert.deepEqual(store.outboxCounts(), { pending: 1, sent: 1, dead: 0, dropped: 1 });
    await store.close();
  });
});

test('Pauses: a line taken back restores the state before it; drop records are bounded, the oldest going', () => {
  const pauses = new Pauses();
  pauses.apply({ pauses: [{ hook: 'a', since: T, paused: true }] });
  const saved = pauses.save();
  pauses.apply({ pauses: [{ hook: 'a', paused: false }], drops: [{ requestId: 'r', hook: 'a', time: T }] });
  assert.equal(pauses.paused('a'), null);
  pauses.restore(saved);
  assert.deepEqual(pauses.paused('a'), { hook: 'a', since: T });
  assert.equal(pauses.dropped('r'), null);
  const held = { id: 7, hook: 'a', heldAt: T, kind: 'system' as const, text: 'é', source: 'wake' };
  pauses.apply({ held: [held] });
  assert.deepEqual(pauses.backlog(), { events: 1, bytes: 2 });
  pauses.unhold([held]);
  assert.deepEqual(pauses.backlog(), { events: 0, bytes: 0 });
  pauses.apply({
    drops: Array.from({ length: MAX_DROPS + 1 }, (_, i) => ({ requestId: `r${i}`, hook: 'a', time: T })),
  });
  assert.equal(pauses.dropped('r0'), null);
  assert.notEqual(pauses.dropped(`r${MAX_DROPS}`), null);
});

test('journal lines: a pause, a held wake or a drop of the wrong shape is left out and named', () => {
  const { line, problems } = checkLine({
    t: 'commit',
    seq: 3,
    time: T,
    pauses: [{ hook: 'a', paused: true, since: T }, { hook: '', paused: true }],
    held: [{ id: 3, hook: 'a', heldAt: T, kind: 'system', text: 'x', source: 'wake' }, { id: 'x' }],
    released: [1],
    drops: [{ requestId: 'r', hook: 'a', time: T }, { requestId: 1 }],
  });
  assert.ok(line !== null && line.t === 'commit');
  assert.equal(line.pauses?.length, 1);
  assert.equal(line.held?.length, 1);
  assert.equal(line.drops?.length, 1);
  assert.deepEqual([...new Set(problems.map((p) => p.split('.')[0]))], ['pauses[1]', 'held[1]', 'drops[1]']);
});
