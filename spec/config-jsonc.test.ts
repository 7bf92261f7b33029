import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseJsonc, stripJsonc } from '../lib/config/jsonc.ts';

function value(text: string): unknown {
  const result = parseJsonc(text);
  assert.ok(result.ok, result.ok ? '' : result.error);
  return result.value;
}

function error(text: string): string {
  const result = parseJsonc(text);
  assert.ok(!result.ok, `expected an error for ${JSON.stringify(text)}`);
  return result.error;
}

test('parseJsonc() reads plain JSON as JSON.parse does', () => {
  const text = '{"a": [1, -2.5e3, "x\\u00e9", true, false, null], "b": {}}';
  assert.deepEqual(value(text), JSON.parse(text));
});

test('parseJsonc() returns non-object top-level values as they are', () => {
  assert.equal(value('42'), 42);
  assert.equal(value('"s" // note'), 's');
  assert.equal(value('null'), null);
  assert.deepEqual(value('[1, 2,]'), [1, 2]);
});

test('parseJsonc() ignores line comments in every position', () => {
  const text =
    '// head\n{ // open\n  "a" // key\n  : // colon\n  1 // value\n  , "b": [ // arr\n 2 // el\n ] // close\n} // tail';
  assert.deepEqual(value(text), { a: 1, b: [2] });
});

test('parseJsonc() ignores block comments in every position, touching tokens or spanning lines', () => {
  const text = '/* a\n * b */{/**/"a"/*k*/:/*v*/1/* "quoted" // x */,"b":[/*\n*/2]}/* end */';
  assert.deepEqual(value(text), { a: 1, b: [2] });
});

test('parseJsonc() keeps `//` and `/*` inside strings', () => {
  assert.deepEqual(value('{"url": "http://x", "glob": "/* not a comment */"}'), {
    url: 'http://x',
    glob: '/* not a comment */',
  });
});

test('parseJsonc() follows escaped quotes and backslashes to the end of a string', () => {
  const text = '["a\\" // still text", "dir\\\\" // comment\n, "\\\\\\"/*"]';
  assert.deepEqual(value(text), ['a" // still text', 'dir\\', '\\"/*']);
});

test('parseJsonc() drops trailing commas, nested and with comments before the bracket', () => {
  const text = '{"a": [1, [2,], {"b": 3,},], "c": 4, // last\n /* really */ }';
  assert.deepEqual(value(text), { a: [1, [2], { b: 3 }], c: 4 });
});

/** Each case: inputs parseJsonc() refuses, with the error (a string: exactly; a pattern: matching). */
const refusals: { name: string; errors: [text: string, error: string | RegExp][] }[] = [
  {
    name: 'rejects commas that are not trailing',
    errors: [['[,]', /^line 1, column 2: /], ['{,}', /^line 1, column 2: /], ['[1,,]', /^line 1, column 4: /], [
      '{"a":,}',
      /^line 1, column 6: /,
    ], [',', /^line 1, column 1: /]],
  },
  {
    name: 'reports an unterminated block comment where it opens',
    errors: [['{\n  "a": 1,\n  "b": /* the rest\n  is lost', 'line 3, column 8: unterminated comment'], [
      '{"a": 1} /*',
      'line 1, column 10: unterminated comment',
    ]],
  },
  {
    name: 'reports a JSON error that comes before an unterminated comment',
    errors: [['{"a" 1 /* x', /^line 1, column 6: /]],
  },
  {
    name: 'names line and column of a JSON error with a position',
    errors: [['{\n  "a": 1\n  "b": 2\n}', /^line 3, column 3: \S/], ['{\r\n  "a": 01\r\n}', /^line 2, column 9: /], [
      '/* é */ {"é": 1} x',
      /^line 1, column 18: /,
    ]],
  },
  {
    name: 'locates the errors V8 reports without a position',
    errors: [
      ['{\n  "a": True\n}', "line 2, column 8: unexpected token 'T'"],
      ['{"a": tru}', /^line 1, column 10: /],
      ['[tx]', /^line 1, column 3: /],
      ['[1, 2,, 3]', /^line 1, column 7: /],
      ['{"a": \'b\'}', /^line 1, column 7: /],
      ['{"a": [], "b": {"c": [null, undefined]}}', /^line 1, column 29: /],
    ],
  },
  {
    name: 'reports running out of input after the last token',
    errors: [['', /^line 1, column 1: /], ['// only a comment\n', /^line 1, column 1: /], [
      '\n  nul\n\n',
      /^line 2, column 6: /,
    ]],
  },
  {
    name: 'rejects a lone slash',
    errors: [['/', /^line 1, column 1: /], ['{"a": 1 / 2}', /^line 1, column 9: /], [
      '{"a": 1}\n/',
      /^line 2, column 1: /,
    ]],
  },
];

for (const c of refusals) {
  test(`parseJsonc() ${c.name}`, () => {
    for (const [text, expected] of c.errors) {
      if (typeof expected === 'string') assert.equal(error(text), expected, text);
      else assert.match(error(text), expected, text);
    }
  });
}

test('parseJsonc() accepts a leading BOM and leaves it out of columns', () => {
  assert.deepEqual(value('\uFEFF{"a": 1}'), { a: 1 });
  assert.match(error('\uFEFF{"a" 1}'), /^line 1, column 6: /);
});

test('parseJsonc() keeps the input out of its error messages', () => {
  const message = error('{"token": "s3cret-value", "n": bogus}');
  assert.doesNotMatch(message, /s3cret/);
  assert.match(message, /^line 1, column 32: unexpected token 'b'$/);
});

test('stripJsonc() blanks comments and trailing commas without moving anything', () => {
  const text = '\uFEFF{"a": "//x", /* c\n */ "b": [1,], // end\r\n}';
  const out = stripJsonc(text);
  assert.equal(out, '{"a": "//x",     \n    "b": [1 ]        \r\n}');
  assert.equal(out.length, text.length - 1);
});
