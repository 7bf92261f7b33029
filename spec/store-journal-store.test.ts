import assert from 'node:assert/strict';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { platform } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RunSpec } from '../lib/model/actions.ts';
import { Journal } from '../lib/store/journal/journal.ts';
import { Store } from '../lib/store/journal/store.ts';
import { JOURNAL_FILE } from '../lib/store/journal/lines.ts';
import { readEvents } from '../lib/store/journal/read.ts';
import type { StoreOptions } from '../lib/store/journal/store.ts';
import type { IdempotencyWrite, RunRecord } from '../lib/model/records.ts';
import { tempDir, withDir } from './_dir.ts';
import { pendingRuns } from './_runs.ts';
import { until } from './_until.ts';

// Records one accepted run as pending, as the dispatcher's commit does.
async function addRun(store: Store, spec: RunSpec, idem?: IdempotencyWrite): Promise<RunRecord> {
  return (await store.commit({ runs: [spec] }, idem)).runs[0]!;
}

const windows = platform() === 'win32';
const TTL = 60_000;

// A settable clock: tests move `clock.t` to cross a TTL.
function clock(start = Date.UTC(2025, 0, 1)): { t: number; now: () => number } {
  const c = { t: start, now: () => c.t };
  return c;
}

async function open(dir: string, options: Partial<StoreOptions> = {}): Promise<Store> {
  return (await Store.open(dir, { idempotencyTtlMs: TTL, ...options })).store;
}

function spec(runId: string): RunSpec {
  return {
    runId,
    hook: 'agent',
    name: 'Hook',
    message: `run ${runId}`,
    sessionKey: 'hook:s',
    agentId: 'main',
    wakeMode: 'now',
    deliver: true,
    channel: 'last',
  };
}

function idem(key: string, scope = '/hooks/wake'): IdempotencyWrite {
  return { scope, key, status: 200, body: { ok: true, key } };
}

// Temporarily replaces a Journal method so a test can make the disk fail.
// Adds a wake event whose text is also its idempotency key.
function addWake(store: Store, text: string): ReturnType<Store['addEvent']> {
  return store.addEvent({ kind: 'system', text, source: 'wake' }, idem(text));
}

async function withJournalMethod(
  name: 'append' | 'compact',
  impl: (...args: never[]) => Promise<void>,
  fn: () => Promise<void>,
): Promise<void> {
  const original = Journal.prototype[name];
  Object.defineProperty(Journal.prototype, name, { value: impl, configurable: true, writable: true });
  try {
    await fn();
  } finally {
    Object.defineProperty(Journal.prototype, name, { value: original, configurable: true, writable: true });
  }
}

test('Store.open() creates the state directory 0700 with an empty journal', { skip: windows }, async () => {
  await withDir(async (dir) => {
    const state = join(dir, 'state');
    const { store, skipped, tornBytes } = await Store.open(state, { idempotencyTtlMs: TTL });
    assert.equal((await stat(state)).mode & 0o777, 0o700);
    assert.deepEqual([store.events(), pendingRuns(store), skipped, tornBytes], [[], [], 0, 0]);
    await store.close();
  });
});

test('Store.addEvent() and a committed run come back after close and reopen, and seq continues', async () => {
  await withDir(async (dir) => {
    const c = clock();
    const first = await open(dir, { now: c.now });
    const e1 = await first.addEvent({ kind: 'system', text: 'one', source: 'wake', mode: 'next-heartbeat' });
    const r1 = await addRun(first, spec('r1'));
    const e2 = await first.addEvent({ kind: 'system', text: 'two', source: 'hook:ci' });
    assert.deepEqual(e1, {
      seq: 1,
      time: new Date(c.t).toISOString(),
      kind: 'system',
      text: 'one',
      source: 'wake',
      mode: 'next-heartbeat',
    });
    assert.equal(e2.seq, 3);
    assert.deepEqual(r1, { ...spec('r1'), status: 'pending', acceptedAt: new Date(c.t).toISOString(), attempts: 0 });
    await first.close();

    const second = await open(dir, { now: c.now });
    assert.deepEqual(second.events(), [e1, e2]);
    assert.deepEqual(pendingRuns(second), [r1]);
    const e3 = await second.addEvent({ kind: 'heartbeat', text: 'three', source: 'schedule' });
    assert.equal(e3.seq, 4);
    assert.deepEqual(second.stats().events, 3);
    assert.deepEqual(second.stats().runs, 1);
    await second.close();
  });
});

test('Store.changes() moves with each line written and stays put when nothing is', async () => {
  await withDir(async (dir) => {
    const store = await open(dir);
    const before = store.changes();
    assert.equal(store.changes(), before);
    await store.addEvent({ kind: 'system', text: 'one', source: 'wake', mode: 'next-heartbeat' });
    const after = store.changes();
    assert.notEqual(after, before);
    await addRun(store, spec('r1'));
    assert.notEqual(store.changes(), after);
    await store.close();
  });
});

test('Store.replay() answers the stored reply for keys riding on event and run lines, also after reopen', async () => {
  await withDir(async (dir) => {
    const first = await open(dir);
    await first.addEvent({ kind: 'system', text: 'hi', source: 'wake', mode: 'now' }, idem('k1'));
    const reply = { scope: '/hooks/agent', key: 'k2', status: 202, body: { ok: true, runId: 'r1' } };
    await addRun(first, spec('r1'), reply);
    assert.deepEqual(first.replay('/hooks/wake', 'k1'), { status: 200, body: { ok: true, key: 'k1' } });
    assert.deepEqual(first.replay('/hooks/agent', 'k2'), { status: 202, body: { ok: true, runId: 'r1' } });
    await first.close();

    const second = await open(dir);
    assert.deepEqual(second.replay('/hooks/wake', 'k1'), { status: 200, body: { ok: true, key: 'k1' } });
    assert.deepEqual(second.replay('/hooks/agent', 'k2'), { status: 202, body: { ok: true, runId: 'r1' } });
    // The key is scoped to its hook path.
    assert.equal(second.replay('/hooks/agent', 'k1'), null);
    assert.equal(second.stats().idempotencyKeys, 2);
    // Events read back carry neither the line tag nor the idempotency record.
    assert.deepEqual(Object.keys(second.events()[0]!).sort(), ['kind', 'mode', 'seq', 'source', 'text', 'time']);
    await second.close();
  });
});

test('Store.replay() returns null for an unknown key', async () => {
  await withDir(async (dir) => {
    const store = await open(dir);
    assert.equal(store.replay('/hooks/wake', 'nope'), null);
    await store.close();
  });
});

test('Store.replay() forgets a key once its TTL has passed, in memory and on reopen', async () => {
  await withDir(async (dir) => {
    const c = clock();
    const first = await open(dir, { now: c.now });
    await first.addEvent({ kind: 'system', text: 'a', source: 'wake' }, idem('old'));
    c.t += TTL / 2;
    await first.addEvent({ kind: 'system', text: 'b', source: 'wake' }, idem('young'));
    c.t += TTL / 2 - 1;
    assert.notEqual(first.replay('/hooks/wake', 'old'), null);
    c.t += 1;
    assert.equal(first.replay('/hooks/wake', 'old'), null);
    assert.notEqual(first.replay('/hooks/wake', 'young'), null);
    await first.close();

    const second = await open(dir, { now: c.now });
    assert.equal(second.stats().idempotencyKeys, 1);
    assert.equal(second.replay('/hooks/wake', 'old'), null);
    assert.notEqual(second.replay('/hooks/wake', 'young'), null);
    c.t += TTL;
    assert.equal(second.replay('/hooks/wake', 'young'), null);
    await second.close();
  });
});

test('Store maxIdempotencyKeys evicts the oldest key first, also on reopen', async () => {
  await withDir(async (dir) => {
    const first = await open(dir, { maxIdempotencyKeys: 3 });
    for (const key of ['a', 'b', 'c', 'd']) {
      await first.addEvent({ kind: 'system', text: key, source: 'wake' }, idem(key));
    }
    assert.equal(first.stats().idempotencyKeys, 3);
    assert.equal(first.replay('/hooks/wake', 'a'), null);
    assert.deepEqual(['b', 'c', 'd'].map((k) => first.replay('/hooks/wake', k)?.status), [200, 200, 200]);
    await first.close();

    const second = await open(dir, { maxIdempotencyKeys: 3 });
    assert.equal(second.stats().idempotencyKeys, 3);
    assert.equal(second.replay('/hooks/wake', 'a'), null);
    assert.deepEqual(['b', 'c', 'd'].map((k) => second.replay('/hooks/wake', k)?.status), [200, 200, 200]);
    await second.close();
  });
});

test('Store.heartbeatOwed() is true after a now wake until a finished heartbeat turn consumed it', async () => {
  await withDir(async (dir) => {
    const first = await open(dir);
    assert.equal(first.heartbeatOwed(), false);
    await first.addEvent({ kind: 'system', text: 'later', source: 'wake', mode: 'next-heartbeat' });
    assert.equal(first.heartbeatOwed(), false);
    await first.addEvent({ kind: 'system', text: 'now', source: 'wake', mode: 'now' });
    await first.addEvent({ kind: 'system', text: 'later', source: 'wake', mode: 'next-heartbeat' });
    assert.equal(first.heartbeatOwed(), true);
    await first.close();

    // The process died between the wake and its heartbeat: the reopened store still owes it.
    const second = await open(dir);
    assert.equal(second.heartbeatOwed(), true);
    // A heartbeat that was requested but whose turn never finished does not settle the debt.
    const beat = await second.addEvent({ kind: 'heartbeat', text: 'Heartbeat requested (wake)', source: 'request' });
    assert.equal(second.heartbeatOwed(), true);
    await second.commit({
      events: [{ kind: 'reply', text: 'HEARTBEAT_OK', source: 'heartbeat', ack: true }],
      consumedThrough: beat.seq,
    });
    assert.equal(second.heartbeatOwed(), false);
    await second.close();

    const third = await open(dir);
    assert.equal(third.heartbeatOwed(), false);
    await third.close();
  });
});

test('Store compaction keeps pending runs, live keys, unconsumed events and the last retainEvents consumed ones of concurrent appends', async () => {
  await withDir(async (dir) => {
    const c = clock();
    const compacted = join(dir, 'compacted');
    const plain = join(dir, 'plain');
    const options = { now: c.now, compactBytes: 2_000, retainEvents: 5 };
    const workload = async (store: Store): Promise<string[]> => {
      // A key that expires before the flood: a compaction drops it.
      await addWake(store, 'expiring');
      c.t += TTL;
      const texts: string[] = [];
      let previous: Promise<unknown>[] = [];
      for (let round = 0; round < 20; round++) {
        // A heartbeat turn read everything before this round: only consumed events may be trimmed.
        const current: Promise<unknown>[] = [store.commit({ consumedThrough: store.events().at(-1)?.seq ?? 0 })];
        for (let i = 0; i < 10; i++) {
          const n = round * 10 + i;
          texts.push(`event ${n}`);
          current.push(store.addEvent({ kind: 'system', text: `event ${n}`, source: 'wake' }, idem(`e${n}`)));
          if (i % 3 === 0) current.push(addRun(store, spec(`r${n}`), idem(`r${n}`, '/hooks/agent')));
        }
        // Two rounds are always in flight: the journal grows between rounds, so each round's first
        // append starts a compaction while that round's and the previous round's appends are queued.
        await Promise.all(previous);
        previous = current;
      }
      await Promise.all(previous);
      return texts;
    };

    const reference = await open(plain, { ...options, compactBytes: Number.MAX_SAFE_INTEGER });
    await workload(reference);
    await reference.close();
    const uncompactedBytes = (await stat(join(plain, JOURNAL_FILE))).size;

    c.t = clock().t;
    const store = await open(compacted, options);
    const texts = await workload(store);
    assert.equal(store.stats().compactionFailures, 0);
    await store.close();
    const compactedBytes = (await stat(join(compacted, JOURNAL_FILE))).size;
    assert.ok(compactedBytes < uncompactedBytes, `${compactedBytes} < ${uncompactedBytes}`);

    const reopened = await open(compacted, options);
    const runIds = pendingRuns(reopened).map((r) => r.runId);
    const expectedRuns = texts.map((_, n) => n).filter((n) => n % 10 % 3 === 0).map((n) => `r${n}`);
    assert.deepEqual(runIds.sort(), expectedRuns.sort());
    for (let n = 0; n < texts.length; n++) {
      assert.equal(reopened.replay('/hooks/wake', `e${n}`)?.status, 200, `key e${n}`);
      if (n % 10 % 3 === 0) assert.equal(reopened.replay('/hooks/agent', `r${n}`)?.status, 200, `key r${n}`);
    }
    assert.equal(reopened.replay('/hooks/wake', 'expiring'), null);
    const survivors = reopened.events().map((e) => e.text);
    assert.deepEqual(survivors.slice(-15), texts.slice(-15), 'the unconsumed last round and five consumed before it');
    assert.ok(survivors.length < texts.length, 'old events were dropped');
    const seqs = reopened.events().map((e) => e.seq);
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), 'events stay in seq order');
    const next = await reopened.addEvent({ kind: 'system', text: 'after', source: 'wake' });
    assert.ok(next.seq > seqs.at(-1)!, 'seq continues after the retained events');
    await reopened.close();
  });
});

test('Store compaction keeps appends queued ahead of it and behind it', async () => {
  await withDir(async (dir) => {
    // Fillers nothing waits to read (heartbeat notes), none kept: only what is queued survives.
    const options = { compactBytes: 4_000, retainEvents: 0 };
    const store = await open(dir, options);
    for (let n = 0; store.stats().journalBytes <= options.compactBytes; n++) {
      await store.addEvent({ kind: 'heartbeat', text: `filler ${n} ${'x'.repeat(500)}`, source: 'schedule' });
    }
    const before = store.stats().journalBytes;
    // `ahead` starts the compaction while its own line is still queued; the rest are queued after it.
    const ahead = addWake(store, 'ahead');
    const run = addRun(store, spec('queued-run'), idem('queued-run', '/hooks/agent'));
    const behind = addWake(store, 'behind');
    await Promise.all([ahead, run, behind]);
    await store.close();
    const text = await readFile(join(dir, JOURNAL_FILE), 'utf8');
    assert.ok(text.length < before && !text.includes('filler'), 'the journal was compacted');

    const reopened = await open(dir, options);
    assert.deepEqual(reopened.events().map((e) => e.text), ['ahead', 'behind']);
    assert.deepEqual(pendingRuns(reopened).map((r) => r.runId), ['queued-run']);
    for (const key of ['ahead', 'behind']) assert.notEqual(reopened.replay('/hooks/wake', key), null, key);
    assert.notEqual(reopened.replay('/hooks/agent', 'queued-run'), null);
    await reopened.close();
  });
});

test('Store compaction that fails is counted and leaves the full journal in place', async () => {
  await withDir(async (dir) => {
    const options = { compactBytes: 500, retainEvents: 1 };
    const store = await open(dir, options);
    const texts: string[] = [];
    await withJournalMethod('compact', () => Promise.reject(new Error('disk full')), async () => {
      for (let n = 0; n < 20; n++) {
        texts.push(`event ${n}`);
        await store.addEvent({ kind: 'system', text: `event ${n}`, source: 'wake' });
      }
      await store.close();
    });
    assert.ok(store.stats().compactionFailures > 0);
    assert.deepEqual((await readEvents(dir)).map((e) => e.text), texts);
  });
});

test('Store.addEvent() and a committed run leave no trace when the journal write fails', async () => {
  await withDir(async (dir) => {
    const store = await open(dir);
    await addWake(store, 'kept');
    await withJournalMethod('append', () => Promise.reject(new Error('disk full')), async () => {
      await assert.rejects(
        store.addEvent({ kind: 'system', text: 'lost', source: 'wake', mode: 'now' }, idem('lost')),
        /disk full/,
      );
      await assert.rejects(addRun(store, spec('lost-run'), idem('lost-run', '/hooks/agent')), /disk full/);
    });
    // A retry must not be answered with a reply whose effect never reached the disk.
    assert.equal(store.replay('/hooks/wake', 'lost'), null);
    assert.equal(store.replay('/hooks/agent', 'lost-run'), null);
    assert.notEqual(store.replay('/hooks/wake', 'kept'), null);
    assert.deepEqual(store.events().map((e) => e.text), ['kept']);
    assert.deepEqual(pendingRuns(store), []);
    assert.equal(store.heartbeatOwed(), false);
    const retried = await addWake(store, 'lost');
    await store.close();
    const reopened = await open(dir);
    assert.deepEqual(reopened.events().map((e) => [e.text, e.seq]), [['kept', 1], ['lost', retried.seq]]);
    await reopened.close();
  });
});

test('Store.open() and readEvents() skip a torn last line', async () => {
  await withDir(async (dir) => {
    const file = join(dir, JOURNAL_FILE);
    const time = '2025-01-01T00:00:00.000Z';
    const line = (seq: number, text: string) =>
      JSON.stringify({ t: 'commit', seq, time, events: [{ seq, time, kind: 'system', text, source: 'wake' }] });
    const torn = '{"t":"commit","seq":3,"ev';
    await writeFile(file, `${line(1, 'one')}\n${line(2, 'two')}\n${torn}`);
    assert.deepEqual((await readEvents(dir)).map((e) => e.text), ['one', 'two']);

    const { store, skipped, tornBytes } = await Store.open(dir, { idempotencyTtlMs: TTL });
    assert.deepEqual([skipped, tornBytes], [0, torn.length]);
    assert.deepEqual(store.events().map((e) => e.text), ['one', 'two']);
    const next = await store.addEvent({ kind: 'system', text: 'three', source: 'wake' });
    assert.equal(next.seq, 3);
    await store.close();
    assert.equal((await readFile(file, 'utf8')).split('\n').length, 4);
    assert.deepEqual((await readEvents(dir)).map((e) => e.text), ['one', 'two', 'three']);
  });
});

test('Store.stats() counts flushes and journal bytes', async () => {
  await withDir(async (dir) => {
    const store = await open(dir);
    await Promise.all([
      store.addEvent({ kind: 'system', text: 'a', source: 'wake' }),
      store.addEvent({ kind: 'system', text: 'b', source: 'wake' }),
    ]);
    const stats = store.stats();
    assert.equal(stats.flushes, 1, 'concurrent appends share one flush');
    assert.equal(stats.journalBytes, (await stat(join(dir, JOURNAL_FILE))).size);
    assert.ok(stats.fsyncMs >= 0);
    await store.close();
  });
});

test('Store.commit() writes several events and runs with their key as one journal line', async () => {
  await withDir(async (dir) => {
    const store = await open(dir);
    const spec = (runId: string) => ({
      runId,
      hook: 'gmail',
      name: 'Gmail',
      message: 'm',
      sessionKey: `hook:${runId}`,
      agentId: 'main',
      wakeMode: 'now' as const,
      deliver: true,
      channel: 'last' as const,
    });
    const { events, runs } = await store.commit(
      {
        events: [{ kind: 'system', text: 'a', source: 'hook:x' }, { kind: 'system', text: 'b', source: 'hook:x' }],
        runs: [spec('r1'), spec('r2')],
      },
      { scope: 'gmail', key: 'k', status: 202, body: { ok: true, runIds: ['r1', 'r2'] } },
    );
    assert.deepEqual(events.map((e) => e.seq), [1, 2]);
    assert.deepEqual(runs.map((r) => r.status), ['pending', 'pending']);
    await store.close();
    assert.equal((await readFile(join(dir, JOURNAL_FILE), 'utf8')).trim().split('\n').length, 1);
    const again = await open(dir);
    assert.deepEqual(pendingRuns(again).map((r) => r.runId), ['r1', 'r2']);
    assert.deepEqual(again.replay('gmail', 'k'), { status: 202, body: { ok: true, runIds: ['r1', 'r2'] } });
    await again.close();
  });
});

test('Store: a line whose write failed does not come back through a compaction queued behind it', async () => {
  await withDir(async (dir) => {
    // Filled past compactBytes by a store that never compacts, so the failing line's own write starts a compaction.
    const filling = await open(dir, { compactBytes: 1_000_000 });
    for (let n = 0; n < 5; n++) {
      await filling.addEvent({ kind: 'system', text: `filler ${n} ${'y'.repeat(500)}`, source: 'wake' });
    }
    await filling.close();
    const options = { compactBytes: 2_000, retainEvents: 100 };
    const store = await open(dir, options);
    const append = Journal.prototype.append;
    // The disk refuses this one line (ENOSPC); the compaction its append starts still works.
    await withJournalMethod(
      'append',
      function (this: Journal, record: { events?: { text: string }[] }) {
        if (record.events?.some((e) => e.text === 'lost')) {
          return Promise.reject(Object.assign(new Error('no space left'), { code: 'ENOSPC' }));
        }
        return append.call(this, record);
      } as never,
      async () => {
        await assert.rejects(addWake(store, 'lost'), /no space left/);
      },
    );
    assert.equal(store.replay('/hooks/wake', 'lost'), null);
    await store.close();
    const reopened = await open(dir, options);
    assert.equal(reopened.events().some((e) => e.text === 'lost'), false, 'the failed line is not on disk');
    assert.equal(reopened.replay('/hooks/wake', 'lost'), null, 'nor is its idempotency key');
    await reopened.close();
  });
});

test('Store does not rewrite the journal on every append once what it keeps outgrows compactBytes', async () => {
  await withDir(async (dir) => {
    const options = { compactBytes: 4_000, retainEvents: 100 };
    const store = await open(dir, options);
    // Thirty events of 1 KB are kept whole by a compaction, so a compacted journal is still over compactBytes.
    for (let n = 0; n < 30; n++) {
      await store.addEvent({ kind: 'system', text: `big ${n} ${'z'.repeat(1_000)}`, source: 'wake' });
    }
    const counted = { n: 0 };
    const compact = Journal.prototype.compact;
    await withJournalMethod(
      'compact',
      function (this: Journal, records: readonly object[]) {
        counted.n++;
        return compact.call(this, records);
      } as never,
      async () => {
        for (let n = 0; n < 20; n++) await store.addEvent({ kind: 'system', text: `small ${n}`, source: 'wake' });
      },
    );
    assert.ok(counted.n <= 1, `${counted.n} compactions for 20 small appends`);
    await store.close();
  });
});

test('Store keeps at most retainEventBytes of event text, newest first, in memory and through compaction', async () => {
  await withDir(async (dir) => {
    const options = { compactBytes: 20_000, retainEvents: 1_000, retainEventBytes: 3_000 };
    const store = await open(dir, options);
    for (let n = 0; n < 20; n++) {
      const event = await store.addEvent({
        kind: 'system',
        text: `${String(n).padStart(2, '0')} ${'e'.repeat(997)}`,
        source: 'wake',
      });
      await store.commit({ consumedThrough: event.seq });
    }
    const kept = store.events().map((e) => e.text.slice(0, 2));
    assert.ok(kept.length <= 6, `${kept.length} events kept in memory`);
    assert.equal(kept.at(-1), '19', 'the newest is kept');
    await store.close();
    const reopened = await open(dir, options);
    assert.ok(reopened.events().length <= 6 && reopened.events().at(-1)!.text.startsWith('19'));
    await reopened.close();
  });
});

test('Store refuses a commit made after its journal was removed, writes a fresh one with everything retained, and goes on', async () => {
  await withDir(async (dir) => {
    const c = clock();
    const store = await open(dir, { now: c.now });
    await addWake(store, 'kept');
    await addRun(store, spec('r1'));
    await store.commit({ lastRoute: { channel: 'slack', to: 'C1' } });
    await rm(join(dir, JOURNAL_FILE));
    await assert.rejects(addWake(store, 'refused'), { name: 'JournalReplacedError' });
    assert.equal(store.replay('/hooks/wake', 'refused'), null, 'a refused request leaves no key');
    await until('the store to be writable again', () => store.writable());
    await store.addEvent({ kind: 'system', text: 'after', source: 'wake' });
    await store.close();

    const reopened = await open(dir, { now: c.now });
    assert.deepEqual(reopened.events().map((e) => e.text), ['kept', 'after']);
    assert.deepEqual(pendingRuns(reopened).map((r) => r.runId), ['r1']);
    assert.notEqual(reopened.replay('/hooks/wake', 'kept'), null);
    assert.deepEqual(reopened.lastRoute(), { channel: 'slack', to: 'C1' });
    await reopened.close();
  });
});

test('Store.writable() is false once the journal path names another file, and the whole directory is recreated by the rewrite', async () => {
  await withDir(async (dir) => {
    const state = join(dir, 'state');
    const store = await open(state);
    await store.addEvent({ kind: 'system', text: 'kept', source: 'wake' });
    await rm(state, { recursive: true });
    assert.equal(await store.writable(), false);
    await until('the store to be writable again', () => store.writable());
    await store.close();
    assert.deepEqual((await readEvents(state)).map((e) => e.text), ['kept']);
  });
});

test('Store never trims unconsumed system events, in memory or by compaction; consumed ones go within the bounds', async () => {
  await withDir(async (dir) => {
    const options = { compactBytes: 2_000, retainEvents: 2, retainEventBytes: 1_000 };
    const store = await open(dir, options);
    for (let n = 0; n < 30; n++) {
      await store.addEvent({ kind: 'system', text: `unread ${n} ${'u'.repeat(200)}`, source: 'wake' });
    }
    assert.equal(store.events().length, 30);
    assert.deepEqual(store.backlog(), {
      events: 30,
      bytes: store.events().reduce((sum, e) => sum + Buffer.byteLength(e.text), 0),
    });
    await store.commit({ consumedThrough: store.events().at(-1)!.seq });
    assert.deepEqual(store.backlog(), { events: 0, bytes: 0 });
    for (let n = 0; n < 10; n++) await store.addEvent({ kind: 'system', text: `later ${n}`, source: 'wake' });
    await store.close();
    const reopened = await open(dir, options);
    const texts = reopened.events().map((e) => e.text.split(' ').slice(0, 2).join(' '));
    assert.deepEqual(texts.slice(-10), Array.from({ length: 10 }, (_, n) => `later ${n}`));
    assert.ok(texts.length <= 12, `${texts.length} events: only two read ones stay`);
    assert.equal(reopened.backlog().events, 10);
    await reopened.close();
  });
});

test('Store.open() keeps of the read events in its journal only what the bounds allow, compacted or not', async () => {
  await withDir(async (dir) => {
    const never = { compactBytes: Number.MAX_SAFE_INTEGER };
    const store = await open(dir, never);
    for (let n = 0; n < 20; n++) await store.addEvent({ kind: 'system', text: `read ${n}`, source: 'wake' });
    await store.commit({ consumedThrough: store.events().at(-1)!.seq });
    await store.addEvent({ kind: 'system', text: 'unread', source: 'wake' });
    await store.close();
    const reopened = await open(dir, { ...never, retainEvents: 2 });
    assert.deepEqual(reopened.events().map((e) => e.text), ['read 18', 'read 19', 'unread']);
    assert.deepEqual(reopened.backlog(), { events: 1, bytes: 6 });
    await reopened.close();
  });
});

test('Store.backlog() does not count a wake whose write failed', async () => {
  await withDir(async (dir) => {
    const store = await open(dir);
    await withJournalMethod('append', () => Promise.reject(new Error('disk full')), async () => {
      await assert.rejects(store.addEvent({ kind: 'system', text: 'lost', source: 'wake' }), /disk full/);
    });
    assert.deepEqual(store.backlog(), { events: 0, bytes: 0 });
    await store.close();
  });
});

test('Store keeps the newest retainRuns finished runs however many runs are queued, and never drops an unfinished one', async (t) => {
  const dir = await tempDir(t, 'store-retain-');
  const { store } = await Store.open(dir, { idempotencyTtlMs: 60_000, retainRuns: 4 });
  for (let i = 0; i < 12; i++) await addRun(store, spec(`r${i}`));
  // Finish the even ones, oldest first.
  for (let i = 0; i < 12; i += 2) await store.commit({ runUpdates: [{ runId: `r${i}`, status: 'ok' }] });
  const ids = store.runs().map((r) => r.runId);
  const unfinished = ['r1', 'r3', 'r5', 'r7', 'r9', 'r11'];
  for (const id of unfinished) assert.ok(ids.includes(id), `${id} is still queued and kept`);
  const finished = ids.filter((id) => !unfinished.includes(id));
  assert.deepEqual(finished, ['r4', 'r6', 'r8', 'r10'], 'the newest four finished runs, the oldest dropped');
  await store.close();
  const reopened = await Store.open(dir, { idempotencyTtlMs: 60_000, retainRuns: 4 });
  assert.deepEqual(reopened.store.runs().map((r) => r.runId).filter((id) => !unfinished.includes(id)), [
    'r4',
    'r6',
    'r8',
    'r10',
  ]);
  await reopened.store.close();
});

// --- wakes that coalesce ------------------------------------------------------------------------

function wakeOf(text: string, target: { agentId?: string; sessionKey?: string } = {}) {
  return { kind: 'system' as const, text, source: 'wake', mode: 'now' as const, ...target, coalesce: true };
}

test("Store.commit() coalesces a wake equal to its session's newest unread event, per session, and queues it again once read or after another event", async (t) => {
  const dir = await tempDir(t);
  const store = await open(dir);
  const outcomes = async (...events: ReturnType<typeof wakeOf>[]) => (await store.commit({ events })).outcomes;
  assert.deepEqual(await outcomes(wakeOf('deploy done')), ['queued']);
  assert.deepEqual(await outcomes(wakeOf('deploy done')), ['coalesced']);
  // Another session's newest event is its own; the same text there is queued.
  assert.deepEqual(
    await outcomes(wakeOf('deploy done', { sessionKey: 'ci' }), wakeOf('deploy done', { sessionKey: 'ci' })),
    ['queued', 'coalesced'],
  );
  assert.deepEqual(await outcomes(wakeOf('deploy done', { agentId: 'ops' })), ['queued']);
  // Only the newest unread event counts: after another, the text is queued again.
  assert.deepEqual(await outcomes(wakeOf('other'), wakeOf('deploy done')), ['queued', 'queued']);
  await store.commit({ consumedThrough: store.events().at(-1)!.seq });
  assert.deepEqual(await outcomes(wakeOf('deploy done')), ['queued'], 'read by a heartbeat: a new event');
  // A note that is not a wake is always added.
  await store.commit({ events: [{ kind: 'system', text: 'deploy done', source: 'heartbeat' }] });
  assert.deepEqual(
    store.events().filter((e) => e.text === 'deploy done' && e.sessionKey === undefined && e.agentId === undefined)
      .length,
    4,
  );
  await store.close();
});

test('Store.commit() lets one of two equal wakes at once be queued, the other coalesced, and the decision survives a restart', async (t) => {
  const dir = await tempDir(t);
  const store = await open(dir);
  const [a, b] = await Promise.all([
    store.commit({ events: [wakeOf('same')] }, idem('a')),
    store.commit({ events: [wakeOf('same')] }, (o) => ({ ...idem('b'), body: { eventOutcome: o[0] } })),
  ]);
  assert.deepEqual([a.outcomes, b.outcomes], [['queued'], ['coalesced']]);
  assert.equal(store.events().length, 1);
  await store.close();
  const again = await open(dir);
  assert.equal(again.events().length, 1);
  assert.deepEqual(again.replay('/hooks/wake', 'b')?.body, { eventOutcome: 'coalesced' });
  // The unread event is still the session's newest after the restart.
  assert.deepEqual((await again.commit({ events: [wakeOf('same')] })).outcomes, ['coalesced']);
  await again.close();
});

test('Store.commit() queues a wake whose equal event never reached the disk instead of coalescing into nothing', async (t) => {
  const dir = await tempDir(t);
  const store = await open(dir);
  let failOnce = true;
  const original = Journal.prototype.append;
  await withJournalMethod(
    'append',
    async function (this: Journal, ...args: never[]) {
      if (failOnce) {
        failOnce = false;
        throw new Error('disk full');
      }
      return original.apply(this, args as unknown as [object]);
    },
    async () => {
      const first = store.commit({ events: [wakeOf('same')] });
      const second = store.commit({ events: [wakeOf('same')] });
      await assert.rejects(first, /disk full/);
      assert.deepEqual((await second).outcomes, ['queued']);
    },
  );
  assert.deepEqual(store.events().map((e) => e.text), ['same']);
  await store.close();
});

test("Store keeps what each other session's heartbeat read across a restart and a compaction", async (t) => {
  const dir = await tempDir(t);
  const store = await open(dir, { compactBytes: 1 });
  await store.commit({ events: [wakeOf('for ci', { sessionKey: 'ci' }), wakeOf('for main')] });
  const [ci] = store.events();
  await store.commit({ consumedSessions: [{ sessionKey: 'ci', through: ci!.seq }] });
  assert.equal(store.consumedThrough({ sessionKey: 'ci' }), ci!.seq);
  assert.equal(store.consumedThrough(), 0);
  assert.deepEqual(store.backlog().events, 1);
  await store.commit({ events: [wakeOf('later', { sessionKey: 'ci' })] });
  await store.close();
  const again = await open(dir);
  assert.equal(again.consumedThrough({ sessionKey: 'ci' }), ci!.seq);
  assert.deepEqual(again.backlog().events, 2, 'the main wake and the later ci one');
  assert.equal(again.heartbeatOwed(), true);
  await again.close();
});
