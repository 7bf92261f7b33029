import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hookStatuses } from '../lib/model/hook-status.ts';

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
    { hook: 'agent', running: 2, queued: 0, concurrency: 2, maxQueued: null },
    { hook: 'wake', running: 0, queued: 0, concurrency: null, maxQueued: null },
    { hook: 'ci', running: 1, queued: 3, concurrency: null, maxQueued: 5 },
    { hook: 'gh', running: 0, queued: 0, concurrency: null, maxQueued: null },
    { hook: 'removed', running: 0, queued: 1, concurrency: null, maxQueued: null },
  ]);
});
