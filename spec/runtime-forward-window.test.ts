import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { OutboxEntry } from '../lib/store/journal/outbox.ts';
import { HEARTBEAT_WINDOW_MS, WakeWindows } from '../lib/runtime/forward-window.ts';
import { wakeSession } from '../lib/runtime/forward-merge.ts';

const S = wakeSession({});

test('WakeWindows: a window opens with a session\'s first wake, takes max wakes, and reopens 12 s after it opened', () => {
  assert.equal(HEARTBEAT_WINDOW_MS, 12_000, 'OpenClaw starts at most 5 heartbeats a minute');
  const windows = new WakeWindows(3);
  assert.equal(windows.room(S, 0), 3);
  windows.sent(S, 1_000, false);
  windows.sent(S, 5_000, false);
  assert.equal(windows.room(S, 5_000), 1);
  windows.sent(S, 6_000, true);
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

test('WakeWindows: wakes sent after the last one that asked for a heartbeat stay counted in the next window, with room left for one more', () => {
  const windows = new WakeWindows(5);
  windows.sent(S, 0, true);
  windows.sent(S, 1_000, false);
  windows.sent(S, 2_000, false);
  assert.equal(windows.room(S, 12_000), 3, 'two next-heartbeat wakes are still unread upstream');
  assert.equal(windows.reopensAt(S, 12_000), 24_000, 'the window that holds them opened when the last one closed');
  windows.sent(S, 13_000, true);
  assert.equal(windows.room(S, 24_000), 5, 'a wake that asked for a heartbeat read them');
  const shrunk = new WakeWindows(5);
  for (let i = 0; i < 4; i++) shrunk.sent(S, i, false);
  shrunk.max = 2;
  assert.equal(shrunk.room(S, 12_000), 1, 'never so many that no wake could go to ask for a heartbeat');
});

test('WakeWindows.seed() keeps the next-heartbeat wakes no heartbeat was asked to read, however long ago they went', () => {
  const sent = (id: string, at: number, mode: string): OutboxEntry => ({
    id, target: 'wake', body: { text: id, mode }, hook: 'wake', state: 'sent', acceptedAt: new Date(0).toISOString(), attempts: 1, sentAt: new Date(at).toISOString(),
  });
  const windows = new WakeWindows(5);
  windows.seed([sent('a', 1_000, 'now'), sent('b', 2_000, 'next-heartbeat'), sent('c', 3_000, 'next-heartbeat')], 100_000);
  assert.equal(windows.room(S, 100_000), 3);
});
