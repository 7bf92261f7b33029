import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseWake } from '../lib/hooks/wake.ts';

function error(body: Record<string, unknown>): string {
  const result = parseWake(body);
  assert.ok(!result.ok, `expected ${JSON.stringify(body)} to be refused`);
  return result.error;
}

test('parseWake() defaults mode to "now"', () => {
  assert.deepEqual(parseWake({ text: 'New mail from Ada' }), {
    ok: true,
    action: { kind: 'wake', text: 'New mail from Ada', mode: 'now' },
    ignored: [],
  });
});

test('parseWake() accepts both modes', () => {
  assert.deepEqual(parseWake({ text: 'x', mode: 'now' }), {
    ok: true,
    action: { kind: 'wake', text: 'x', mode: 'now' },
    ignored: [],
  });
  assert.deepEqual(parseWake({ text: 'x', mode: 'next-heartbeat' }), {
    ok: true,
    action: { kind: 'wake', text: 'x', mode: 'next-heartbeat' },
    ignored: [],
  });
});

test('parseWake() trims text and keeps inner white space', () => {
  assert.deepEqual(parseWake({ text: '  line one\nline two \t' }), {
    ok: true,
    action: { kind: 'wake', text: 'line one\nline two', mode: 'now' },
    ignored: [],
  });
});

test('parseWake() requires text', () => {
  assert.equal(error({}), 'text: is required');
  assert.equal(error({ mode: 'now' }), 'text: is required');
});

test('parseWake() refuses text that is empty once trimmed', () => {
  assert.equal(error({ text: '' }), 'text: must be a non-empty string');
  assert.equal(error({ text: ' \n\t ' }), 'text: must be a non-empty string');
});

test('parseWake() refuses text of another type, naming the type', () => {
  assert.equal(error({ text: 42 }), 'text: must be a string, got number');
  assert.equal(error({ text: null }), 'text: must be a string, got null');
  assert.equal(error({ text: ['a'] }), 'text: must be a string, got array');
  assert.equal(error({ text: { a: 1 } }), 'text: must be a string, got object');
});

test('parseWake() refuses a mode outside its set, listing the allowed ones', () => {
  const message = 'mode: must be one of "now", "next-heartbeat"';
  assert.equal(error({ text: 'x', mode: 'later' }), message);
  assert.equal(error({ text: 'x', mode: 'NOW' }), message);
  assert.equal(error({ text: 'x', mode: true }), message);
  assert.equal(error({ text: 'x', mode: null }), message);
});

test('parseWake() refuses any other field, naming it', () => {
  assert.equal(error({ text: 'x', extra: 1 }), 'extra: unknown key');
  assert.equal(error({ text: 'x', modee: 'now' }), 'modee: unknown key (did you mean "mode"?)');
  assert.equal(error({ text: 'x', 'odd key': 1 }), '["odd key"]: unknown key');
  assert.equal(error({ text: 'x', message: 'hi' }), 'message: unknown key');
});

test('parseWake() with acceptUnknown accepts other fields and names them, and still refuses a bad known one', () => {
  assert.deepEqual(parseWake({ text: 'x', source: 'ci', 'odd key': 1 }, true), {
    ok: true,
    action: { kind: 'wake', text: 'x', mode: 'now' },
    ignored: ['source', '["odd key"]'],
  });
  assert.deepEqual(parseWake({ text: 'x', mode: 'later', source: 'ci' }, true), {
    ok: false,
    error: 'mode: must be one of "now", "next-heartbeat"',
  });
});

test('parseWake() reports every problem, joined with "; "', () => {
  assert.equal(
    error({ mode: 'soon', priority: 'x' }),
    'priority: unknown key; text: is required; mode: must be one of "now", "next-heartbeat"',
  );
});

test("parseWake() takes the released gateway's agentId and sessionKey, the key as the request's choice", () => {
  assert.deepEqual(parseWake({ text: 'x', agentId: ' ops ', sessionKey: ' hook:ci ' }), {
    ok: true,
    action: { kind: 'wake', text: 'x', mode: 'now', agentId: 'ops', sessionKey: { value: 'hook:ci', trusted: false } },
    ignored: [],
  });
  assert.equal(error({ text: 'x', agentId: '' }), 'agentId: must be a non-empty string');
  assert.equal(error({ text: 'x', sessionKey: 7 }), 'sessionKey: must be a string, got number');
  assert.equal(
    error({ text: 'x', sessionKey: `hook:${'k'.repeat(508)}` }),
    'sessionKey: must be at most 512 characters',
  );
});

test('parseWake() refuses a sessionKey with mode "next-heartbeat", as the gateway does', () => {
  assert.equal(error({ text: 'x', mode: 'next-heartbeat', sessionKey: 'hook:ci' }), 'sessionKey: requires mode "now"');
  assert.equal(parseWake({ text: 'x', mode: 'next-heartbeat', agentId: 'ops' }).ok, true);
});
