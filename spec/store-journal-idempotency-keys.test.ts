// The keys the store remembers: the first answer within its window, then the key alone as taken
// (a short duplicate answer naming who took it) until `takenUntil`, bounded, through a reopen and a
// compaction. Time is a settable clock: nothing sleeps.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { IdempotencyKeys } from '../lib/store/journal/idempotency-keys.ts';
import { JOURNAL_FILE } from '../lib/store/journal/lines.ts';
import { Store } from '../lib/store/journal/store.ts';
import { withDir } from './_dir.ts';
import { until } from './_until.ts';

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
const WEEK = 7 * 24 * 60 * MINUTE;

function clock(): { t: number; now: () => number } {
  const c = { t: T0, now: () => c.t };
  return c;
}

test('IdempotencyKeys: the first answer within its window, then a duplicate naming the request that took the key until takenUntil, then nothing', () => {
  const c = clock();
  const keys = new IdempotencyKeys(c.now, 10);
  keys.remember({
    scope: 'github',
    key: 'd-1',
    status: 202,
    body: { ok: true, runId: 'r1' },
    requestId: 'req-1',
    expiresAt: T0 + MINUTE,
    takenUntil: T0 + WEEK,
  });
  assert.deepEqual(keys.replay('github', 'd-1'), { status: 202, body: { ok: true, runId: 'r1' }, requestId: 'req-1' });
  c.t = T0 + MINUTE;
  assert.deepEqual(keys.replay('github', 'd-1'), {
    status: 200,
    body: { ok: true, duplicate: true, duplicateOf: 'req-1' },
    requestId: 'req-1',
  });
  assert.equal(keys.size, 0, 'the answer is let go once its window is over');
  assert.equal(keys.takenSize, 1);
  assert.equal(keys.replay('stripe', 'd-1'), null, 'a key is taken on its own hook only');
  c.t = T0 + WEEK;
  assert.equal(keys.replay('github', 'd-1'), null);
  assert.equal(keys.takenSize, 0);
});

test('IdempotencyKeys: a key without takenUntil (or one no later than its answer) is not kept past its answer', () => {
  const c = clock();
  const keys = new IdempotencyKeys(c.now, 10);
  keys.remember({ scope: 'wake', key: 'a', status: 200, body: { ok: true }, expiresAt: T0 + MINUTE });
  keys.remember({
    scope: 'wake',
    key: 'b',
    status: 200,
    body: { ok: true },
    expiresAt: T0 + MINUTE,
    takenUntil: T0 + MINUTE,
  });
  assert.equal(keys.takenSize, 0);
  c.t = T0 + MINUTE;
  assert.equal(keys.replay('wake', 'a'), null);
  assert.equal(keys.replay('wake', 'b'), null);
});

test('IdempotencyKeys: at most maxTaken keys stay taken, the oldest going first; forget() takes back only the record it is given', () => {
  const c = clock();
  const keys = new IdempotencyKeys(c.now, 10, 2);
  const record = (key: string, requestId: string) => ({
    scope: 'github',
    key,
    status: 200,
    body: { ok: true },
    requestId,
    expiresAt: T0 + MINUTE,
    takenUntil: T0 + WEEK,
  });
  for (const key of ['a', 'b', 'c']) keys.remember(record(key, `req-${key}`));
  assert.equal(keys.takenSize, 2);
  c.t = T0 + 2 * MINUTE;
  assert.equal(keys.replay('github', 'a'), null);
  assert.equal(keys.replay('github', 'b')?.requestId, 'req-b');
  keys.forget(record('c', 'req-other'));
  assert.equal(keys.replay('github', 'c')?.requestId, 'req-c', "another request's record for the key is not this one");
  keys.forget(record('c', 'req-c'));
  assert.equal(keys.replay('github', 'c'), null);
});

test('Store: keepMs keeps a key taken past its answer window, through a reopen and through a compaction (a taken line without the answer)', async () => {
  await withDir(async (dir) => {
    const c = clock();
    const first = (await Store.open(dir, { idempotencyTtlMs: MINUTE, now: c.now })).store;
    await first.addEvent({ kind: 'system', text: 'push', source: 'hook:github' }, {
      scope: 'github',
      key: 'd-1',
      status: 200,
      body: { ok: true, mode: 'now' },
      requestId: 'req-1',
      keepMs: WEEK,
    });
    // A body-hash window of the scheme's own is the whole of its memory: no keepMs is given with it.
    await first.addEvent({ kind: 'system', text: 'hash', source: 'hook:meta' }, {
      scope: 'meta',
      key: 'sha256:ab',
      status: 200,
      body: { ok: true },
      requestId: 'req-2',
      ttlMs: MINUTE,
    });
    await first.close();
    c.t = T0 + 2 * MINUTE;
    const second = (await Store.open(dir, { idempotencyTtlMs: MINUTE, now: c.now, compactBytes: 1 })).store;
    assert.deepEqual(second.replay('github', 'd-1'), {
      status: 200,
      body: { ok: true, duplicate: true, duplicateOf: 'req-1' },
      requestId: 'req-1',
    });
    assert.equal(second.replay('meta', 'sha256:ab'), null);
    // Any append past compactBytes compacts: what is left of the key is a `taken` line, without the answer's body.
    await second.addEvent({ kind: 'system', text: 'later', source: 'wake' });
    await until(
      'the compaction',
      async () => (await readFile(join(dir, JOURNAL_FILE), 'utf8')).includes('"t":"taken"'),
    );
    await second.close();
    const journal = await readFile(join(dir, JOURNAL_FILE), 'utf8');
    assert.match(journal, /\{"t":"taken","seq":0,"scope":"github","key":"d-1","takenUntil":\d+,"requestId":"req-1"\}/);
    assert.ok(!journal.includes('"mode":"now"'), 'the answer is not kept');
    const third = (await Store.open(dir, { idempotencyTtlMs: MINUTE, now: c.now })).store;
    assert.equal(third.replay('github', 'd-1')?.requestId, 'req-1');
    c.t = T0 + WEEK;
    assert.equal(third.replay('github', 'd-1'), null);
    await third.close();
  }, 'idem-taken-');
});
