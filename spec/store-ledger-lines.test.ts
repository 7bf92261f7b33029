import assert from 'node:assert/strict';
import { mkdir, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'node:test';
import { JsonBytes } from '../lib/store/ledger/json-bytes.ts';
import type { LedgerEntry } from '../lib/model/ledger-entry.ts';
import { keepBody, scanSegment, writeEntryLine } from '../lib/store/ledger/lines.ts';
import { tempDir } from './_dir.ts';

function entry(fields: Partial<LedgerEntry> = {}): LedgerEntry {
  return {
    id: 'e1',
    requestId: 'r1',
    time: '2027-01-15T08:00:00.000Z',
    method: 'POST',
    path: '/hooks/wake',
    client: '127.0.0.1',
    lane: 'authenticated',
    auth: 'token',
    headers: { 'content-type': 'application/json', authorization: '[redacted]' },
    status: 200,
    durationMs: 1.3,
    hook: 'wake',
    became: { events: [7] },
    ...fields,
  };
}

function line(e: LedgerEntry, body?: Buffer, cap = 1024, room = 1_000_000): string {
  const out = new JsonBytes(Buffer.alloc(16));
  writeEntryLine(out, e, body === undefined ? undefined : keepBody(e, body, cap), room);
  return out.buf.toString('utf8', 0, out.used);
}

test('keepBody keeps text as UTF-8 and anything else as base64, cut at its cap and marked', () => {
  const cases: [string, Buffer, number, { encoding: string; data: string; bytes: number; truncated: boolean }][] = [
    ['JSON text as it came', Buffer.from('{"a":"b"}'), 1024, {
      encoding: 'utf8',
      data: '{"a":"b"}',
      bytes: 9,
      truncated: false,
    }],
    ['tabs and line breaks stay text', Buffer.from('a\tb\r\nc'), 1024, {
      encoding: 'utf8',
      data: 'a\tb\r\nc',
      bytes: 6,
      truncated: false,
    }],
    ['a cut inside a 3-byte character leaves that character off', Buffer.from('€'.repeat(400)), 1000, {
      encoding: 'utf8',
      data: '€'.repeat(333),
      bytes: 1200,
      truncated: true,
    }],
    ['a terminal escape is kept as base64', Buffer.from('a\u001b[2Jb'), 1024, {
      encoding: 'base64',
      data: Buffer.from('a\u001b[2Jb').toString('base64'),
      bytes: 6,
      truncated: false,
    }],
    ['invalid UTF-8 is kept as base64', Buffer.from([0x61, 0xff, 0x62]), 1024, {
      encoding: 'base64',
      data: 'Yf9i',
      bytes: 3,
      truncated: false,
    }],
    ['binary cut at its cap stays whole to the cap', Buffer.from([0, 1, 2, 255, 4]), 4, {
      encoding: 'base64',
      data: Buffer.from([0, 1, 2, 255]).toString('base64'),
      bytes: 5,
      truncated: true,
    }],
  ];
  for (const [rule, body, cap, stored] of cases) {
    assert.deepEqual((JSON.parse(line(entry(), body, cap)) as LedgerEntry).body, stored, rule);
  }
});

test('keepBody keeps nothing under a cap of 0, and the entry says why', () => {
  const e = entry();
  assert.equal(keepBody(e, Buffer.from('x'), 0), undefined);
  assert.equal(e.bodyOmitted, 'ledger-cap');
});

test('writeEntryLine writes the entry as JSON.stringify would, with the body as its last member', () => {
  const e = entry({
    signature: {
      scheme: 'github',
      ok: false,
      why: 'bad-signature',
      header: 'x-hub-signature-256',
      reason: 'invalid signature',
    },
  });
  const body = Buffer.from('{"text":"é \\"quoted\\""}');
  assert.equal(
    line(e, body),
    JSON.stringify({
      ...e,
      body: { encoding: 'utf8', data: body.toString('utf8'), bytes: body.length, truncated: false },
    }),
  );
  assert.equal(line(e), JSON.stringify(e), 'no body');
});

test('writeEntryLine writes an entry too large for a segment without its headers and body, marked', () => {
  const e = entry();
  const written = JSON.parse(line(e, Buffer.alloc(5000, 0x61), 10_000, 1000)) as LedgerEntry;
  assert.deepEqual([written.headers, written.body, written.bodyOmitted, written.id], [
    {},
    undefined,
    'ledger-cap',
    'e1',
  ]);
});

test("scanSegment counts a segment's lines and reads its first entry's time, else the file's", async (t) => {
  const dir = await tempDir(t, 'store-ledger-lines-spec-');
  const lines = Array.from(
    { length: 3000 },
    (_, i) => JSON.stringify(entry({ id: `e${i}`, time: new Date(1_800_000_000_000 + i).toISOString() })),
  );
  await writeFile(join(dir, 'a-1.jsonl'), `${lines.join('\n')}\n`);
  const scanned = await scanSegment(join(dir, 'a-1.jsonl'));
  assert.deepEqual(scanned, {
    bytes: Buffer.byteLength(`${lines.join('\n')}\n`),
    count: 3000,
    firstMs: 1_800_000_000_000,
  }, 'read in pieces of 256 KiB');
  await writeFile(join(dir, 'a-2.jsonl'), 'not json\n{}\n');
  await utimes(join(dir, 'a-2.jsonl'), 1_700_000_000, 1_700_000_000);
  assert.deepEqual(await scanSegment(join(dir, 'a-2.jsonl')), { bytes: 12, count: 2, firstMs: 1_700_000_000_000 });
  await mkdir(join(dir, 'a-3.jsonl'));
  await assert.rejects(scanSegment(join(dir, 'a-3.jsonl')), 'a folder is not a segment');
});

test('scanSegment keeps no more of a first line than its buffer: a long entry tells its time from its start, a damaged segment of one huge line is never held whole', async (t) => {
  const dir = await tempDir(t, 'store-ledger-lines-spec-');
  const long = JSON.stringify({
    ...entry({ time: '2027-02-01T00:00:00.000Z' }),
    body: { encoding: 'utf8', data: 'b'.repeat(600_000), bytes: 600_000, truncated: false },
  });
  await writeFile(join(dir, 'a-1.jsonl'), `${long}\n${JSON.stringify(entry())}\n`);
  assert.deepEqual(await scanSegment(join(dir, 'a-1.jsonl')), {
    bytes: long.length + 1 + JSON.stringify(entry()).length + 1,
    count: 2,
    firstMs: Date.parse('2027-02-01T00:00:00.000Z'),
  });
  // 48 MiB without a line break: the old scan kept a copy of all of it, then joined the copies.
  await writeFile(join(dir, 'a-2.jsonl'), Buffer.alloc(48 * 1_048_576, 0x61));
  // External memory: where both Node and Deno count a Buffer's bytes.
  const before = process.memoryUsage().external;
  let most = before;
  const sample = setInterval(() => (most = Math.max(most, process.memoryUsage().external)), 1);
  const scanned = await scanSegment(join(dir, 'a-2.jsonl')).finally(() => clearInterval(sample));
  most = Math.max(most, process.memoryUsage().external);
  assert.deepEqual(scanned, { bytes: 48 * 1_048_576, count: 0, firstMs: (await stat(join(dir, 'a-2.jsonl'))).mtimeMs });
  assert.ok(most - before < 16 * 1_048_576, `${((most - before) / 1_048_576).toFixed(1)} MiB held while scanning`);
});
