import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asObject, isObject, isPlainObject } from '../lib/object.ts';

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
