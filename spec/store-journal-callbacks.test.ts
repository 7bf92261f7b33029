import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  applyCallbacks,
  type CallbackEntry,
  callbackHeads,
  callbackRetryUpdates,
  newCallbacks,
  trimCallbacks,
} from '../lib/store/journal/callbacks.ts';
import { Store } from '../lib/store/journal/store.ts';
import { checkLine } from '../lib/store/journal/records.ts';
import { readCallbacks } from '../lib/store/journal/read.ts';
import { withDir } from './_dir.ts';

const TIME = '2026-11-27T12:00:00.000Z';

function entries(...specs: [string, string, CallbackEntry['state']?][]): Map<string, CallbackEntry> {
  const map = new Map<string, CallbackEntry>();
  const made = newCallbacks(
    specs.map(([id, origin]) => ({
      id,
      runId: id,
      hook: 'agent',
      url: `${origin}/cb`,
      origin,
      maxAgeSeconds: 60,
      body: { type: 'run.completed' },
    })),
    TIME,
  );
  applyCallbacks(map, made, specs.flatMap(([id, , state]) => (state === undefined ? [] : [{ id, state }])));
  return map;
}

test('callbackHeads() gives the oldest pending entry of each origin, in the order of the entries', () => {
  const map = entries(
    ['a1', 'http://a', 'sent'],
    ['b1', 'http://b'],
    ['a2', 'http://a'],
    ['a3', 'http://a'],
    ['c1', 'http://c', 'dead'],
  );
  assert.deepEqual(callbackHeads(map).map((e) => e.id), ['b1', 'a2']);
  applyCallbacks(map, [], [{ id: 'a2', state: 'sent' }, { id: 'b1', state: 'dead' }]);
  assert.deepEqual(callbackHeads(map).map((e) => e.id), ['a3']);
});

test("applyCallbacks() keeps an entry in its place through updates, never replaces a known id, and clears a sent one's error", () => {
  const map = entries(['x', 'http://a'], ['y', 'http://a']);
  applyCallbacks(map, [], [{ id: 'x', attempts: 1, lastError: 'receiver answered 500', nextAttemptAt: TIME }]);
  applyCallbacks(map, [...entries(['x', 'http://other']).values()]);
  assert.equal(map.get('x')!.origin, 'http://a', 'a second entry for the same run is not taken');
  applyCallbacks(map, [], [{ id: 'x', state: 'sent', attempts: 2 }]);
  assert.deepEqual([...map.keys()], ['x', 'y']);
  assert.equal(map.get('x')!.lastError, undefined);
  assert.equal(map.get('x')!.nextAttemptAt, undefined);
});

test('trimCallbacks() drops the oldest sent entries past the bound; pending and dead ones stay', () => {
  const specs: [string, string, CallbackEntry['state']][] = [];
  for (let i = 0; i < 20; i++) specs.push([`s${i}`, 'http://a', 'sent']);
  specs.push(['p', 'http://a', 'pending'], ['d', 'http://a', 'dead']);
  const map = entries(...specs);
  trimCallbacks(map, 5);
  assert.deepEqual([...map.keys()], ['s15', 's16', 's17', 's18', 's19', 'p', 'd']);
});

test('callbackRetryUpdates() makes named (or all dead) entries pending now, with the pending ones ahead of them in their origin due too', () => {
  const list = [
    ...entries(['a1', 'http://a'], ['a2', 'http://a', 'dead'], ['a3', 'http://a'], ['b1', 'http://b'], [
      'b2',
      'http://b',
      'sent',
    ]).values(),
  ];
  const named = callbackRetryUpdates(list, { ids: ['a3', 'b2', 'zz'] }, TIME);
  assert.deepEqual(named.updates, [
    { id: 'a1', nextAttemptAt: TIME },
    { id: 'a3', state: 'pending', retriedAt: TIME, nextAttemptAt: TIME },
  ]);
  assert.deepEqual(named.unknown, ['b2', 'zz']);
  assert.deepEqual(callbackRetryUpdates(list, { dead: true }, TIME).updates, [
    { id: 'a2', state: 'pending', retriedAt: TIME, nextAttemptAt: TIME },
  ]);
});

test('the store keeps callbacks across a reopen and a compaction, checks them when read back, and the reader sees them', async () => {
  await withDir(async (dir) => {
    const opened = await Store.open(dir, { idempotencyTtlMs: 60_000, compactBytes: 1 });
    const spec = [...entries(['m1', 'http://a'], ['m2', 'http://b']).values()].map((
      { state: _s, acceptedAt: _a, attempts: _n, ...rest },
    ) => rest);
    await opened.store.commit({ callbacks: spec });
    await opened.store.commit({ callbackUpdates: [{ id: 'm1', state: 'sent', attempts: 1, status: 200 }] });
    await opened.store.close();
    const again = await Store.open(dir, { idempotencyTtlMs: 60_000 });
    assert.deepEqual(again.store.callbacks().map((e) => [e.id, e.state, e.status]), [
      ['m1', 'sent', 200],
      ['m2', 'pending', undefined],
    ]);
    assert.deepEqual(again.store.callbackCounts(), { pending: 1, sent: 1, dead: 0 });
    assert.deepEqual(again.rejected, []);
    await again.store.close();
    assert.deepEqual((await readCallbacks(dir)).map((e) => e.id), ['m1', 'm2']);
  });
  const bad = checkLine({ t: 'commit', seq: 1, time: TIME, callbacks: [{ id: 'x' }], callbackUpdates: [{ id: 3 }] });
  assert.deepEqual(bad.line && { ...bad.line }, {
    t: 'commit',
    seq: 1,
    time: TIME,
    callbacks: [],
    callbackUpdates: [],
  });
  assert.equal(bad.problems.length > 1, true);
});
