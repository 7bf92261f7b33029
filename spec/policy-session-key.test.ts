import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normaliseSessionKey } from '../lib/policy/session-key.ts';

test('normaliseSessionKey() drops the agent:<agentId>: prefix of the run\'s own agent', () => {
  assert.equal(normaliseSessionKey('agent:hooks:slack:channel:c123', 'hooks'), 'slack:channel:c123');
  assert.equal(normaliseSessionKey('AGENT:Hooks:hook:x', 'hooks'), 'hook:x');
});

test('normaliseSessionKey() keeps a key naming another agent, or none, as it is', () => {
  assert.equal(normaliseSessionKey('agent:ops:slack:channel:c123', 'hooks'), 'agent:ops:slack:channel:c123');
  assert.equal(normaliseSessionKey('hook:gmail:1', 'hooks'), 'hook:gmail:1');
  assert.equal(normaliseSessionKey('agent:hooks', 'hooks'), 'agent:hooks');
  assert.equal(normaliseSessionKey('agent:hooks:', 'hooks'), 'agent:hooks:');
  assert.equal(normaliseSessionKey('agent:hooks:::', 'hooks'), 'agent:hooks:::');
});
