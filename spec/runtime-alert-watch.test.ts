import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AlertNote } from '../lib/model/alerts.ts';
import { watchStore } from '../lib/runtime/alert-watch.ts';
import type { OutboxEntry } from '../lib/store/journal/outbox.ts';
import { until } from './_until.ts';

function entry(id: string, state: OutboxEntry['state'], over: Partial<OutboxEntry> = {}): OutboxEntry {
  return { id, target: 'wake', body: {}, hook: 'ci', state, acceptedAt: 'T', attempts: 1, ...over };
}

test('watchStore() notes each outbox entry that went dead once (not those dead before it started), and a journal that is not writable', async () => {
  let outbox = [entry('old', 'dead'), entry('a', 'pending')];
  let writable = true;
  const noted: AlertNote[] = [];
  let looks = 0;
  const stop = watchStore({ note: (n) => void noted.push(n) }, {
    outbox: () => outbox,
    writable: async () => (looks++, writable),
  }, 5);
  try {
    outbox = [
      entry('old', 'dead'),
      entry('a', 'dead', { lastError: 'HTTP 400: agentId is required when multiple agents are configured' }),
      entry('b', 'dead', { hook: 'gh' }),
    ];
    await until('both new dead entries noted', () => (noted.length >= 2 ? true : undefined));
    const seen = looks;
    await until('two more looks', () => (looks >= seen + 2 ? true : undefined));
    assert.deepEqual(noted, [
      { kind: 'outbox-dead', hook: 'ci', code: 'HTTP 400' },
      { kind: 'outbox-dead', hook: 'gh', code: 'dead' },
    ]);
    writable = false;
    await until('the journal noted', () => (noted.some((n) => n.kind === 'storage') ? true : undefined));
    assert.deepEqual(noted.find((n) => n.kind === 'storage'), {
      kind: 'storage',
      hook: '',
      code: 'journal not writable',
    });
  } finally {
    stop();
  }
});
