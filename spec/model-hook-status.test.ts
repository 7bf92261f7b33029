import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hookStatuses, withPauses } from '../lib/model/hook-status.ts';

test('hookStatuses() lists agent, wake, then each mapping id once, then hooks with runs the config no longer names', () => {
  const hooks = {
    agent: { concurrency: 2 },
    mappings: [{ id: 'ci', maxQueued: 5 }, { id: 'gh' }, { id: 'ci', concurrency: 1 }],
  };
  const loads = new Map([['ci', { queued: 3, running: 1 }], ['agent', { queued: 0, running: 2 }], [
    'removed',
    { queued: 1, running: 0 },
  ]]);
  assert.deepEqual(hookStatuses(hooks, loads), [
    { hook: 'agent', running: 2, queued: 0, concurrency: 2, maxQueued: null, coalescing: 0, coalesce: null },
    { hook: 'wake', running: 0, queued: 0, concurrency: null, maxQueued: null, coalescing: 0, coalesce: null },
    { hook: 'ci', running: 1, queued: 3, concurrency: null, maxQueued: 5, coalescing: 0, coalesce: null },
    { hook: 'gh', running: 0, queued: 0, concurrency: null, maxQueued: null, coalescing: 0, coalesce: null },
    { hook: 'removed', running: 0, queued: 1, concurrency: null, maxQueued: null, coalescing: 0, coalesce: null },
  ]);
});

test('hookStatuses() gives each hook its coalescing windows open and the coalesce it sets', () => {
  const coalesce = { key: {}, windowSeconds: 30, maxWaitSeconds: 300, messages: 'latest' };
  const hooks = { agent: {}, mappings: [{ id: 'pushes', coalesce }] };
  const [, , pushes] = hookStatuses(hooks, new Map(), new Map([['pushes', 2]]));
  assert.deepEqual([pushes?.coalescing, pushes?.coalesce], [2, {
    windowSeconds: 30,
    maxWaitSeconds: 300,
    messages: 'latest',
  }]);
});

test('withPauses() gives each paused hook its pause, and adds a paused hook the config no longer names', () => {
  const statuses = [{ hook: 'agent', running: 0, queued: 2, concurrency: null, maxQueued: null }];
  const pause = { since: 'S', wakes: 1, outbox: 0 };
  assert.deepEqual(withPauses(statuses, []), statuses);
  assert.deepEqual(withPauses(statuses, [{ hook: 'agent', ...pause }, { hook: 'gone', ...pause }]), [
    { ...statuses[0], paused: pause },
    { hook: 'gone', running: 0, queued: 0, concurrency: null, maxQueued: null, paused: pause },
  ]);
});
