import assert from 'node:assert/strict';
import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { NoticeSpec } from '../lib/model/actions.ts';
import type { NoticeRecord } from '../lib/model/records.ts';
import { JOURNAL_FILE } from '../lib/store/journal/lines.ts';
import { applyNotices, newNotices, trimNotices } from '../lib/store/journal/notices.ts';
import { readNotices } from '../lib/store/journal/read.ts';
import { Store } from '../lib/store/journal/store.ts';
import { withDir } from './_dir.ts';

function spec(deliveryId: string): NoticeSpec {
  return {
    kind: 'notify',
    deliveryId,
    hook: 'deploy',
    name: 'Deploys',
    channel: 'telegram',
    to: '12345',
    text: `text ${deliveryId}`,
  };
}

async function open(dir: string, options: { compactBytes?: number; retainRuns?: number } = {}) {
  return Store.open(dir, { idempotencyTtlMs: 60_000, ...options });
}

test('newNotices() records a delivery pending with no send begun', () => {
  assert.deepEqual(newNotices([spec('a')], 'T'), [{ ...spec('a'), status: 'pending', acceptedAt: 'T', attempts: 0 }]);
});

test('applyNotices() adds deliveries and applies changes, dropping a change to one not kept', () => {
  const map = new Map<string, NoticeRecord>();
  applyNotices(map, newNotices([spec('a')], 'T'), [{ deliveryId: 'a', attempts: 1 }, {
    deliveryId: 'gone',
    status: 'delivered',
  }]);
  assert.deepEqual([...map.values()].map((n) => [n.deliveryId, n.attempts]), [['a', 1]]);
});

test('trimNotices() keeps every pending delivery and the newest finished ones, once past a quarter over', () => {
  const map = new Map<string, NoticeRecord>();
  applyNotices(map, newNotices(['p', ...Array.from({ length: 6 }, (_, i) => `f${i}`)].map(spec), 'T'), undefined);
  for (let i = 0; i < 6; i++) map.set(`f${i}`, { ...map.get(`f${i}`)!, status: 'delivered' });
  trimNotices(map, 5);
  assert.equal(map.size, 7, 'six finished is within a quarter over five');
  map.set('f6', { ...spec('f6'), status: 'failed', acceptedAt: 'T', attempts: 1 });
  map.set('f7', { ...spec('f7'), status: 'skipped', acceptedAt: 'T', attempts: 1 });
  trimNotices(map, 5);
  assert.deepEqual([...map.keys()], ['p', 'f3', 'f4', 'f5', 'f6', 'f7']);
});

test('Store keeps deliveries across a reopen and a compaction: pending ones always, with their outcome', async () => {
  await withDir(async (dir) => {
    const first = (await open(dir, { compactBytes: 1_000 })).store;
    const committed = await first.commit({ notices: [spec('a'), spec('b')] });
    assert.deepEqual(committed.notices.map((n) => [n.deliveryId, n.status]), [['a', 'pending'], ['b', 'pending']]);
    await first.commit({
      noticeUpdates: [{
        deliveryId: 'a',
        status: 'delivered',
        attempts: 1,
        delivery: { status: 'delivered', channel: 'telegram', to: '12345', messageIds: ['9'] },
      }],
    });
    // Enough lines to pass compactBytes: the compaction writes the deliveries from memory.
    for (let i = 0; i < 20; i++) {
      await first.commit({ events: [{ kind: 'system', text: `filler ${i}`, source: 'wake' }] });
    }
    await first.close();
    assert.doesNotMatch(await readFile(join(dir, JOURNAL_FILE), 'utf8'), /noticeUpdates/, 'compacted');
    const { store, rejected } = await open(dir);
    assert.deepEqual(rejected, []);
    assert.deepEqual(store.notices().map((n) => [n.deliveryId, n.status, n.attempts]), [['a', 'delivered', 1], [
      'b',
      'pending',
      0,
    ]]);
    assert.equal(store.notice('a')?.delivery?.status, 'delivered');
    assert.equal(store.notice('nope'), null);
    assert.deepEqual((await readNotices(dir)).map((n) => n.deliveryId), ['a', 'b']);
    await store.close();
  });
});

test('a journal line with a damaged delivery keeps the rest of the line and names the entry', async () => {
  await withDir(async (dir) => {
    const { store } = await open(dir);
    await store.close();
    const bad = {
      t: 'commit',
      seq: 1,
      time: 'T',
      notices: [{ ...spec('x'), channel: 'last', status: 'pending', acceptedAt: 'T', attempts: 0 }, {
        ...spec('y'),
        status: 'pending',
        acceptedAt: 'T',
        attempts: 0,
      }],
    };
    await appendFile(join(dir, JOURNAL_FILE), `${JSON.stringify(bad)}\n`);
    const reopened = await open(dir);
    assert.deepEqual(reopened.store.notices().map((n) => n.deliveryId), ['y']);
    assert.equal(reopened.rejected.length, 1);
    assert.match(reopened.rejected[0]!.problem, /notices\[0\]\.channel/);
    await reopened.store.close();
  });
});
