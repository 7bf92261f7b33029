import assert from 'node:assert/strict';
import test from 'node:test';
import { JsonBytes } from '../lib/store/ledger/json-bytes.ts';

// The ledger's lines are read back with JSON.parse and by people: what JsonBytes writes must be
// JSON.stringify's text, byte for byte, for every value an entry can hold.

function written(write: (out: JsonBytes) => void, size = 1): string {
  // A 1-byte buffer to begin with: every write has to grow it.
  const out = new JsonBytes(Buffer.alloc(size));
  write(out);
  return out.buf.toString('utf8', 0, out.used);
}

const STRINGS = [
  '',
  'plain',
  'quote " and backslash \\ and slash /',
  'tab\tline\nreturn\rback\bfeed\f',
  '\u0000\u0001\u001f\u007f',
  'é ü ß € 𝄞 中文',
  '\u2028\u2029',
  'lone \ud800 high, lone \udc00 low, pair \ud83d\ude00',
  '{"text":"a \\"quoted\\" body","n":1}',
  'x'.repeat(70_000),
];

test('JsonBytes writes strings as JSON.stringify does: escapes, control characters, non-ASCII, lone surrogates', () => {
  for (const text of STRINGS) {
    assert.equal(written((out) => out.string(text)), JSON.stringify(text), JSON.stringify(text.slice(0, 40)));
  }
});

test('JsonBytes writes numbers, booleans and what JSON cannot hold as JSON.stringify does', () => {
  const values = [
    0,
    -0,
    1,
    -1,
    200,
    1.3,
    0.1 + 0.2,
    1e21,
    5e-7,
    -123.456,
    Number.MAX_SAFE_INTEGER,
    NaN,
    Infinity,
    -Infinity,
    true,
    false,
    null,
  ];
  for (const value of values) assert.equal(written((out) => out.value(value)), JSON.stringify(value), String(value));
  assert.equal(
    written((out) => out.value([undefined, () => 1, Symbol('s')])),
    JSON.stringify([undefined, () => 1, Symbol('s')]),
    'in an array: null',
  );
});

test('JsonBytes writes objects and arrays as JSON.stringify does: key order, left-out members, nesting, an own __proto__', () => {
  const headers: Record<string, unknown> = {
    host: '127.0.0.1:8080',
    'x-multi': ['a', 'b'],
    authorization: '[redacted]',
  };
  Object.defineProperty(headers, '__proto__', { value: 'own', enumerable: true, writable: true, configurable: true });
  const values: unknown[] = [
    {},
    [],
    { b: 1, a: 2, 10: 'ten', 2: 'two', 'k"ey': 'v' },
    { skipped: undefined, fn: () => 1, sym: Symbol('x'), kept: 'yes' },
    {
      id: 'a1',
      headers,
      became: { events: [1, 2, 3], runs: ['r1'] },
      status: 200,
      durationMs: 1.3,
      ok: true,
      nested: [[], {}, [{ deep: ['é'] }]],
    },
    Object.create({ inherited: 'not own' }, {
      own: { value: 1, enumerable: true },
      hidden: { value: 2, enumerable: false },
    }),
  ];
  for (const value of values) assert.equal(written((out) => out.value(value)), JSON.stringify(value));
});

test('JsonBytes.members writes an object without its braces, so a caller can add members after them', () => {
  assert.equal(
    written((out) => {
      out.byte(0x7b);
      const any = out.members({ a: 1, gone: undefined }, false);
      out.ascii(any ? ',"b":2' : '"b":2');
      out.byte(0x7d);
    }),
    JSON.stringify({ a: 1, b: 2 }),
  );
  assert.equal(written((out) => out.members({ gone: undefined }, false)), '', 'nothing written');
  assert.equal(written((out) => assert.equal(out.members({}, true), true)), '', 'a member before stays counted');
});

test('JsonBytes.text writes UTF-8 bytes as the JSON string of their text, without decoding them', () => {
  // Valid UTF-8 holds no lone surrogate: those strings go without theirs.
  for (const text of STRINGS.map((s) => s.replace('lone \ud800 high, lone \udc00 low, ', ''))) {
    assert.equal(
      written((out) => out.text(Buffer.from(text, 'utf8'))),
      JSON.stringify(text),
      JSON.stringify(text.slice(0, 40)),
    );
  }
});

test('JsonBytes keeps what it wrote when it grows, and writes after what is there', () => {
  const out = new JsonBytes(Buffer.alloc(4));
  out.ascii('ab');
  out.string('x'.repeat(1000));
  out.byte(0x0a);
  assert.equal(out.buf.toString('utf8', 0, out.used), `ab"${'x'.repeat(1000)}"\n`);
  assert.ok(out.buf.length >= out.used);
});
