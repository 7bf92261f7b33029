import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allowModel } from '../lib/policy/models.ts';
import { error, value } from './_decision.ts';

// agents.defaults.models as the config holds it: keyed provider/model, an alias on one.
const models = { 'anthropic/claude-sonnet': { alias: 'sonnet' }, 'openai/gpt-5': {} };

test('allowModel() passes no override through', () => {
  assert.equal(value(allowModel(undefined, models)), undefined);
});

test('allowModel() admits any model when agents.defaults.models is empty', () => {
  assert.equal(value(allowModel('whatever/model', {})), 'whatever/model');
  assert.equal(value(allowModel('no-slash', {})), 'no-slash');
});

test('allowModel() resolves a listed key or alias, case-insensitively, to the key', () => {
  assert.equal(value(allowModel('openai/gpt-5', models)), 'openai/gpt-5');
  assert.equal(value(allowModel('OpenAI/GPT-5', models)), 'openai/gpt-5');
  assert.equal(value(allowModel('sonnet', models)), 'anthropic/claude-sonnet');
  assert.equal(value(allowModel('Sonnet', models)), 'anthropic/claude-sonnet');
});

test('allowModel() refuses anything else with "model not allowed: <model>"', () => {
  assert.equal(error(allowModel('openai/gpt-4', models)), 'model not allowed: openai/gpt-4');
  assert.equal(error(allowModel('claude', models)), 'model not allowed: claude');
});

test('allowModel() echoes a refused model on one line and cut short', () => {
  assert.equal(error(allowModel('a\nb\r\u2028c', models)), 'model not allowed: a b c');
  const long = error(allowModel('x'.repeat(500), models));
  assert.equal(long, `model not allowed: ${'x'.repeat(100)}…`);
});
