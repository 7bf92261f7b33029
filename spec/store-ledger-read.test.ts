// LedgerTail in the server (the inspector's list) over a large ledger: it reads segments in pieces
// and parses in slices, giving the event loop a turn in between, so the server's other requests
// are not kept waiting while a page lists a ledger of tens of MiB. The event loop's longest hold
// is measured in CPU time (spec/_loop.ts), which a machine busy elsewhere does not inflate.
import assert from 'node:assert/strict';
import { appendFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import type { LedgerConfig } from '../lib/store/ledger/config.ts';
import { Ledger } from '../lib/store/ledger/ledger.ts';
import type { LedgerEntry } from '../lib/model/ledger-entry.ts';
import { LedgerTail } from '../lib/store/ledger/read.ts';
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
    hook: 'wake',
    client: '127.0.0.1',
    lane: 'authenticated',
    auth: 'token',
    headers: { 'content-type': 'application/json' },
    status: 202,
    durationMs: 1,
    ...fields,
  };
}

async function written(t: TestContext, entries: [LedgerEntry, string?][]): Promise<string> {
  const dir = await tempDir(t, 'store-ledger-read-');
  const ledger = await Ledger.open(dir, { config: CONFIG });
  for (const [e, body] of entries) ledger.record(e, body === undefined ? undefined : Buffer.from(body), 1024 * 1024);
  await ledger.close();
  return dir;
}

test('LedgerTail.newest() over a 16 MiB ledger, filtered down to its oldest entry, never holds the event loop 50 ms', async (t) => {
  const oldest = entry({ status: 500, hook: 'rare' });
  const fill = Array.from(
    { length: 16 * 1024 },
    (_, i): [LedgerEntry, string] => [entry(), JSON.stringify({ text: `filler ${i}`, pad: 'z'.repeat(900) })],
  );
  const dir = await written(t, [[oldest, '{}'], ...fill]);
  const tail = new LedgerTail(dir);
  const { value, heldMs, ticks } = await loopHeld(() => tail.newest(50, (e) => e.hook === 'rare'));
  t.diagnostic(`held at most ${heldMs.toFixed(1)} ms of CPU, ${ticks} ticks`);
  assert.deepEqual(value.map((e) => e.id), [oldest.id]);
  assert.ok(ticks > 1, 'the timer ran meanwhile');
  assert.ok(heldMs < 50, `the event loop was held ${heldMs.toFixed(1)} ms`);
  // Parsed once: the same list again is answered from what was parsed.
  const again = await loopHeld(() => tail.newest(50, (e) => e.hook === 'rare'));
  assert.deepEqual(again.value.map((e) => e.id), [oldest.id]);
});

test('LedgerTail reads a line longer than its piece whole, between shorter ones', async (t) => {
  const large = 'y'.repeat(700_000);
  const [a, b, c] = [entry(), entry(), entry()];
  const dir = await written(t, [[a, '{}'], [b, `{"text":"${large}"}`], [c, '{}']]);
  const tail = new LedgerTail(dir);
  const entries = await tail.entries();
  assert.deepEqual(entries.map((e) => e.id), [a.id, b.id, c.id]);
  assert.equal(entries[1]!.body!.data.length, large.length + 11);
  const newest = await new LedgerTail(dir).newest(3, () => true);
  assert.deepEqual(newest.map((e) => [e.id, e.body?.data.length]), [[c.id, 2], [b.id, large.length + 11], [a.id, 2]]);
});

test('LedgerTail takes a line written in two halves once it is whole, and its version moves only when whole lines come or a segment goes', async (t) => {
  const dir = await tempDir(t, 'store-ledger-read-');
  await mkdir(join(dir, 'ledger'));
  const file = join(dir, 'ledger', 'a-1.jsonl');
  const [a, b, c] = [entry(), entry(), entry()];
  await writeFile(file, `${JSON.stringify(a)}\n${JSON.stringify(b).slice(0, 20)}`);
  const tail = new LedgerTail(dir);
  const first = await tail.version();
  assert.deepEqual((await tail.newest(10, () => true)).map((e) => e.id), [a.id]);
  assert.equal(await tail.version(), first, 'nothing new, the same version');
  await appendFile(file, `${JSON.stringify(b).slice(20)}\n${JSON.stringify(c)}\n`);
  const second = await tail.version();
  assert.notEqual(second, first);
  assert.deepEqual((await tail.newest(10, () => true)).map((e) => e.id), [c.id, b.id, a.id]);
  assert.deepEqual((await tail.entries()).map((e) => e.id), [a.id, b.id, c.id]);
  assert.equal(await tail.version(), second);
  await writeFile(join(dir, 'ledger', 'a-2.jsonl'), '');
  await rm(file);
  assert.notEqual(await tail.version(), second, 'a segment trimmed is a change');
  assert.deepEqual(await tail.newest(10, () => true), []);
});

test("LedgerTail reads an entry's cause back, and counts a line whose cause is of no known kind as damaged", async (t) => {
  const cause = { kind: 'transform' as const, text: 'threw: boom', at: 'ci.mjs:4' };
  const [a, b] = [entry({ status: 500, cause }), entry({ cause: { kind: 'whim' as 'policy', text: 'x' } })];
  const dir = await written(t, [[a], [b]]);
  const damaged: string[] = [];
  const entries = await new LedgerTail(dir, (d) => damaged.push(d.problem)).entries();
  assert.deepEqual(entries.map((e) => [e.id, e.cause]), [[a.id, cause]]);
  assert.equal(damaged.length, 1);
  assert.match(damaged[0]!, /cause\.kind/);
});
