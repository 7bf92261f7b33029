import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { OutboxEntry } from '../lib/store/journal/outbox.ts';
import {
  HEARTBEAT_WINDOW_MS,
  UPSTREAM_DEFAULT_AGENT,
  type WakeAdmission,
  type WakeTarget,
  wakeTarget,
  WakeWindows,
} from '../lib/runtime/forward-window.ts';

const S = wakeTarget({}, null);
const targetOf = (body: Readonly<Record<string, unknown>>) => wakeTarget(body, null);

// How many more wakes `target`'s window takes at `at`, sending them (none asks for a heartbeat but the last).
function room(windows: WakeWindows, target: WakeTarget, at: number): number {
  let n = 0;
  for (
    let verdict: WakeAdmission = windows.admit(target, false, at);
    verdict !== 'wait' && n < 1_000;
    verdict = windows.admit(target, false, at)
  ) {
    n++;
    windows.sent(target, at, verdict === 'last');
    if (verdict === 'last') break;
  }
  return n;
}

test("wakeTarget(): the agent a wake body names (else the upstream's default as the config knows it) and its session, without case and re-scoped", () => {
  assert.deepEqual(wakeTarget({ text: 't' }, null), wakeTarget({ text: 'u', mode: 'now' }, null));
  assert.equal(
    wakeTarget({}, null).agent,
    UPSTREAM_DEFAULT_AGENT,
    'one key for the upstream default when the config does not name it',
  );
  assert.deepEqual(wakeTarget({ agentId: 'Ops' }, null), wakeTarget({ agentId: 'ops' }, null));
  assert.deepEqual(
    wakeTarget({}, 'Main'),
    wakeTarget({ agentId: 'main' }, 'main'),
    "no agent is hooks.forward.agents' first: one window, one session",
  );
  assert.notDeepEqual(wakeTarget({ agentId: 'ops' }, null), wakeTarget({}, null));
  assert.notEqual(
    wakeTarget({ sessionKey: 'hook:a' }, null).session,
    wakeTarget({ sessionKey: 'hook:b' }, null).session,
  );
  assert.equal(
    wakeTarget({ sessionKey: 'hook:a' }, null).agent,
    wakeTarget({ sessionKey: 'hook:b' }, null).agent,
    'two sessions of one agent',
  );
  assert.deepEqual(
    wakeTarget({ agentId: 'ops', sessionKey: 'agent:main:hook:a' }, null),
    wakeTarget({ agentId: 'ops', sessionKey: 'hook:a' }, null),
    'the gateway re-scopes agent:<id>: to the target agent',
  );
});

test("WakeWindows: an agent's window opens with its first wake, takes max wakes (the last asking for a heartbeat), and reopens 12 s after it opened", () => {
  assert.equal(HEARTBEAT_WINDOW_MS, 12_000, 'OpenClaw starts at most 5 heartbeats a minute per agent');
  const windows = new WakeWindows(3);
  assert.equal(windows.admit(S, false, 0), 'go');
  windows.sent(S, 1_000, false);
  windows.sent(S, 5_000, false);
  assert.equal(windows.admit(S, false, 5_000), 'last');
  windows.sent(S, 6_000, true);
  assert.equal(windows.admit(S, true, 6_000), 'wait');
  assert.equal(windows.reopensAt(S.agent, 6_000), 13_000);
  assert.equal(room(windows, wakeTarget({ agentId: 'ops' }, null), 6_000), 3, 'each agent has its own');
  assert.equal(room(windows, S, 13_000), 3);
  assert.equal(new WakeWindows(1).admit(S, false, 0), 'last', "with max 1 every wake is its window's last");
});

test('WakeWindows: two sessions of one agent share its window, and only one of them has its heartbeat asked for in it', () => {
  const x = wakeTarget({ sessionKey: 'hook:x' }, null);
  const y = wakeTarget({ sessionKey: 'hook:y' }, null);
  const windows = new WakeWindows(5);
  windows.sent(x, 0, true);
  windows.sent(x, 0, false);
  assert.equal(windows.admit(y, true, 1_000), 'wait', "the agent's heartbeat of this window reads x");
  assert.equal(windows.admit(y, false, 1_000), 'go', 'a wake that asks for none may go to y');
  windows.sent(y, 1_000, false);
  windows.sent(y, 1_000, false);
  assert.equal(windows.admit(y, false, 1_000), 'wait', "the window's last wake asks for a heartbeat, which y cannot");
  assert.equal(windows.admit(x, false, 1_000), 'last', 'x can');
  windows.sent(x, 1_000, true);
  assert.equal(windows.admit(x, false, 1_000), 'wait', 'five wakes went to the agent');
  assert.equal(windows.reopensAt(x.agent, 1_000), 12_000);
  assert.equal(room(windows, y, 12_000), 3, "y's two unread wakes are held in the next window, which can read them");
});

test('WakeWindows: wakes to two sessions of one agent at line rate ask for at most 5 heartbeats a minute, one session each', () => {
  const x = wakeTarget({ sessionKey: 'hook:x' }, null);
  const y = wakeTarget({ sessionKey: 'hook:y' }, null);
  const windows = new WakeWindows(20);
  // As the forwarder does: each wake goes when its window admits it; the last merges what is behind it for its session.
  const queue = Array.from({ length: 400 }, (_, i) => (i % 3 === 0 ? y : x));
  const asked: { at: number; session: string }[] = [];
  let at = 0;
  while (queue.length > 0 && at < 60_000) {
    const head = queue[0]!;
    const verdict = windows.admit(head, true, at);
    if (verdict === 'wait') {
      at = windows.reopensAt(head.agent, at);
      continue;
    }
    queue.shift();
    if (verdict === 'last') { while (queue[0] === head) queue.shift(); }
    windows.sent(head, at, true);
    asked.push({ at, session: head.session });
    at += 10;
  }
  // A heartbeat per session asked within a window (requests to one session coalesce upstream).
  const heartbeats = new Set(asked.map(({ at, session }) => `${Math.floor(at / HEARTBEAT_WINDOW_MS)} ${session}`));
  assert.ok(heartbeats.size <= 5, `${heartbeats.size} heartbeats asked for in a minute: ${[...heartbeats].join(', ')}`);
  assert.ok(asked.length > 5, 'wakes kept going');
});

test('WakeWindows.seed() counts the wakes a previous process sent within the window, a merged one once', () => {
  const sent = (id: string, at: number, batch?: string): OutboxEntry => ({
    id,
    target: 'wake',
    body: { text: id, mode: 'now' },
    hook: 'wake',
    state: 'sent',
    acceptedAt: new Date(0).toISOString(),
    attempts: 1,
    sentAt: new Date(at).toISOString(),
    ...(batch === undefined ? {} : { batch }),
  });
  const outbox = [
    sent('old', 1_000),
    sent('a', 20_000),
    sent('b', 21_000, 'b'),
    sent('c', 21_000, 'b'),
    sent('d', 21_000, 'b'),
  ];
  const windows = new WakeWindows(5);
  windows.seed([...outbox, { ...sent('agent', 21_000), target: 'agent' }], 25_000, targetOf);
  assert.equal(room(windows, S, 25_000), 3, 'a, and b with c and d as one');
  assert.equal(windows.reopensAt(S.agent, 25_000), 32_000);
});

test('WakeWindows: wakes sent after the last one that asked for a heartbeat stay counted in the next window, with room left for one more', () => {
  const windows = new WakeWindows(5);
  windows.sent(S, 0, true);
  windows.sent(S, 1_000, false);
  windows.sent(S, 2_000, false);
  assert.equal(
    windows.reopensAt(S.agent, 12_000),
    24_000,
    'the window that holds them opened when the last one closed',
  );
  const copy = new WakeWindows(5);
  copy.sent(S, 0, true);
  copy.sent(S, 1_000, false);
  copy.sent(S, 2_000, false);
  assert.equal(room(copy, S, 12_000), 3, 'two next-heartbeat wakes are still unread upstream');
  windows.sent(S, 13_000, true);
  assert.equal(room(windows, S, 24_000), 5, 'a wake that asked for a heartbeat read them');
  const shrunk = new WakeWindows(5);
  for (let i = 0; i < 4; i++) shrunk.sent(S, i, false);
  shrunk.max = 2;
  assert.equal(room(shrunk, S, 12_000), 1, 'never so many that no wake could go to ask for a heartbeat');
});

test('WakeWindows.seed() keeps the next-heartbeat wakes no heartbeat was asked to read, however long ago they went', () => {
  const sent = (id: string, at: number, mode: string): OutboxEntry => ({
    id,
    target: 'wake',
    body: { text: id, mode },
    hook: 'wake',
    state: 'sent',
    acceptedAt: new Date(0).toISOString(),
    attempts: 1,
    sentAt: new Date(at).toISOString(),
  });
  const windows = new WakeWindows(5);
  windows.seed(
    [sent('a', 1_000, 'now'), sent('b', 2_000, 'next-heartbeat'), sent('c', 3_000, 'next-heartbeat')],
    100_000,
    targetOf,
  );
  assert.equal(room(windows, S, 100_000), 3);
});
