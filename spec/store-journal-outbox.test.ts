import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyOutbox, headOf, newEntries, type OutboxEntry, retryUpdates } from '../lib/store/journal/outbox.ts';

const T0 = '2026-01-01T00:00:00.000Z';
const NOW = '2026-01-01T01:00:00.000Z';

function outbox(...states: OutboxEntry['state'][]): Map<string, OutboxEntry> {
  const map = new Map<string, OutboxEntry>();
  applyOutbox(
    map,
    newEntries(
      states.map((_, i) => ({ id: `e${i + 1}`, target: 'wake', body: { text: `t${i + 1}` }, hook: 'wake' })),
      T0,
    ),
  );
  applyOutbox(
    map,
    [],
    states.map((state, i) => ({
      id: `e${i + 1}`,
      state,
      attempts: 1,
      lastError: 'no answer',
      nextAttemptAt: '2026-01-01T00:10:00.000Z',
    })),
  );
  return map;
}

test('headOf() is the oldest pending entry, whatever its due time, past sent and dead ones', () => {
  assert.equal(headOf(outbox('sent', 'dead', 'pending', 'pending'))?.id, 'e3');
  assert.equal(headOf(outbox('sent', 'dead')), null);
});

test('applyOutbox() keeps an entry in its place through updates, and a sent one has no last error or next attempt left', () => {
  const map = outbox('pending', 'pending');
  applyOutbox(map, [], [{ id: 'e1', state: 'sent', sentAt: NOW, attempts: 2 }]);
  assert.deepEqual([...map.keys()], ['e1', 'e2']);
  const sent = map.get('e1')!;
  assert.equal(sent.lastError, undefined);
  assert.equal(sent.nextAttemptAt, undefined);
  assert.equal(map.get('e2')!.lastError, 'no answer');
});

test('retryUpdates() takes dead entries (again) and pending ones (now); a pending one named brings the pending ones ahead of it', () => {
  const entries = [...outbox('pending', 'dead', 'pending', 'pending', 'sent').values()];
  assert.deepEqual(retryUpdates(entries, { ids: ['e3'] }, NOW), {
    updates: [
      { id: 'e1', nextAttemptAt: NOW },
      { id: 'e3', state: 'pending', retriedAt: NOW, nextAttemptAt: NOW },
    ],
    unknown: [],
  });
  assert.deepEqual(retryUpdates(entries, { ids: ['e2', 'e5', 'nope'] }, NOW), {
    updates: [{ id: 'e2', state: 'pending', retriedAt: NOW, nextAttemptAt: NOW }],
    unknown: ['e5', 'nope'],
  });
  assert.deepEqual(retryUpdates(entries, { dead: true }, NOW).updates.map((u) => u.id), ['e2']);
});
