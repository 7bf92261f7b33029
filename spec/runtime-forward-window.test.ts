import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { OutboxEntry } from '../lib/store/outbox.ts';
import { HEARTBEAT_WINDOW_MS, WakeWindows } from '../lib/runtime/forward-window.ts';
import { wakeSession } from '../lib/runtime/forward-merge.ts';

const S = wakeSession({});

test('WakeWindows: a window opens with a session\'s first wake, takes max wakes, and reopens 12 s after it opened', () => {
  assert.equal(HEARTBEAT_WINDOW_MS, 12_000, 'OpenClaw starts at most 5 heartbeats a minute');
  const windows = new WakeWindows(3);
  assert.equal(windows.room(S, 0), 3);
  windows.sent(S, 1_000);
  windows.sent(S, 5_000);
  assert.equal(windows.room(S, 5_000), 1);
  windows.sent(S, 6_000);
  assert.equal(windows.room(S, 6_000), 0);
  assert.equal(windows.reopensAt(S, 6_000), 13_000);
  assert.equal(windows.room(wakeSession({ agentId: 'ops' }), 6_000), 3, 'each session has its own');
  assert.equal(windows.room(S, 13_000), 3);
  assert.equal(windows.reopensAt(S, 13_000), 13_000);
});

test('WakeWindows.seed() counts the wakes a previous process sent within the window, a merged one once', () => {
  const sent = (id: string, at: number, batch?: string): OutboxEntry => ({
    id, target: 'wake', body: { text: id, mode: 'now' }, hook: 'wake', state: 'sent', acceptedAt: new Date(0).toISOString(), attempts: 1,
    sentAt: new Date(at).toISOString(), ...(batch === undefined ? {} : { batch }),
  });
  const outbox = [sent('old', 1_000), sent('a', 20_000), sent('b', 21_000, 'b'), sent('c', 21_000, 'b'), sent('d', 21_000, 'b')];
  const windows = new WakeWindows(5);
  windows.seed([...outbox, { ...sent('agent', 21_000), target: 'agent' }], 25_000);
  assert.equal(windows.room(S, 25_000), 3, 'a, and b with c and d as one');
  assert.equal(windows.reopensAt(S, 25_000), 32_000);
});
