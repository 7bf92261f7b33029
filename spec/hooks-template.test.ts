import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileTemplate, isTemplated, parsePath, render, valueAt } from '../lib/hooks/template.ts';

// A path written as config writes it, read the way forEach and filters read it.
function resolvePath(root: unknown, text: string): unknown {
  const path = parsePath(text);
  assert.ok(path !== null, `a well-formed path: ${text}`);
  return valueAt(root, path);
}
import type { Template, TemplateContext } from '../lib/hooks/template.ts';
import { testTable } from './_cases.ts';

const NOW = new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 678));

function context(overrides: Partial<TemplateContext> = {}): TemplateContext {
  return {
    payload: {
      from: 'ann@example.com',
      count: 3,
      zero: 0,
      ok: true,
      off: false,
      none: null,
      tags: ['a', 'b'],
      meta: { id: 7, empty: {} },
      messages: [{ subject: 'hi', to: ['x', 'y'] }, { subject: 'yo' }],
      grid: [[1, 2], [3, [4, { deep: 'found' }]]],
      'x.y': 'dotted',
      'we"ird': 'quoted',
      payload: 'inner',
    },
    headers: { 'x-github-event': 'push', 'content-type': 'application/json' },
    query: { source: 'gmail', Mixed: 'case' },
    path: 'gmail',
    now: NOW,
    ...overrides,
  };
}

function compile(source: string): Template {
  const result = compileTemplate(source);
  if (!result.ok) throw new Error(`unexpected compile error: ${result.error}`);
  return result.template;
}

function run(source: string, ctx: TemplateContext = context()): string {
  return render(compile(source), ctx).text;
}

function unresolved(source: string, ctx: TemplateContext = context()): string[] {
  return render(compile(source), ctx).unresolved;
}

function compileError(source: string): string {
  const result = compileTemplate(source);
  assert.equal(result.ok, false, `expected ${JSON.stringify(source)} not to compile`);
  return result.ok ? '' : result.error;
}

/** Templates and what they render with the sample context, by the rule they show. */
const RENDERED: Record<string, [template: string, rendered: string][]> = {
  'render() reads payload.<path> and the same path without the payload prefix': [
    ['{{ payload.from }}', 'ann@example.com'],
    ['{{ from }}', 'ann@example.com'],
    ['{{ meta.id }}', '7'],
  ],
  'render() reads headers by lower-cased name and query by exact name': [
    ['{{ headers.x-github-event }}', 'push'],
    ['{{ headers.X-GitHub-Event }}', 'push'],
    ['{{ headers["Content-Type"] }}', 'application/json'],
    ['{{ query.source }}', 'gmail'],
    ['{{ query.Mixed }}', 'case'],
    ['{{ query.mixed }}', ''],
  ],
  'render() reaches a payload key that shadows a root through payload.': [
    ['{{ payload.payload }}', 'inner'],
    ['{{ payload.path }}', ''],
  ],
  'render() follows nested paths with numeric indices': [
    ['{{ messages[0].subject }}', 'hi'],
    ['{{ payload.messages[1].subject }}', 'yo'],
    ['{{ messages[0].to[1] }}', 'y'],
    ['{{ grid[1][1][1].deep }}', 'found'],
    ['{{ grid[0][1] }}', '2'],
  ],
  'render() reads quoted keys, including ones with dots and escapes': [
    ['{{ payload["x.y"] }}', 'dotted'],
    ['{{ payload["we\\"ird"] }}', 'quoted'],
    ['{{ messages[0]["subject"] }}', 'hi'],
  ],
  'render() accepts any whitespace inside the braces, or none': [
    ['{{from}}', 'ann@example.com'],
    ['{{   from   }}', 'ann@example.com'],
    ['{{\n\tfrom\n}}', 'ann@example.com'],
  ],
  'render() treats a lone { or } and a stray }} as literal text': [
    ['{ "a": "{{ from }}" }', '{ "a": "ann@example.com" }'],
    ['}} and { and }', '}} and { and }'],
    ['{{ from }}}', 'ann@example.com}'],
  ],
  'render() reads length of an array (an own property) but not of a string': [
    ['{{ tags.length }}', '2'],
    ['[{{ from.length }}]', '[]'],
  ],
};

testTable(RENDERED, ([template, rendered]) => assert.equal(run(template), rendered, template));

test('render() renders path as the hook name and now as an ISO 8601 time', () => {
  assert.equal(run('{{ path }}', context({ path: 'github' })), 'github');
  assert.equal(run('{{ now }}'), '2024-01-02T03:04:05.678Z');
});

test('render() renders a bare payload as JSON, and a string payload as-is', () => {
  const payload = { a: [1, { b: 'c' }] };
  assert.equal(run('{{ payload }}', context({ payload })), JSON.stringify(payload));
  assert.equal(run('{{ payload }}', context({ payload: 'plain' })), 'plain');
  assert.equal(run('{{ payload }}', context({ payload: undefined })), '');
});

/** Expressions that resolve to nothing, so render as the empty string, by the rule they show. */
const NOTHING: Record<string, string[]> = {
  'render() renders missing, undefined and null as the empty string': [
    'nope',
    'nope.deeper[3].still',
    'none',
    'none.x',
    'messages[5].subject',
    'from.x',
    'headers.x-missing',
    'query.nope',
  ],
  'render() resolves prototype-chain names to nothing at every depth': [
    'toString',
    'hasOwnProperty',
    '__proto__',
    'constructor',
    'constructor.name',
    'payload.constructor',
    'payload.__proto__',
    'payload.__proto__.polluted',
    'meta.constructor.name',
    'meta.__proto__',
    'meta.toString',
    'messages[0].constructor.prototype',
    'messages[0].subject.constructor',
    'tags.constructor',
    'tags.map',
    'tags.__proto__',
    'from.length',
    'from.constructor',
    'payload["constructor"]',
    'payload["__proto__"]',
    'meta["prototype"]',
  ],
  'render() resolves prototype-chain names in headers and query to nothing': [
    'headers.__proto__',
    'headers.constructor',
    'headers.__PROTO__',
    'headers.Constructor',
    'headers.toString',
    'headers.hasOwnProperty',
    'headers["__proto__"]',
    'query.__proto__',
    'query.constructor',
    'query.prototype',
    'query.valueOf',
  ],
};

testTable(NOTHING, (expr) => assert.equal(run(`[{{ ${expr} }}]`), '[]', expr));

test('render() renders a payload that is missing, or a key that holds undefined, as the empty string', () => {
  assert.equal(run('[{{ a }}]', context({ payload: undefined })), '[]');
  assert.equal(run('[{{ a }}]', context({ payload: { a: undefined } })), '[]');
});

test('render() names each placeholder that resolved to nothing, as written, once and in order', () => {
  assert.deepEqual(unresolved('{{ from }} {{ count }}'), []);
  assert.deepEqual(
    unresolved(
      '[{{ nope }}|{{ none }}|{{  messages[5].subject }}|{{ nope }}|{{ headers.x-missing }}|{{ query.nope }}]',
    ),
    [
      'nope',
      'none',
      'messages[5].subject',
      'headers.x-missing',
      'query.nope',
    ],
  );
  // Not data is nothing too; an empty string, zero and false are values.
  const payload = { fn: () => 'leak', odd: { toJSON: () => undefined }, empty: '', zero: 0, no: false };
  assert.deepEqual(unresolved('{{ fn }}{{ odd }}{{ empty }}{{ zero }}{{ no }}', context({ payload })), ['fn', 'odd']);
  assert.deepEqual(unresolved('{{ path }} {{ now }} literal only'), []);
});

test('render() renders numbers and booleans with String() and objects and arrays as JSON', () => {
  assert.equal(run('{{ count }}/{{ zero }}'), '3/0');
  assert.equal(run('{{ ok }} {{ off }}'), 'true false');
  assert.equal(run('{{ tags }}'), '["a","b"]');
  assert.equal(run('{{ meta }}'), '{"id":7,"empty":{}}');
  assert.equal(run('{{ meta.empty }}'), '{}');
  assert.equal(run('{{ n }}', context({ payload: { n: 10n } })), '10');
});

test('render() renders anything that is not data as the empty string', () => {
  const payload = { fn: () => 'leak', sym: Symbol('s'), odd: { toJSON: () => undefined } };
  assert.equal(run('[{{ fn }}{{ sym }}{{ odd }}]', context({ payload })), '[]');
});

test('render() copies literal text verbatim around several expressions', () => {
  assert.equal(
    run('New mail from {{ from }} to {{ messages[0].to[0] }} ({{ count }}) via {{ path }}.'),
    'New mail from ann@example.com to x (3) via gmail.',
  );
  assert.equal(run('{{ tags[0] }}{{ tags[1] }}'), 'ab');
  assert.equal(run('no expressions at all'), 'no expressions at all');
  assert.equal(run(''), '');
});

test('render() never resolves __proto__, prototype or constructor even as own keys', () => {
  const payload = JSON.parse(
    '{"__proto__": {"x": 1}, "constructor": "c", "prototype": "p", "a": {"constructor": "d"}}',
  );
  assert.equal(
    run('[{{ __proto__ }}{{ __proto__.x }}{{ constructor }}{{ prototype }}{{ a.constructor }}]', context({ payload })),
    '[]',
  );
});

test('render() does not read inherited properties from the objects it is given', () => {
  const payload = Object.create({ inherited: 'no' }) as Record<string, unknown>;
  payload['own'] = 'yes';
  const headers = Object.assign(Object.create({ 'x-inherited': 'no' }) as Record<string, string>, { 'x-own': 'yes' });
  assert.equal(run('{{ own }}|{{ inherited }}', context({ payload })), 'yes|');
  assert.equal(run('{{ headers.x-own }}|{{ headers.x-inherited }}', context({ headers })), 'yes|');
});

test('render() does not run getters on the payload', () => {
  let calls = 0;
  const payload = {
    get secret() {
      calls += 1;
      return 'ran';
    },
  };
  assert.equal(run('[{{ secret }}]', context({ payload })), '[]');
  assert.equal(calls, 0);
});

test('render() applies numeric indices only to real arrays', () => {
  const payload = { obj: { '0': 'zero' }, str: 'abc', arr: ['first'] };
  assert.equal(run('[{{ obj[0] }}{{ str[0] }}]', context({ payload })), '[]');
  assert.equal(run('{{ arr[0] }}', context({ payload })), 'first');
  assert.equal(run('{{ obj.0 }}', context({ payload })), 'zero');
});

test('render() skips holes in sparse arrays', () => {
  const payload = { arr: [, 'b'] };
  assert.equal(run('[{{ arr[0] }}]{{ arr[1] }}', context({ payload })), '[]b');
});

/** Templates that do not compile, and the error, by the rule they break. */
const COMPILE_ERRORS: Record<string, [source: string, error: string][]> = {
  'compileTemplate() reports an unclosed {{ with its offset': [
    ['Hello there {{ from', 'unclosed "{{" at offset 12'],
    ['{{ a }} then {{ b } }', 'unclosed "{{" at offset 13'],
    ['{{', 'unclosed "{{" at offset 0'],
  ],
  'compileTemplate() reports an empty expression with its offset': [
    ['ab {{}}', 'empty expression at offset 3'],
    ['ab {{   }}', 'empty expression at offset 3'],
  ],
  'compileTemplate() ends an expression at the first }}': [
    ['{{ a["}}"] }}', 'invalid expression "a[\\"" at offset 0'],
    ['{{{ a }}}', 'invalid expression "{ a" at offset 0'],
  ],
  'compileTemplate() rejects headers and query without exactly one name': [
    ['{{ headers }}', '"headers" takes exactly one name at offset 0'],
    ['{{ headers.a.b }}', '"headers" takes exactly one name at offset 0'],
    ['{{ headers[0] }}', '"headers" takes exactly one name at offset 0'],
    ['-- {{ query }}', '"query" takes exactly one name at offset 3'],
  ],
  'compileTemplate() rejects a path after path or now': [
    ['{{ path.x }}', '"path" takes no path at offset 0'],
    ['{{ now[0] }}', '"now" takes no path at offset 0'],
  ],
  'compileTemplate() reports the first error in the source': [
    ['{{ a }} {{ }} {{ b', 'empty expression at offset 8'],
  ],
};

testTable(COMPILE_ERRORS, ([source, error]) => assert.equal(compileError(source), error, source));

test('compileTemplate() reports a malformed expression with its text and offset', () => {
  assert.equal(compileError('x {{ foo.. }}'), 'invalid expression "foo.." at offset 2');
  for (
    const bad of [
      'a b',
      'a .b',
      '.a',
      '[0]',
      'a[x]',
      'a[-1]',
      'a[01]',
      'a[1.5]',
      'a[]',
      'a["x]',
      "a['x']",
      'a["\\x"]',
      'a.',
      'a || b',
      '{ a',
      'a + 1',
      'a()',
    ]
  ) {
    assert.equal(compileError(`{{ ${bad} }}`), `invalid expression ${JSON.stringify(bad)} at offset 0`, bad);
  }
});

test('compileTemplate() keeps the source and splits it into literal and expression parts', () => {
  const template = compile('Hi {{ payload.a[0] }}, {{ headers.X-A }}{{ now }}!');
  assert.equal(template.source, 'Hi {{ payload.a[0] }}, {{ headers.X-A }}{{ now }}!');
  assert.deepEqual(template.parts, [
    'Hi ',
    { text: 'payload.a[0]', root: 'payload', path: ['a', 0] },
    ', ',
    { text: 'headers.X-A', root: 'headers', name: 'X-A' },
    { text: 'now', root: 'now' },
    '!',
  ]);
});

test('compileTemplate() produces a template that renders the same for every call', () => {
  const template = compile('{{ from }}:{{ count }}');
  assert.equal(render(template, context()).text, 'ann@example.com:3');
  assert.equal(render(template, context({ payload: { from: 'bob', count: 1 } })).text, 'bob:1');
  assert.equal(render(template, context()).text, 'ann@example.com:3');
});

test('isTemplated() is true only when the source holds a {{ }} expression', () => {
  assert.equal(isTemplated('hook:gmail'), false);
  assert.equal(isTemplated(''), false);
  assert.equal(isTemplated('{ single } braces'), false);
  assert.equal(isTemplated('}} before {{'), false);
  assert.equal(isTemplated('unclosed {{ a'), false);
  assert.equal(isTemplated('hook:{{ from }}'), true);
  assert.equal(isTemplated('hook:{{from}}'), true);
  assert.equal(isTemplated('hook:{{ path }}'), true);
  assert.equal(isTemplated('{{}}'), true);
});

test('valueAt() returns the array a forEach path names', () => {
  const payload = context().payload;
  assert.deepEqual(resolvePath(payload, 'messages'), [{ subject: 'hi', to: ['x', 'y'] }, { subject: 'yo' }]);
  assert.deepEqual(resolvePath(payload, 'messages[0].to'), ['x', 'y']);
  assert.deepEqual(resolvePath(payload, 'grid[1][1]'), [4, { deep: 'found' }]);
  assert.deepEqual(resolvePath({ a: { 'x.y': [1] } }, 'a["x.y"]'), [1]);
  assert.equal(resolvePath({ 'x.y': [1] }, 'x'), undefined);
});

test('valueAt() treats payload as an ordinary key, relative to the root it is given', () => {
  assert.equal(resolvePath(context().payload, 'payload'), 'inner');
  assert.deepEqual(resolvePath([[1, 2]], '0'), [1, 2]);
  assert.deepEqual(resolvePath({ a: { b: [1] } }, 'a.b'), [1]);
});

test('valueAt() returns undefined for missing paths and prototype-chain names', () => {
  const payload = { a: { b: null }, list: [1] };
  assert.equal(resolvePath(payload, 'nope'), undefined);
  assert.equal(resolvePath(payload, 'a.b'), null);
  assert.equal(resolvePath(payload, 'a.b.c'), undefined);
  assert.equal(resolvePath(payload, 'constructor'), undefined);
  assert.equal(resolvePath(payload, 'a.__proto__'), undefined);
  assert.equal(resolvePath(payload, 'list.constructor.prototype'), undefined);
  assert.equal(resolvePath(payload, 'list.map'), undefined);
  assert.equal(resolvePath(null, 'a'), undefined);
  assert.equal(resolvePath('text', 'length'), undefined);
});

test('parsePath() answers null for a malformed path', () => {
  assert.equal(parsePath(''), null);
  assert.equal(parsePath('a..b'), null);
  assert.equal(parsePath(' a'), null);
});
