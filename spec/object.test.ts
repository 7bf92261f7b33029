import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asObject, extend, isObject, isPlainObject, updated } from '../lib/object.ts';

test('asObject() answers a JSON object as it is and null for anything else', () => {
  const object = { a: 1 };
  assert.equal(asObject(object), object);
  for (const value of [null, undefined, [], 'x', 1, true]) assert.equal(asObject(value), null);
});

test('isObject() and isPlainObject() tell a JSON object from arrays, null and class instances', () => {
  assert.equal(isObject({}), true);
  assert.equal(isObject([]), false);
  assert.equal(isObject(null), false);
  assert.equal(isObject(new Date()), true);
  assert.equal(isPlainObject(new Date()), false);
  assert.equal(isPlainObject(Object.create(null)), true);
  assert.equal(isPlainObject([]), false);
});

test('extend() and updated() make a new object as a spread does: the base keys, then the new ones over them, the base untouched', () => {
  const base = { a: 1, b: 2 };
  const more = extend(base, { b: 3, c: 4 });
  assert.deepEqual(more, { a: 1, b: 3, c: 4 });
  assert.deepEqual(Object.keys(more), ['a', 'b', 'c']);
  assert.deepEqual(base, { a: 1, b: 2 });
  const record = { id: 'x', state: 'pending', attempts: 0 };
  const next = updated(record, { state: 'sent' });
  assert.deepEqual(next, { id: 'x', state: 'sent', attempts: 0 });
  assert.notEqual(next, record);
  assert.equal(record.state, 'pending');
});
