import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RequestedKey } from '../lib/model/actions.ts';
import {
  admitsEveryAgentSession,
  canonicalAgentId,
  hasPrefix,
  isGeneratedKey,
  rescopeSessionKey,
  resolveSessionKey,
  scopeSessionKey,
  type SessionKeyRules,
  stripAgentNamespace,
} from '../lib/policy/session-key.ts';
import { testTable } from './_cases.ts';
import { error, value } from './_decision.ts';

const UUID = '0b9c6b4e-6a3e-4a53-9d0c-1f1f1f1f1f1f';

/** The rules as a config without session-key settings has them, with `overrides`. */
function rules(overrides: Partial<SessionKeyRules> = {}): SessionKeyRules {
  return { defaultSessionKey: null, allowRequestSessionKey: false, allowedSessionKeyPrefixes: null, ...overrides };
}

/** A new-id source that must not be called: a requested or default key needs no id. */
function noId(): string {
  throw new Error('newId() called for a key that needed none');
}

const request = (key: string): RequestedKey => ({ value: key, trusted: false });
const mapped = (key: string): RequestedKey => ({ value: key, trusted: true });

test('resolveSessionKey() generates hook:<id> when no key is requested or configured', () => {
  assert.equal(value(resolveSessionKey(undefined, rules(), () => UUID)), `hook:${UUID}`);
});

test('resolveSessionKey() generates a fresh uuid-based key each time with crypto.randomUUID, one isGeneratedKey() knows', () => {
  const first = value(resolveSessionKey(undefined, rules(), () => crypto.randomUUID()));
  const second = value(resolveSessionKey(undefined, rules(), () => crypto.randomUUID()));
  assert.match(first, /^hook:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  assert.notEqual(first, second);
  assert.equal(isGeneratedKey(first), true);
  for (const key of ['hook:inbox', `agent:main:hook:${UUID}`, `HOOK:${UUID}`, `hook:${UUID}x`]) {
    assert.equal(isGeneratedKey(key), false, key);
  }
});

test('resolveSessionKey() uses hooks.defaultSessionKey when no key is requested, as written', () => {
  assert.equal(value(resolveSessionKey(undefined, rules({ defaultSessionKey: 'hook:inbox' }), noId)), 'hook:inbox');
  assert.equal(
    value(resolveSessionKey(undefined, rules({ defaultSessionKey: 'agent:ops:inbox' }), noId)),
    'agent:ops:inbox',
  );
});

test('resolveSessionKey() refuses a request key while hooks.allowRequestSessionKey is false, naming that key', () => {
  const message = error(resolveSessionKey(request('hook:x'), rules({ defaultSessionKey: 'hook:inbox' }), noId));
  assert.equal(message, 'sessionKey: may not be chosen by the request while hooks.allowRequestSessionKey is false');
});

test('resolveSessionKey() accepts a request key when allowed and no prefixes are set', () => {
  assert.equal(
    value(resolveSessionKey(request('anything:at-all'), rules({ allowRequestSessionKey: true }), noId)),
    'anything:at-all',
  );
});

test('resolveSessionKey() requires a request key to start with a configured prefix, judged as sent', () => {
  const prefixed = rules({ allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:', 'agent:ops:'] });
  assert.equal(value(resolveSessionKey(request('agent:ops:42'), prefixed, noId)), 'agent:ops:42');
  for (const key of ['main', 'agent:dev:1']) {
    assert.equal(
      error(resolveSessionKey(request(key), prefixed, noId)),
      'sessionKey: must start with one of "hook:", "agent:ops:"',
      key,
    );
  }
  // The stripped key is not what the rules judge: "slack:" alone does not admit agent:hooks:slack:….
  const slack = rules({ allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['slack:', 'hook:'] });
  assert.equal(
    error(resolveSessionKey(request('agent:hooks:slack:channel:c123'), slack, noId)),
    'sessionKey: must start with one of "slack:", "hook:"',
  );
});

test('resolveSessionKey() compares prefixes case-insensitively and keeps the key as written', () => {
  const prefixed = rules({ allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['Hook:'] });
  for (const key of ['HOOK:Mail', 'hook:mail']) {
    assert.equal(value(resolveSessionKey(request(key), prefixed, noId)), key);
  }
});

test('resolveSessionKey() lets a trusted key skip hooks.allowRequestSessionKey but not the prefixes', () => {
  assert.equal(value(resolveSessionKey(mapped('mapped:inbox'), rules(), noId)), 'mapped:inbox');
  const prefixed = rules({ allowedSessionKeyPrefixes: ['hook:'] });
  assert.equal(value(resolveSessionKey(mapped('hook:mapped'), prefixed, noId)), 'hook:mapped');
  assert.equal(
    error(resolveSessionKey(mapped('mapped:inbox'), prefixed, noId)),
    'sessionKey: must start with one of "hook:"',
  );
});

test('resolveSessionKey() with an empty prefix list admits no requested key', () => {
  const none = rules({ allowRequestSessionKey: true, allowedSessionKeyPrefixes: [] });
  assert.match(error(resolveSessionKey(mapped('hook:x'), none, noId)), /^sessionKey: must start with one of/);
});

test("scopeSessionKey() judges the key again re-scoped to the run's agent, as the released gateway does, then drops agent:<id>:", () => {
  const prefixed = rules({ allowedSessionKeyPrefixes: ['hook:', 'agent:main:'] });
  // Admitted as sent, refused once re-scoped: 400 on OpenClaw 2026.9.6, and here now.
  for (const key of ['agent:main:slack:channel:c123', 'agent:main:main']) {
    const rescoped = key.replace('agent:main:', 'agent:hooks:');
    assert.equal(
      error(scopeSessionKey(key, 'hooks', prefixed)),
      `sessionKey: must start with one of "hook:", "agent:main:" (checked again as "${rescoped}", the key re-scoped to agent "hooks")`,
      key,
    );
    assert.equal(value(scopeSessionKey(key, 'main', prefixed)), key.slice('agent:main:'.length), key);
  }
  // A key outside the namespace is judged as it is, and keeps its whole name.
  assert.equal(value(scopeSessionKey('hook:mail', 'hooks', prefixed)), 'hook:mail');
  assert.equal(
    value(scopeSessionKey('agent:hooks:x', 'Hooks', rules({ allowedSessionKeyPrefixes: ['agent:hooks:'] }))),
    'x',
  );
  assert.equal(value(scopeSessionKey('agent:main:x', 'hooks', rules())), 'x');
});

/** Keys re-scoped to an agent, as the gateway's normalizeHookDispatchSessionKey does, by the rule they show. */
const RESCOPED: Record<string, [key: string, agentId: string, scoped: string][]> = {
  "rescopeSessionKey() puts the run's agent, canonical, in place of any agent the key names": [
    ['agent:main:slack:channel:c123', 'hooks', 'agent:hooks:slack:channel:c123'],
    ['AGENT:Main:x', 'Ops', 'agent:ops:x'],
    ['agent:main:main', 'research.eu', 'agent:research-eu:main'],
  ],
  'rescopeSessionKey() leaves a key the gateway does not read as namespaced as it is': [
    ['hook:mail', 'hooks', 'hook:mail'],
    ['agent:main', 'hooks', 'agent:main'],
    ['agent:main:', 'hooks', 'agent:main:'],
    ['agent: :x', 'hooks', 'agent: :x'],
    ['agent:main::x', 'hooks', 'agent:main::x'],
  ],
};

testTable(
  RESCOPED,
  ([key, agentId, scoped]) => assert.equal(rescopeSessionKey(key, agentId), scoped, `${key} for ${agentId}`),
);

test("canonicalAgentId() writes an id as OpenClaw's normalizeAgentId does", () => {
  const cases: [id: string, canonical: string][] = [
    ['ops', 'ops'],
    [' Ops ', 'ops'],
    ['research.eu', 'research-eu'],
    ['-a..b-', 'a-b'],
    ['...', 'main'],
    ['x'.repeat(70), 'x'.repeat(64)],
  ];
  for (const [id, canonical] of cases) assert.equal(canonicalAgentId(id), canonical, id);
});

test('hasPrefix() compares case-insensitively, and an empty list admits nothing', () => {
  const cases: [key: string, prefixes: string[], admitted: boolean][] = [
    ['Hook:Inbox', ['hook:'], true],
    ['hook:inbox', ['agent:', 'HOOK:IN'], true],
    ['main', ['hook:'], false],
    ['hook:x', [], false],
  ];
  for (const [key, prefixes, admitted] of cases) {
    assert.equal(hasPrefix(key, prefixes), admitted, `${key} ${JSON.stringify(prefixes)}`);
  }
});

test('admitsEveryAgentSession() is true of the prefixes that let agent:<id>:main through', () => {
  for (const prefix of ['agent:', 'Agent:', 'agent', 'a', 'agent:hooks:', 'agent:ho']) {
    assert.equal(admitsEveryAgentSession(prefix), true, prefix);
  }
  for (const prefix of ['hook:', 'agent:hooks:slack:', 'agent:hooks:s', 'agents:']) {
    assert.equal(admitsEveryAgentSession(prefix), false, prefix);
  }
});

/** Keys and what stripAgentNamespace() leaves of them, by the rule they show. */
const STRIPPED: Record<string, [key: string, session: string][]> = {
  'stripAgentNamespace() drops a leading agent:<agentId>:, whichever agent it names, in any case': [
    ['agent:hooks:slack:channel:c123', 'slack:channel:c123'],
    ['AGENT:Hooks:hook:x', 'hook:x'],
    ['agent:ops:main', 'main'],
  ],
  'stripAgentNamespace() keeps a key outside the namespace, or one naming no session, as it is': [
    ['hook:gmail:1', 'hook:gmail:1'],
    ['agent:hooks', 'agent:hooks'],
    ['agent:hooks:', 'agent:hooks:'],
    ['agent:hooks:::', 'agent:hooks:::'],
  ],
};

testTable(STRIPPED, ([key, session]) => assert.equal(stripAgentNamespace(key), session, key));
