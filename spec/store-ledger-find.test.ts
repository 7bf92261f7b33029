import assert from 'node:assert/strict';
import { appendFile, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import type { LedgerConfig } from '../lib/store/ledger/config.ts';
import { Ledger } from '../lib/store/ledger/ledger.ts';
import type { LedgerEntry } from '../lib/model/ledger-entry.ts';
import { findEntries, lookupEntry, PIECE_BYTES } from '../lib/store/ledger/find.ts';
import { type DamagedLine, LedgerUnreadableError } from '../lib/store/ledger/read.ts';
import { tempDir } from './_dir.ts';
import { loopHeld } from './_loop.ts';

const CONFIG: LedgerConfig = {
  enabled: true,
  maxEntries: 100_000,
  maxBytes: 64 * 1024 * 1024,
  maxAgeSeconds: 3600,
  maxBodyBytes: 1024 * 1024,
  coalesceSeconds: 60,
  unauthenticated: { maxEntries: 1000, maxBytes: 1_048_576, maxBodyBytes: 256 },
};

let _n = 0;
function entry(fields: Partial<LedgerEntry> = {}): LedgerEntry {
  _n++;
  return {
    id: `e${_n}`,
    requestId: `r${_n}`,
    time: new Date(Date.now() - 60_000 + _n).toISOString(),
    method: 'POST',
    path: '/hooks/wake',
    client: '127.0.0.1',
    lane: 'authenticated',
    auth: 'token',
    headers: { 'content-type': 'application/json' },
    status: 200,
    durationMs: 1,
    ...fields,
  };
}

// A ledger written by its own writer: each entry with its body, in the order given.
async function written(
  t: TestContext,
  entries: [LedgerEntry, string?][],
  config: Partial<LedgerConfig> = {},
): Promise<string> {
  const dir = await tempDir(t, 'store-ledger-find-');
  const ledger = await Ledger.open(dir, { config: { ...CONFIG, ...config } });
  for (const [e, body] of entries) ledger.record(e, body === undefined ? undefined : Buffer.from(body), 1024 * 1024);
  await ledger.close();
  return dir;
}

// What JSON.parse is handed while `work` runs, in characters.
async function parsedDuring<T>(work: () => Promise<T>): Promise<{ value: T; parsed: number }> {
  const parse = JSON.parse;
  let parsed = 0;
  JSON.parse = (text: string, reviver?: Parameters<typeof parse>[1]) => {
    parsed += text.length;
    return parse(text, reviver);
  };
  try {
    return { value: await work(), parsed };
  } finally {
    JSON.parse = parse;
  }
}

test('findEntries finds entries by entry id, by request id and by the entry they replay, with their counts, and nothing else', async (t) => {
  const original = entry({ status: 500 });
  const replay = entry({ replayOf: original.id, status: 202 });
  const other = entry({ requestId: 'shared' });
  const twin = entry({ requestId: 'shared' });
  const dir = await written(t, [[original, '{"text":"hi"}'], [entry(), '{}'], [replay, '{"text":"hi"}'], [other], [
    twin,
  ]]);
  assert.deepEqual((await findEntries(dir, { ids: [original.id] })).map((e) => e.id), [original.id]);
  assert.deepEqual((await findEntries(dir, { ids: [original.requestId] })).map((e) => e.id), [original.id]);
  assert.deepEqual((await findEntries(dir, { replaysOf: [original.id] })).map((e) => e.id), [replay.id]);
  assert.deepEqual((await findEntries(dir, { ids: [original.id], replaysOf: [original.id] })).map((e) => e.id), [
    original.id,
    replay.id,
  ]);
  assert.deepEqual((await findEntries(dir, { ids: ['shared'] })).map((e) => e.id), [other.id, twin.id]);
  assert.deepEqual(await findEntries(dir, { ids: ['nobody'], replaysOf: ['nobody'] }), []);
  assert.deepEqual(await findEntries(dir, {}), []);
  const found = await findEntries(dir, { ids: [original.id] });
  assert.deepEqual(found[0]!.body, { encoding: 'utf8', data: '{"text":"hi"}', bytes: 13, truncated: false });

  const one = await lookupEntry(dir, original.requestId);
  assert.equal(one.ok && one.entry.id, original.id);
  const many = await lookupEntry(dir, 'shared');
  assert.equal(many.ok, false);
  assert.match(!many.ok ? many.error : '', /names 2 entries/);
  assert.equal((await lookupEntry(dir, 'nobody')).ok, false);
});

test('findEntries applies the count lines of a coalesced entry found by its request id', async (t) => {
  const dir = await tempDir(t, 'store-ledger-find-');
  let now = Date.now();
  const ledger = await Ledger.open(dir, { config: CONFIG, now: () => now });
  const make = () => entry({ requestId: 'refused-1', lane: 'unauthenticated', auth: 'none', status: 401 });
  const id = ledger.hold('client', make());
  await ledger.flush();
  for (let i = 0; i < 4; i++) {
    now += 1000;
    assert.equal(ledger.count('client'), id);
    await ledger.flush();
  }
  await ledger.close();
  const found = await lookupEntry(dir, 'refused-1');
  assert.equal(found.ok && found.entry.id, id);
  assert.equal(found.ok && found.entry.count, 5);
  assert.equal(found.ok && found.entry.lastTime, new Date(now).toISOString());
});

test('findEntries hands JSON.parse only the lines that name what it looks for', async (t) => {
  const target = entry({ status: 503 });
  const replay = entry({ replayOf: target.id, status: 202 });
  const fill = Array.from(
    { length: 2000 },
    (_, i): [LedgerEntry, string] => [entry(), JSON.stringify({ text: `filler ${i}`, pad: 'x'.repeat(500) })],
  );
  const dir = await written(t, [
    [target, '{"text":"target"}'],
    ...fill.slice(0, 1000),
    [replay, '{"text":"target"}'],
    ...fill.slice(1000),
  ]);
  const { value, parsed } = await parsedDuring(() => findEntries(dir, { ids: [target.id], replaysOf: [target.id] }));
  assert.deepEqual(value.map((e) => e.id), [target.id, replay.id]);
  // The two lines, and nothing else of the 1.1 MB.
  assert.equal(parsed, JSON.stringify(value[0]).length + JSON.stringify(value[1]).length);
});

test('findEntries reads a line longer than its buffer whole when the line names what it looks for, and goes past it when not', async (t) => {
  const big = entry();
  const skipped = entry();
  const after = entry({ requestId: 'after' });
  const large = 'y'.repeat(PIECE_BYTES + 50_000);
  const dir = await written(t, [[skipped, `{"text":"${large}"}`], [big, `{"text":"${large}"}`], [after, '{}']]);
  const found = await findEntries(dir, { ids: [big.id, 'after'] });
  assert.deepEqual(found.map((e) => e.id), [big.id, after.id]);
  assert.equal(found[0]!.body!.data.length, large.length + 11);
});

test('findEntries compares ids as the writer spells them: a request id with quotes, backslashes and other scripts', async (t) => {
  const odd = entry({ requestId: 'a "quoted" \\ id — ü' });
  const near = entry({ requestId: 'a "quoted" \\ id' });
  const dir = await written(t, [[odd], [near]]);
  assert.deepEqual((await findEntries(dir, { ids: [odd.requestId] })).map((e) => e.id), [odd.id]);
  assert.deepEqual((await findEntries(dir, { ids: [near.requestId] })).map((e) => e.id), [near.id]);
});

test('findEntries is not fooled by a body or a header that holds what looks like an id or a replayOf', async (t) => {
  const target = entry();
  const mimic = entry({ headers: { 'x-note': `,"replayOf":"${target.id}"` } });
  const dir = await written(t, [[target], [
    mimic,
    `{"id":"${target.id}","requestId":"${target.id}",\n"replayOf":"${target.id}"}`,
  ]]);
  assert.deepEqual((await findEntries(dir, { ids: [target.id], replaysOf: [target.id] })).map((e) => e.id), [
    target.id,
  ]);
});

test("findEntries reads a line in another order than the writer's (a hand edit) by parsing it; a damaged line that names the id is reported, a stray one is not", async (t) => {
  const dir = await tempDir(t, 'store-ledger-find-');
  await mkdir(join(dir, 'ledger'));
  const { id: _id, requestId: _r, ...rest } = entry();
  const reordered = { ...rest, requestId: 'by-hand', id: 'hand' };
  const lines = [
    '{"not":"an entry"}',
    JSON.stringify(reordered),
    '{"id":"broken","requestId":"x","time":',
    '',
    `{"id":"wrong","requestId":"x","time":"t","status":"no"}`,
  ];
  await writeFile(join(dir, 'ledger', 'a-1.jsonl'), `${lines.join('\n')}\n`);
  const damaged: DamagedLine[] = [];
  const report = (d: DamagedLine) => void damaged.push(d);
  assert.deepEqual((await findEntries(dir, { ids: ['by-hand'] }, report)).map((e) => e.id), ['hand']);
  assert.equal(damaged.length, 0);
  assert.deepEqual(await findEntries(dir, { ids: ['broken', 'wrong'] }, report), []);
  assert.deepEqual(damaged.map((d) => [d.file.endsWith('a-1.jsonl'), d.line, d.problem]), [[true, 3, 'not JSON'], [
    true,
    5,
    'method: is required; path: is required; client: is required',
  ]]);
});

test('findEntries leaves out a last line still being written, a segment gone since the listing, and reads no ledger as none', async (t) => {
  const whole = entry({ requestId: 'whole' });
  const dir = await written(t, [[whole]]);
  const torn = JSON.stringify(entry({ requestId: 'torn' }));
  await appendFile(join(dir, 'ledger', 'a-1.jsonl'), torn.slice(0, torn.length - 5));
  assert.deepEqual((await findEntries(dir, { ids: ['whole', 'torn'] })).map((e) => e.requestId), ['whole']);
  await appendFile(join(dir, 'ledger', 'a-1.jsonl'), `${torn.slice(torn.length - 5)}\n`);
  assert.deepEqual((await findEntries(dir, { ids: ['whole', 'torn'] })).map((e) => e.requestId), ['whole', 'torn']);
  await rm(join(dir, 'ledger'), { recursive: true });
  assert.deepEqual(await findEntries(dir, { ids: ['whole'] }), []);
});

test('findEntries refuses a segment name that is a symbolic link, and an unreadable ledger folder', async (t) => {
  const dir = await tempDir(t, 'store-ledger-find-');
  await mkdir(join(dir, 'ledger'));
  await writeFile(join(dir, 'elsewhere.jsonl'), `${JSON.stringify(entry({ requestId: 'linked' }))}\n`);
  await symlink(join(dir, 'elsewhere.jsonl'), join(dir, 'ledger', 'a-1.jsonl'));
  await assert.rejects(
    findEntries(dir, { ids: ['linked'] }),
    (error: unknown) => error instanceof LedgerUnreadableError && /a-1\.jsonl: not a regular file/.test(error.message),
  );
  const file = await tempDir(t, 'store-ledger-find-');
  await writeFile(join(file, 'ledger'), 'not a folder');
  await assert.rejects(
    findEntries(file, { ids: ['x'] }),
    (error: unknown) => error instanceof LedgerUnreadableError && /ENOTDIR/.test(error.message),
  );
});

test('findEntries gives the event loop a turn between the pieces it reads: a 16 MiB ledger is looked up without holding the loop 50 ms', async (t) => {
  const fill = Array.from(
    { length: 16 * 1024 },
    (_, i): [LedgerEntry, string] => [entry(), JSON.stringify({ text: `filler ${i}`, pad: 'z'.repeat(900) })],
  );
  const target = entry();
  const dir = await written(t, [...fill, [target, '{}']]);
  const { value, heldMs, ticks } = await loopHeld(() => findEntries(dir, { ids: [target.id], replaysOf: [target.id] }));
  assert.deepEqual(value.map((e) => e.id), [target.id]);
  t.diagnostic(`held at most ${heldMs.toFixed(1)} ms of CPU, ${ticks} ticks`);
  assert.ok(ticks > 1, 'the timer ran during the lookup');
  assert.ok(heldMs < 50, `the event loop was held ${heldMs.toFixed(1)} ms`);
});
