import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  array,
  boolean,
  check,
  formatIssue,
  type Issue,
  join,
  literal,
  number,
  object,
  optional,
  record,
  refine,
  type Schema,
  string,
  suggest,
  typeName,
} from '../lib/schema.ts';

function issues<T>(schema: Schema<T>, value: unknown, at = ''): Issue[] {
  const result = check(schema, value, at);
  assert.ok(!result.ok, `expected ${JSON.stringify(value)} to be refused`);
  return result.issues;
}

function value<T>(schema: Schema<T>, input: unknown): T {
  const result = check(schema, input);
  assert.ok(result.ok, result.ok ? '' : result.issues.map(formatIssue).join('; '));
  return result.value;
}

test('check() returns the value and the ignored keys when there is no problem', () => {
  assert.deepEqual(check(string(), 'x'), { ok: true, value: 'x', ignored: [] });
});

test('check() starts paths at the given root', () => {
  assert.deepEqual(issues(object({ a: number() }), { a: 'x' }, 'body'), [{
    path: 'body.a',
    message: 'must be a number, got string',
  }]);
});

test('check() refuses a value a schema returns undefined for, even without an issue', () => {
  const quiet: Schema<string> = () => undefined;
  assert.deepEqual(check(quiet, 'x'), { ok: false, issues: [], ignored: [] });
});

test('formatIssue() writes `path: message`, or the bare message at the root', () => {
  assert.equal(formatIssue({ path: 'hooks.path', message: 'may not be "/"' }), 'hooks.path: may not be "/"');
  assert.equal(formatIssue({ path: '', message: 'must be an object, got array' }), 'must be an object, got array');
});

test('join() writes plain keys with dots, indices in brackets and odd keys quoted in brackets', () => {
  assert.equal(join('', 'hooks'), 'hooks');
  assert.equal(join('hooks', 'path'), 'hooks.path');
  assert.equal(join('agents.list', 0), 'agents.list[0]');
  assert.equal(join('', 3), '[3]');
  assert.equal(join('a', 'x/y'), 'a["x/y"]');
  assert.equal(join('', 'x/y'), '["x/y"]');
  assert.equal(join('a', 'with space'), 'a["with space"]');
  assert.equal(join('a', ''), 'a[""]');
  assert.equal(join('a', '0'), 'a["0"]');
  assert.equal(join('a', 'say "hi"'), 'a["say \\"hi\\""]');
  assert.equal(join('a', '$_x9'), 'a.$_x9');
});

test('typeName() names null and arrays apart from objects', () => {
  assert.deepEqual(
    [null, [], {}, 'x', 1, true, undefined, 1n].map(typeName),
    ['null', 'array', 'object', 'string', 'number', 'boolean', 'undefined', 'bigint'],
  );
});

test('string() refuses a non-string, naming the type it got', () => {
  assert.deepEqual(issues(string(), 5), [{ path: '', message: 'must be a string, got number' }]);
  assert.deepEqual(issues(string(), null), [{ path: '', message: 'must be a string, got null' }]);
  assert.deepEqual(issues(string(), ['x']), [{ path: '', message: 'must be a string, got array' }]);
});

test('string() keeps white space unless trim is set', () => {
  assert.equal(value(string(), '  a  '), '  a  ');
  assert.equal(value(string({ trim: true }), '  a  '), 'a');
  assert.equal(value(string(), ''), '');
});

test('string({ nonEmpty }) refuses an empty text, after trimming when trim is set', () => {
  assert.deepEqual(issues(string({ nonEmpty: true }), ''), [{ path: '', message: 'must be a non-empty string' }]);
  assert.equal(value(string({ nonEmpty: true }), ' '), ' ');
  assert.deepEqual(issues(string({ trim: true, nonEmpty: true }), ' \n\t '), [{
    path: '',
    message: 'must be a non-empty string',
  }]);
});

test('string({ maxLength }) bounds the (trimmed) length', () => {
  assert.equal(value(string({ maxLength: 3 }), 'abc'), 'abc');
  assert.deepEqual(issues(string({ maxLength: 3 }), 'abcd'), [{ path: '', message: 'must be at most 3 characters' }]);
  assert.equal(value(string({ trim: true, maxLength: 3 }), '  abc  '), 'abc');
});

test('string({ pattern }) reports the rule wording when the text does not match', () => {
  const schema = string({ pattern: { regex: /^\d+$/, rule: 'must contain only digits' } });
  assert.equal(value(schema, '123'), '123');
  assert.deepEqual(issues(schema, '12a'), [{ path: '', message: 'must contain only digits' }]);
});

test('literal() accepts only its values and lists them when refusing', () => {
  const schema = literal('now', 'next-heartbeat');
  assert.equal(value(schema, 'now'), 'now');
  assert.equal(value(schema, 'next-heartbeat'), 'next-heartbeat');
  const message = 'must be one of "now", "next-heartbeat"';
  assert.deepEqual(issues(schema, 'later'), [{ path: '', message }]);
  assert.deepEqual(issues(schema, 'NOW'), [{ path: '', message }]);
  assert.deepEqual(issues(schema, 1), [{ path: '', message }]);
});

test('boolean accepts true and false only', () => {
  assert.equal(value(boolean, true), true);
  assert.equal(value(boolean, false), false);
  assert.deepEqual(issues(boolean, 'true'), [{ path: '', message: 'must be a boolean, got string' }]);
  assert.deepEqual(issues(boolean, 0), [{ path: '', message: 'must be a boolean, got number' }]);
});

test('number() refuses non-numbers and non-finite numbers', () => {
  assert.equal(value(number(), -1.5), -1.5);
  assert.deepEqual(issues(number(), '1'), [{ path: '', message: 'must be a number, got string' }]);
  assert.deepEqual(issues(number(), Number.NaN), [{ path: '', message: 'must be a number, got number' }]);
  assert.deepEqual(issues(number(), Number.POSITIVE_INFINITY), [{ path: '', message: 'must be a number, got number' }]);
});

test('number({ integer }) refuses fractions', () => {
  assert.equal(value(number({ integer: true }), 3), 3);
  assert.deepEqual(issues(number({ integer: true }), 3.5), [{ path: '', message: 'must be an integer' }]);
});

test('number({ min, max }) bounds inclusively', () => {
  const schema = number({ min: 1, max: 10 });
  assert.equal(value(schema, 1), 1);
  assert.equal(value(schema, 10), 10);
  assert.deepEqual(issues(schema, 0), [{ path: '', message: 'must be at least 1' }]);
  assert.deepEqual(issues(schema, 11), [{ path: '', message: 'must be at most 10' }]);
});

test('number({ above }) bounds exclusively', () => {
  const schema = number({ above: 0 });
  assert.equal(value(schema, 0.001), 0.001);
  assert.deepEqual(issues(schema, 0), [{ path: '', message: 'must be greater than 0' }]);
  assert.deepEqual(issues(schema, -3), [{ path: '', message: 'must be greater than 0' }]);
});

test('array() checks every item and reports each bad one at its index', () => {
  const schema = array(number());
  assert.deepEqual(value(schema, [1, 2]), [1, 2]);
  assert.deepEqual(value(schema, []), []);
  assert.deepEqual(issues(schema, [1, 'x', 3, null]), [
    { path: '[1]', message: 'must be a number, got string' },
    { path: '[3]', message: 'must be a number, got null' },
  ]);
  assert.deepEqual(issues(schema, { 0: 1 }), [{ path: '', message: 'must be an array, got object' }]);
});

test('array() returns the checked items, so trimming applies to each', () => {
  assert.deepEqual(value(array(string({ trim: true })), [' a ', 'b ']), ['a', 'b']);
});

test('array({ maxItems }) refuses a longer array before checking its items', () => {
  const schema = array(number(), { maxItems: 2 });
  assert.deepEqual(value(schema, [1, 2]), [1, 2]);
  assert.deepEqual(issues(schema, ['a', 'b', 'c']), [{ path: '', message: 'must have at most 2 items' }]);
});

test('record() checks every value and reports odd keys in brackets', () => {
  const schema = object({ models: record(object({ alias: optional(string({ nonEmpty: true })) })) });
  assert.deepEqual(value(schema, { models: { 'openai/gpt': { alias: 'gpt' }, plain: {} } }), {
    models: { 'openai/gpt': { alias: 'gpt' }, plain: {} },
  });
  assert.deepEqual(issues(schema, { models: { 'openai/gpt': { alias: '' }, ok: 1 } }), [
    { path: 'models["openai/gpt"].alias', message: 'must be a non-empty string' },
    { path: 'models.ok', message: 'must be an object, got number' },
  ]);
  assert.deepEqual(issues(record(number()), [1]), [{ path: '', message: 'must be an object, got array' }]);
});

test('object() returns only the known fields it checked', () => {
  const schema = object({ a: string({ trim: true }), b: optional(number()) });
  assert.deepEqual(value(schema, { a: ' x ' }), { a: 'x' });
  assert.deepEqual(value(schema, { a: 'x', b: 2 }), { a: 'x', b: 2 });
});

test('object() reports a missing required field as required, and treats undefined as missing', () => {
  const schema = object({ a: string(), b: optional(string()) });
  assert.deepEqual(issues(schema, {}), [{ path: 'a', message: 'is required' }]);
  assert.deepEqual(issues(schema, { a: undefined }), [{ path: 'a', message: 'is required' }]);
  assert.deepEqual(value(schema, { a: 'x', b: undefined }), { a: 'x' });
});

test('object() checks an optional field that is present, null included', () => {
  const schema = object({ b: optional(string()) });
  assert.deepEqual(issues(schema, { b: null }), [{ path: 'b', message: 'must be a string, got null' }]);
  assert.deepEqual(issues(schema, { b: 1 }), [{ path: 'b', message: 'must be a string, got number' }]);
});

test('object() refuses arrays, null, primitives and class instances', () => {
  const schema = object({});
  assert.deepEqual(issues(schema, []), [{ path: '', message: 'must be an object, got array' }]);
  assert.deepEqual(issues(schema, null), [{ path: '', message: 'must be an object, got null' }]);
  assert.deepEqual(issues(schema, 'x'), [{ path: '', message: 'must be an object, got string' }]);
  assert.deepEqual(issues(schema, new Date(0)), [{ path: '', message: 'must be an object, got object' }]);
});

test('object() accepts an object without a prototype', () => {
  const input = Object.assign(Object.create(null) as Record<string, unknown>, { a: 'x' });
  assert.deepEqual(value(object({ a: string() }), input), { a: 'x' });
});

test('object() refuses an unknown key and suggests the closest known one', () => {
  const schema = object({ token: optional(string()), path: optional(string()) });
  assert.deepEqual(issues(schema, { tokn: 'x' }), [{ path: 'tokn', message: 'unknown key (did you mean "token"?)' }]);
  assert.deepEqual(issues(schema, { PATH: '/x' }), [{ path: 'PATH', message: 'unknown key (did you mean "path"?)' }]);
  assert.deepEqual(issues(schema, { zzzzzzzz: 1 }), [{ path: 'zzzzzzzz', message: 'unknown key' }]);
});

test('object() names odd unknown keys in brackets and does not take inherited names as known', () => {
  const schema = object({ a: optional(object({})) });
  assert.deepEqual(issues(schema, { a: { 'x/y': 1 } }), [{ path: 'a["x/y"]', message: 'unknown key' }]);
  assert.deepEqual(issues(schema, { constructor: 1, toString: 2 }), [
    { path: 'constructor', message: 'unknown key' },
    { path: 'toString', message: 'unknown key' },
  ]);
  assert.deepEqual(issues(schema, JSON.parse('{"__proto__": {}}')), [{ path: '__proto__', message: 'unknown key' }]);
});

test('object() loads ignored keys without checking them and reports them by path', () => {
  const schema = object({ hooks: object({ token: optional(string()) }, { ignored: ['internal', 'x-y'] }) });
  const result = check(schema, { hooks: { token: 't', internal: { anything: [1] }, 'x-y': null } });
  assert.deepEqual(result, { ok: true, value: { hooks: { token: 't' } }, ignored: ['hooks.internal', 'hooks["x-y"]'] });
});

test('object() reports ignored keys even when the value is refused', () => {
  const schema = object({ token: string() }, { ignored: ['internal'] });
  assert.deepEqual(check(schema, { internal: true }), {
    ok: false,
    issues: [{ path: 'token', message: 'is required' }],
    ignored: ['internal'],
  });
});

test('object() reports every problem at once, with nested paths and indices', () => {
  const schema = object({
    hooks: object({ path: string(), maxBodyBytes: number({ min: 1 }) }),
    agents: object({ list: array(object({ id: string({ nonEmpty: true }) })) }),
  });
  const found = issues(schema, {
    hooks: { path: 1, maxBodyBytes: 0, tokn: 'x' },
    agents: { list: [{ id: 'a' }, { id: '' }, {}] },
    extra: true,
  });
  assert.deepEqual(found.map(formatIssue), [
    'extra: unknown key',
    'hooks.tokn: unknown key',
    'hooks.path: must be a string, got number',
    'hooks.maxBodyBytes: must be at least 1',
    'agents.list[1].id: must be a non-empty string',
    'agents.list[2].id: is required',
  ]);
});

test('refine() adds a rule that runs only on an otherwise valid value', () => {
  let calls = 0;
  const even = refine(number({ integer: true }), (n) => {
    calls++;
    return n % 2 === 0 ? null : 'must be even';
  });
  assert.equal(value(even, 4), 4);
  assert.deepEqual(issues(even, 3), [{ path: '', message: 'must be even' }]);
  assert.deepEqual(issues(even, 'x'), [{ path: '', message: 'must be a number, got string' }]);
  assert.equal(calls, 2);
  assert.deepEqual(issues(object({ n: even }), { n: 5 }), [{ path: 'n', message: 'must be even' }]);
});

test('refine() sees the checked value, e.g. after trimming', () => {
  const seen: string[] = [];
  const schema = refine(string({ trim: true }), (s) => {
    seen.push(s);
    return null;
  });
  assert.equal(value(schema, '  a '), 'a');
  assert.deepEqual(seen, ['a']);
});

test('suggest() picks the closest name within a typo distance, case-insensitively', () => {
  assert.equal(suggest('tokn', ['enabled', 'token', 'tokenFile']), 'token');
  assert.equal(suggest('tokenfile', ['token', 'tokenFile']), 'tokenFile');
  assert.equal(suggest('maxBodyByte', ['maxBodyBytes', 'path']), 'maxBodyBytes');
  assert.equal(suggest('allowedAgentIDs', ['allowedAgentIds']), 'allowedAgentIds');
});

test('suggest() returns null when no name is close enough', () => {
  assert.equal(suggest('zzzz', ['token', 'path']), null);
  assert.equal(suggest('x', []), null);
  // Short names allow a distance of at most 2.
  assert.equal(suggest('pa', ['path']), 'path');
  assert.equal(suggest('p', ['path']), null);
});

test('suggest() prefers the first of equally close names', () => {
  assert.equal(suggest('ab', ['aa', 'bb']), 'aa');
});
