import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admitsEveryAgentSession, stripAgentNamespace } from '../lib/policy/session-key.ts';

test('stripAgentNamespace() drops a leading agent:<agentId>:, whichever agent it names, in any case', () => {
  assert.equal(stripAgentNamespace('agent:hooks:slack:channel:c123'), 'slack:channel:c123');
  assert.equal(stripAgentNamespace('AGENT:Hooks:hook:x'), 'hook:x');
  assert.equal(stripAgentNamespace('agent:ops:main'), 'main');
});

test('stripAgentNamespace() keeps a key outside the namespace, or one naming no session, as it is', () => {
  assert.equal(stripAgentNamespace('hook:gmail:1'), 'hook:gmail:1');
  assert.equal(stripAgentNamespace('agent:hooks'), 'agent:hooks');
  assert.equal(stripAgentNamespace('agent:hooks:'), 'agent:hooks:');
  assert.equal(stripAgentNamespace('agent:hooks:::'), 'agent:hooks:::');
});

test('admitsEveryAgentSession() is true of the prefixes that let agent:<id>:main through', () => {
  for (const prefix of ['agent:', 'Agent:', 'agent', 'a', 'agent:hooks:', 'agent:ho']) assert.equal(admitsEveryAgentSession(prefix), true, prefix);
  for (const prefix of ['hook:', 'agent:hooks:slack:', 'agent:hooks:s', 'agents:']) assert.equal(admitsEveryAgentSession(prefix), false, prefix);
});
