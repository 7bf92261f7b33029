import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { constants } from 'node:fs';
import { appendFile, mkdir, open as openFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import type { LedgerConfig } from '../lib/store/ledger/config.ts';
import { Ledger } from '../lib/store/ledger/ledger.ts';
import type { LedgerEntry } from '../lib/model/ledger-entry.ts';
import { lookupEntry } from '../lib/store/ledger/find.ts';
import {
  bodyBytes,
  filterEntries,
  findEntry,
  LedgerTail,
  parseStatus,
  parseTime,
  readLedger,
} from '../lib/store/ledger/read.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';

const CONFIG: LedgerConfig = {
  enabled: true,
  maxEntries: 1000,
  maxBytes: 1_048_576,
  maxAgeSeconds: 3600,
  maxBodyBytes: 1024,
  coalesceSeconds: 60,
  unauthenticated: { maxEntries: 100, maxBytes: 65_536, maxBodyBytes: 256 },
};

let _n = 0;
function entry(fields: Partial<LedgerEntry> = {}): LedgerEntry {
  _n++;
  return {
    id: `e${_n}`,
    requestId: `r${_n}`,
    time: new Date(1_800_000_000_000 + _n).toISOString(),
    method: 'POST',
    path: '/hooks/wake',
    client: '127.0.0.1',
    lane: 'authenticated',
    auth: 'token',
    headers: {},
    status: 200,
    durationMs: 1,
    ...fields,
  };
}

async function open(
  t: TestContext,
  config: Partial<LedgerConfig> = {},
  now: () => number = Date.now,
): Promise<{ dir: string; ledger: Ledger }> {
  const dir = await tempDir(t, 'store-ledger-spec-');
  const ledger = await Ledger.open(dir, { config: { ...CONFIG, ...config }, now });
  defer(t, () => ledger.close());
  return { dir, ledger };
}

test('Ledger writes entries in batches to 0600 files in a 0700 folder; a body is cut at its cap and marked, binary kept as base64', async (t) => {
  const { dir, ledger } = await open(t);
  ledger.record(entry({ id: 'text' }), Buffer.from('é'.repeat(600)), 1024);
  ledger.record(entry({ id: 'binary' }), Buffer.from([0, 1, 2, 255]), 1024);
  ledger.record(entry({ id: 'open', lane: 'unauthenticated', auth: 'none' }), Buffer.from('x'.repeat(1000)), 5000);
  assert.deepEqual(await readLedger(dir), [], 'nothing is written in the same turn');
  await ledger.flush();
  const entries = await readLedger(dir);
  const text = entries.find((e) => e.id === 'text')!.body!;
  assert.equal(text.bytes, 1200);
  assert.equal(text.truncated, true);
  assert.equal(text.data, 'é'.repeat(512), 'cut at 1024 bytes, on a character boundary');
  assert.deepEqual(bodyBytes(entries.find((e) => e.id === 'binary')!.body!), Buffer.from([0, 1, 2, 255]));
  assert.equal(entries.find((e) => e.id === 'binary')!.body!.encoding, 'base64');
  assert.equal(entries.find((e) => e.id === 'open')!.body!.data.length, 256, "the unauthenticated lane's own cap");
  assert.equal((await stat(join(dir, 'ledger'))).mode & 0o777, 0o700);
  for (const name of await readdir(join(dir, 'ledger'))) {
    assert.equal((await stat(join(dir, 'ledger', name))).mode & 0o777, 0o600);
  }
});

test('Ledger keeps a body that starts with a byte order mark byte for byte, so a replay sends what came', async (t) => {
  const { dir, ledger } = await open(t);
  const sent = Buffer.from('\uFEFF{"text":"hi"}');
  ledger.record(entry({ id: 'bom' }), sent, 1024);
  await ledger.flush();
  const body = (await readLedger(dir)).find((e) => e.id === 'bom')!.body!;
  assert.deepEqual([body.encoding, body.bytes, body.truncated], ['utf8', sent.length, false]);
  assert.deepEqual(bodyBytes(body), sent);
});

test("Ledger reuses a written batch's buffer, but keeps none that a burst grew large once it is written", async (t) => {
  const { dir, ledger } = await open(t, { maxBodyBytes: 1_048_576, maxBytes: 256 * 1_048_576, maxEntries: 100_000 });
  ledger.record(entry({ id: 'small' }), Buffer.from('x'.repeat(100)), 1024);
  await ledger.flush();
  assert.equal(ledger.stats().authenticated.buffered, 65_536, 'the ordinary buffer is kept for the next batch');
  for (let i = 0; i < 8; i++) ledger.record(entry({ id: `big${i}` }), Buffer.alloc(1_000_000, 0x61), 1_048_576);
  assert.ok(ledger.stats().authenticated.buffered >= 8_000_000, 'a burst grows the batch');
  await ledger.flush();
  assert.equal(ledger.stats().authenticated.buffered, 0, 'a grown buffer is dropped once written');
  ledger.record(entry({ id: 'after' }), Buffer.from('y'), 1024);
  await ledger.flush();
  assert.ok((await readLedger(dir)).some((e) => e.id === 'after'), 'the next batch gets a buffer of its own');
});

test('Ledger keeps each lane within its count and bytes by dropping whole oldest segments', async (t) => {
  const { dir, ledger } = await open(t, { maxEntries: 40, maxBytes: 65_536 });
  for (let i = 0; i < 500; i++) {
    ledger.record(entry({ id: `n${i}` }), Buffer.from('b'.repeat(500)), 1024);
    if (i % 7 === 0) await ledger.flush();
  }
  await ledger.flush();
  const entries = await readLedger(dir);
  assert.ok(entries.length <= 40 && entries.length >= 20, String(entries.length));
  assert.equal(entries.at(-1)!.id, 'n499');
  const { authenticated } = ledger.stats();
  assert.ok(authenticated.bytes <= 65_536);
  let bytes = 0;
  for (const name of await readdir(join(dir, 'ledger'))) bytes += (await stat(join(dir, 'ledger', name))).size;
  assert.equal(bytes, authenticated.bytes);
});

// A refusal as the recorder hands it over: counted into its key's window, or the window opened with the entry made.
function coalesce(ledger: Ledger, key: string, make: () => LedgerEntry): string {
  return ledger.count(key) ?? ledger.hold(key, make());
}

test('Ledger.count and hold count refusals of one key within the window into one entry; the count reaches the file after the entry was written', async (t) => {
  let now = 1_800_000_000_000;
  const { dir, ledger } = await open(t, { coalesceSeconds: 10 }, () => now);
  const make = () => entry({ lane: 'unauthenticated', auth: 'none', status: 401 });
  const first = coalesce(ledger, 'k', make);
  coalesce(ledger, 'k', make);
  await ledger.flush();
  assert.equal((await readLedger(dir))[0]!.count, 2);
  now += 1000;
  assert.equal(coalesce(ledger, 'k', make), first);
  await ledger.flush();
  const [read] = await readLedger(dir);
  assert.equal(read!.count, 3);
  assert.equal(read!.lastTime, new Date(now).toISOString());
  now += 10_000;
  assert.notEqual(coalesce(ledger, 'k', make), first, 'a new window, a new entry');
  await ledger.flush();
  assert.equal((await readLedger(dir)).length, 2);
});

test("Ledger.hold keeps at most 2 KiB of a refusal's headers, in order, marked; a long key (a long hook name) is held as its digest and still coalesces", async (t) => {
  const { dir, ledger } = await open(t);
  const headers = {
    'x-small': 'a',
    'x-big': 'b'.repeat(12 * 1024),
    'x-after': 'c'.repeat(100),
    'x-more': 'd'.repeat(1950),
  };
  const long = `client 401 ERR_UNAUTHORIZED ${'h'.repeat(4000)}`;
  const id = coalesce(ledger, long, () => entry({ lane: 'unauthenticated', auth: 'none', status: 401, headers }));
  assert.equal(coalesce(ledger, long, () => entry({ lane: 'unauthenticated', auth: 'none', status: 401 })), id);
  const small = coalesce(
    ledger,
    'other',
    () => entry({ lane: 'unauthenticated', auth: 'none', status: 401, headers: { 'x-small': 'a' } }),
  );
  await ledger.flush();
  const read = await readLedger(dir);
  const big = read.find((e) => e.id === id)!;
  assert.deepEqual(big.headers, { 'x-small': 'a', 'x-after': 'c'.repeat(100) });
  assert.equal(big.headersTruncated, true);
  assert.equal(big.count, 2);
  const whole = read.find((e) => e.id === small)!;
  assert.deepEqual([whole.headers, whole.headersTruncated], [{ 'x-small': 'a' }, undefined]);
});

test('Ledger.hold after close() holds nothing: no segment is begun (nor left open) for a refusal answered while the server stops', async (t) => {
  const { dir, ledger } = await open(t);
  ledger.record(entry({ id: 'before' }));
  await ledger.close();
  const late = coalesce(ledger, 'k', () => entry({ id: 'late', lane: 'unauthenticated', auth: 'none', status: 401 }));
  assert.equal(late, 'late', 'the entry is made all the same, for the log line that names it');
  await ledger.flush();
  assert.deepEqual(await readdir(join(dir, 'ledger')), ['a-1.jsonl']);
  assert.deepEqual((await readLedger(dir)).map((e) => e.id), ['before']);
});

test('Ledger drops segments older than maxAgeSeconds; a new process begins its own segment after what is there', async (t) => {
  let now = Date.now();
  const { dir, ledger } = await open(t, { maxAgeSeconds: 60 }, () => now);
  ledger.record(entry({ id: 'old' }));
  await ledger.flush();
  now += 30_000;
  ledger.record(entry({ id: 'new' }));
  await ledger.flush();
  now += 31_000;
  ledger.record(entry({ id: 'newer' }));
  await ledger.flush();
  assert.deepEqual(
    (await readLedger(dir)).map((e) => e.id),
    ['new', 'newer'],
    'a segment spans an eighth of the bound at most',
  );
  await ledger.close();
  const again = await Ledger.open(dir, { config: CONFIG, now: () => now });
  defer(t, () => again.close());
  again.record(entry({ id: 'later' }));
  await again.flush();
  assert.deepEqual((await readLedger(dir)).map((e) => e.id), ['new', 'newer', 'later']);
  assert.equal((await readdir(join(dir, 'ledger'))).length, 3);
});

test('Ledger.open reads no segment an earlier process wrote: they are counted at the first file operation, one that cannot be read reported and left out', async (t) => {
  const dir = await tempDir(t, 'store-ledger-spec-');
  const first = await Ledger.open(dir, { config: CONFIG });
  for (let i = 0; i < 3; i++) first.record(entry({ id: `old${i}` }));
  await first.close();
  // A segment's name that no read can open (the old open threw here, and the server went without its ledger).
  await mkdir(join(dir, 'ledger', 'a-7.jsonl'));
  const told: unknown[] = [];
  const ledger = await Ledger.open(dir, { config: CONFIG, onError: (error) => told.push(error) });
  defer(t, () => ledger.close());
  const { segments, entries, bytes } = ledger.stats().authenticated;
  assert.deepEqual(
    [{ segments, entries, bytes }, told],
    [{ segments: 0, entries: 0, bytes: 0 }, []],
    'nothing read yet',
  );
  await ledger.counted();
  assert.deepEqual(told.map((e) => (e as NodeJS.ErrnoException).code), ['ERR_NOT_A_SEGMENT']);
  assert.deepEqual([ledger.stats().authenticated.segments, ledger.stats().authenticated.entries], [1, 3]);
  ledger.record(entry({ id: 'new' }));
  await ledger.flush();
  assert.deepEqual(
    [ledger.stats().authenticated.segments, ledger.stats().authenticated.entries],
    [2, 4],
    'a new segment after them (a-8)',
  );
  assert.deepEqual((await readdir(join(dir, 'ledger'))).sort(), ['a-1.jsonl', 'a-7.jsonl', 'a-8.jsonl']);
});

test('Ledger and its readers open segments without following links or waiting on a FIFO: counted() settles, both are refused, and what a link leads to is never read', async (t) => {
  const dir = await tempDir(t, 'store-ledger-spec-');
  const first = await Ledger.open(dir, { config: CONFIG });
  first.record(entry({ id: 'own' }));
  await first.close();
  // Outside the ledger: a file of entries a link names as a segment.
  await writeFile(join(dir, 'elsewhere.jsonl'), `${JSON.stringify(entry({ id: 'through-the-link' }))}\n`);
  await symlink(join(dir, 'elsewhere.jsonl'), join(dir, 'ledger', 'a-5.jsonl'));
  const fifo = join(dir, 'ledger', 'u-6.jsonl');
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0, 'mkfifo');
  const told: unknown[] = [];
  const ledger = await Ledger.open(dir, { config: CONFIG, onError: (error) => told.push(error) });
  defer(t, () => ledger.close());
  // Before the ledger closes: on code that waits for a writer, this frees the open (and the test
  // fails on its assertions, not by hanging).
  defer(t, async () => {
    const writer = await openFile(fifo, constants.O_WRONLY | constants.O_NONBLOCK).catch(() => null);
    await writer?.close();
  });
  // A guard against a hang, not a time limit: the count reads a few small files.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const counted = await Promise.race([
    ledger.counted().then(() => 'counted'),
    new Promise((resolve) => (timer = setTimeout(resolve, 10_000, 'still waiting'))),
  ]);
  clearTimeout(timer);
  assert.equal(counted, 'counted');
  assert.deepEqual(told.map((e) => (e as NodeJS.ErrnoException).code).sort(), [
    'ERR_NOT_A_SEGMENT',
    'ERR_NOT_A_SEGMENT',
  ]);
  assert.deepEqual([ledger.stats().authenticated.entries, ledger.stats().unauthenticated.entries], [1, 0]);
  await assert.rejects(readLedger(dir), /cannot read the request ledger file \S+\/a-5\.jsonl: not a regular file/);
  await rm(join(dir, 'ledger', 'a-5.jsonl'));
  await assert.rejects(readLedger(dir), /cannot read the request ledger file \S+\/u-6\.jsonl: not a regular file/);
  await rm(fifo);
  assert.deepEqual((await readLedger(dir)).map((e) => e.id), ['own']);
});

test('Ledger and its readers take only the segment names the writer makes: a-01.jsonl is left alone, not counted as segment 1', async (t) => {
  const dir = await tempDir(t, 'store-ledger-spec-');
  await mkdir(join(dir, 'ledger'), { recursive: true });
  const stray = `${JSON.stringify(entry({ id: 'stray' }))}\n`;
  await writeFile(join(dir, 'ledger', 'a-01.jsonl'), stray);
  await writeFile(join(dir, 'ledger', 'a-0.jsonl'), stray);
  const ledger = await Ledger.open(dir, { config: { ...CONFIG, maxEntries: 4 } });
  defer(t, () => ledger.close());
  await ledger.counted();
  assert.deepEqual(ledger.stats().authenticated.entries, 0);
  for (let i = 0; i < 12; i++) {
    ledger.record(entry({ id: `n${i}` }));
    await ledger.flush();
  }
  assert.deepEqual((await readLedger(dir)).map((e) => e.id).includes('stray'), false, 'the readers skip it too');
  const names = await readdir(join(dir, 'ledger'));
  assert.ok(
    names.includes('a-01.jsonl') && names.includes('a-0.jsonl'),
    'trimming never deletes what it did not write',
  );
});

test('Ledger.counted() waits for the count of what an earlier process wrote, not for the writes queued behind it', async (t) => {
  const dir = await tempDir(t, 'store-ledger-spec-');
  const first = await Ledger.open(dir, { config: CONFIG });
  first.record(entry({ id: 'old' }));
  await first.close();
  const ledger = await Ledger.open(dir, { config: CONFIG });
  defer(t, () => ledger.close());
  const order: string[] = [];
  ledger.record(entry({ id: 'new' }));
  const flushed = ledger.flush().then(() => order.push('flushed'));
  await ledger.counted().then(() => order.push('counted'));
  assert.deepEqual(order, ['counted'], 'the batch is still being written (the old counted() queued behind it)');
  await flushed;
  assert.deepEqual([order, ledger.stats().authenticated.entries], [['counted', 'flushed'], 2]);
  await ledger.counted();
  const fresh = await Ledger.open(await tempDir(t, 'store-ledger-spec-'), { config: CONFIG });
  await fresh.counted();
  await fresh.close();
});

test('Ledger: an entry too large for a segment is kept without its headers and body', async (t) => {
  const { dir, ledger } = await open(t, { maxBytes: 65_536, maxBodyBytes: 65_536 });
  ledger.record(entry({ id: 'big', headers: { 'x-huge': 'h'.repeat(20_000) } }), Buffer.from('b'.repeat(4000)), 65_536);
  await ledger.flush();
  const [big] = await readLedger(dir);
  assert.deepEqual(big!.headers, {});
  assert.equal(big!.bodyOmitted, 'ledger-cap');
});

test('findEntry takes an entry id or a request id naming one entry; filters read statuses, classes and times', () => {
  const a = entry({ id: 'a1', requestId: 'same', status: 401, code: 'ERR_UNAUTHORIZED', hook: 'wake' });
  const b = entry({ id: 'b1', requestId: 'same', status: 200, hook: 'gh' });
  const c = entry({ id: 'c1', requestId: 'solo', status: 503, hook: 'gh' });
  assert.deepEqual(findEntry([a, b, c], 'b1'), { ok: true, entry: b });
  assert.deepEqual(findEntry([a, b, c], 'solo'), { ok: true, entry: c });
  assert.equal(findEntry([a, b, c], 'same').ok, false);
  assert.equal(findEntry([a, b, c], 'none').ok, false);
  assert.deepEqual(parseStatus('4XX'), { class: 4 });
  assert.deepEqual(parseStatus('401'), { exact: 401 });
  assert.equal(parseStatus('4x'), null);
  assert.equal(parseStatus('700'), null);
  assert.equal(parseTime('15m', 1_000_000), 100_000);
  assert.equal(parseTime('2026-01-01', 0), Date.parse('2026-01-01'));
  assert.equal(parseTime('soon', 0), null);
  assert.deepEqual(filterEntries([a, b, c], { failed: true }).map((e) => e.id), ['a1', 'c1']);
  assert.deepEqual(filterEntries([a, b, c], { hook: 'gh', status: { class: 5 } }).map((e) => e.id), ['c1']);
  assert.deepEqual(filterEntries([a, b, c], { code: 'ERR_UNAUTHORIZED' }).map((e) => e.id), ['a1']);
  assert.deepEqual(filterEntries([a, b, c], { since: Date.parse(b.time) }).map((e) => e.id), ['b1', 'c1']);
  assert.deepEqual(filterEntries([a, b, c], { until: Date.parse(a.time) }).map((e) => e.id), ['a1']);
});

test('LedgerTail follows the files: newest() merges the lanes newest first with their counts, takes what was appended since, and forgets trimmed segments', async (t) => {
  const dir = await tempDir(t, 'store-ledger-tail-');
  await mkdir(join(dir, 'ledger'));
  const a1 = entry({ id: 'a1' });
  const u1 = entry({ id: 'u1', lane: 'unauthenticated', auth: 'none', status: 401 });
  const a2 = entry({ id: 'a2' });
  const line = (value: object) => `${JSON.stringify(value)}\n`;
  await writeFile(join(dir, 'ledger', 'a-1.jsonl'), line(a1) + line(a2));
  await writeFile(
    join(dir, 'ledger', 'u-2.jsonl'),
    line(u1) + line({ t: 'count', id: 'u1', count: 7, lastTime: a2.time }),
  );
  const tail = new LedgerTail(dir);
  assert.deepEqual((await tail.newest(10, () => true)).map((e) => [e.id, e.count]), [['a2', undefined], ['u1', 7], [
    'a1',
    undefined,
  ]]);
  assert.deepEqual((await tail.newest(1, (e) => e.status === 401)).map((e) => e.id), ['u1']);
  // A line being written is taken once it is whole.
  const a3 = entry({ id: 'a3' });
  await appendFile(join(dir, 'ledger', 'a-1.jsonl'), line(a3).slice(0, 20));
  assert.deepEqual((await tail.newest(1, () => true)).map((e) => e.id), ['a2']);
  await appendFile(join(dir, 'ledger', 'a-1.jsonl'), line(a3).slice(20));
  assert.deepEqual((await tail.newest(1, () => true)).map((e) => e.id), ['a3']);
  await rm(join(dir, 'ledger', 'u-2.jsonl'));
  assert.deepEqual((await tail.newest(10, () => true)).map((e) => e.id), ['a3', 'a2', 'a1']);
  assert.deepEqual((await tail.entries()).map((e) => e.id), ['a1', 'a2', 'a3']);
});

test('LedgerTail parses a line only when it is needed: the newest entries do not read a damaged older line, the whole ledger does (once); lookupEntry parses the lines naming the id', async (t) => {
  const dir = await tempDir(t, 'store-ledger-tail-');
  await mkdir(join(dir, 'ledger'));
  const lines = [
    '{"not":"an entry"}',
    JSON.stringify(entry({ id: 'old' })),
    JSON.stringify(entry({ id: 'new', requestId: 'shared' })),
  ];
  await writeFile(join(dir, 'ledger', 'a-1.jsonl'), `${lines.join('\n')}\n`);
  const damaged: number[] = [];
  const report = (d: { line: number }) => void damaged.push(d.line);
  const tail = new LedgerTail(dir, report);
  assert.deepEqual((await tail.newest(1, () => true)).map((e) => e.id), ['new']);
  assert.deepEqual(damaged, []);
  const found = await lookupEntry(dir, 'shared', report);
  assert.equal(found.ok && found.entry.id, 'new');
  assert.deepEqual(damaged, [], 'find parses the lines that name the id only');
  assert.deepEqual((await tail.entries()).map((e) => e.id), ['old', 'new']);
  await tail.entries();
  assert.deepEqual(damaged, [1]);
  const none = await lookupEntry(dir, 'nobody');
  assert.equal(none.ok, false);
});
