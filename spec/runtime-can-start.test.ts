import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canStart, type QueueView, sessionFree, type StartRule } from '../lib/runtime/can-start.ts';
import type { Config } from '../lib/config/types.ts';
import type { RunRecord } from '../lib/model/records.ts';

const run = { runId: 'r1', sessionKey: 'hook:a' } as RunRecord;

function view(over: Partial<QueueView> = {}): QueueView {
  return { config: {} as Config, now: 0, busySessions: new Set(), running: new Map(), ...over };
}

test('sessionFree holds a run while its session key has a run executing', () => {
  assert.equal(sessionFree(run, 'agent', view()), null);
  assert.deepEqual(sessionFree(run, 'agent', view({ busySessions: new Set(['hook:a']) })), { rule: 'session' });
  assert.equal(sessionFree(run, 'agent', view({ busySessions: new Set(['hook:b']) })), null);
});

test('canStart() answers the first rule that holds the run, asks no rule after it, and null when all let it start', () => {
  const asked: string[] = [];
  const rule = (name: string, wait: boolean): StartRule => (_run, hook) => {
    asked.push(`${name}:${hook}`);
    return wait ? { rule: name, until: 5 } : null;
  };
  assert.equal(canStart([rule('a', false), rule('b', false)], run, 'ci', view()), null);
  assert.deepEqual(asked, ['a:ci', 'b:ci']);
  asked.length = 0;
  assert.deepEqual(canStart([rule('a', false), rule('b', true), rule('c', true)], run, 'ci', view()), {
    rule: 'b',
    until: 5,
  });
  assert.deepEqual(asked, ['a:ci', 'b:ci']);
  assert.equal(canStart([], run, 'ci', view()), null);
});
