import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resolveEnv, substituteEnv, within } from '../lib/config/env.ts';
import { type Issue, Unjudged } from '../lib/schema.ts';

test('resolveEnv() for every key reports each missing variable once per key, and empties it', () => {
  const resolved = resolveEnv({ a: '${X}-${X}', b: ['${Y}'], c: 'plain' }, {});
  assert.deepEqual(resolved.value, { a: '-', b: [''], c: 'plain' });
  assert.deepEqual(resolved.missing, [
    { path: 'a', message: 'environment variable X is not set' },
    { path: 'b[0]', message: 'environment variable Y is not set' },
  ]);
  assert.deepEqual(resolved.unresolved, []);
});

test('resolveEnv() scoped to a key needs only the variables inside it; the others stay as written, unjudged', () => {
  const resolved = resolveEnv({ hooks: { token: '${T}', mappings: [{ secret: '${S}' }] }, set: '${SET}' }, {
    T: 'tok',
    SET: 'yes',
  }, { key: 'hooks.token' });
  assert.deepEqual(resolved.missing, []);
  assert.deepEqual(resolved.unresolved, ['hooks.mappings[0].secret']);
  const value = resolved.value as { hooks: { token: string; mappings: [{ secret: unknown }] }; set: string };
  assert.equal(value.hooks.token, 'tok');
  assert.equal(value.set, 'yes', 'a variable that is set is used everywhere');
  assert.ok(value.hooks.mappings[0].secret instanceof Unjudged);
  assert.equal((value.hooks.mappings[0].secret as Unjudged).value, '${S}');
  assert.deepEqual(resolveEnv({ hooks: { token: '${T}' } }, {}, { key: 'hooks' }).missing, [{
    path: 'hooks.token',
    message: 'environment variable T is not set',
  }]);
});

test('within() is the key itself and what lies under it, not a key that only starts alike', () => {
  assert.equal(within('hooks.token', 'hooks.token'), true);
  assert.equal(within('hooks.mappings[0].id', 'hooks.mappings'), true);
  assert.equal(within('hooks.mappings[0].id', 'hooks'), true);
  assert.equal(within('hooks.tokenFile', 'hooks.token'), false);
});

test('substituteEnv() replaces every occurrence and leaves other text and types alone', () => {
  const issues: Issue[] = [];
  const out = substituteEnv(
    { a: '${X}-${X}:${Y}', b: [1, true, null, '$X', '${1X}', '${ X }'], c: { d: '${EMPTY}' } },
    '',
    { X: 'x', Y: 'y', EMPTY: '' },
    issues,
  );
  assert.deepEqual(out, { a: 'x-x:y', b: [1, true, null, '$X', '${1X}', '${ X }'], c: { d: '' } });
  assert.deepEqual(issues, []);
});

test('substituteEnv() reports each missing variable under the given root', () => {
  const issues: Issue[] = [];
  assert.equal(substituteEnv('${A}${B}', 'root', {}, issues), '');
  assert.deepEqual(issues, [
    { path: 'root', message: 'environment variable A is not set' },
    { path: 'root', message: 'environment variable B is not set' },
  ]);
});
