import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type CoalesceWindow,
  heldUntil,
  joinedMessage,
  joinedWindow,
  messageFits,
  windowClosesAt,
} from '../lib/model/coalesce.ts';

const T0 = Date.UTC(2026, 10, 27, 12);
const at = (ms: number) => new Date(T0 + ms).toISOString();

function window(over: Partial<CoalesceWindow> = {}): CoalesceWindow {
  return {
    group: 'g',
    key: 'k',
    windowSeconds: 30,
    maxWaitSeconds: 300,
    messages: 'latest',
    maxBytes: 100,
    count: 1,
    firstAt: at(0),
    lastAt: at(0),
    ...over,
  };
}

test('windowClosesAt(): windowSeconds after the latest request, capped at maxWaitSeconds after the first', () => {
  assert.equal(windowClosesAt(window({ lastAt: at(10_000) })), T0 + 40_000);
  assert.equal(windowClosesAt(window({ lastAt: at(290_000) })), T0 + 300_000);
  assert.equal(windowClosesAt(window({ windowSeconds: 60, maxWaitSeconds: 20 })), T0 + 20_000);
});

test('heldUntil(): the close time while the window is open, null once it closed or with no window', () => {
  assert.equal(heldUntil({ coalesce: window() }, T0 + 29_999), T0 + 30_000);
  assert.equal(heldUntil({ coalesce: window() }, T0 + 30_000), null);
  assert.equal(heldUntil({}, T0), null);
});

test('joinedMessage(): latest replaces; all numbers the first when the second arrives, then appends', () => {
  assert.equal(joinedMessage('one', window(), 'two'), 'two');
  const all = window({ messages: 'all' });
  const two = joinedMessage('one', all, 'two');
  assert.equal(two, 'Message 1:\none\n\nMessage 2:\ntwo');
  assert.equal(joinedMessage(two, { ...all, count: 2 }, 'three'), `${two}\n\nMessage 3:\nthree`);
});

test('messageFits(): always with latest; with all, while the joined text is within maxBytes (UTF-8)', () => {
  assert.equal(messageFits('x'.repeat(500), window(), 'y'.repeat(500)), true);
  const all = window({ messages: 'all', maxBytes: 'Message 1:\na\n\nMessage 2:\nb'.length });
  assert.equal(messageFits('a', all, 'b'), true);
  assert.equal(messageFits('a', all, 'é'), false, 'é is two bytes');
});

test('joinedWindow(): counted, the latest time moved, a message left out counted', () => {
  const joined = joinedWindow(window(), { runId: 'r', at: at(5_000), message: 'm' });
  assert.deepEqual([joined.count, joined.lastAt, joined.leftOut], [2, at(5_000), undefined]);
  const left = joinedWindow(joined, { runId: 'r', at: at(6_000) });
  assert.deepEqual([left.count, left.leftOut], [3, 1]);
});
