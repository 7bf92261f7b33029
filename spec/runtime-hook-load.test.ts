import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HookLoads } from '../lib/runtime/hook-load.ts';

test("HookLoads counts each hook's runs waiting and executing, and leaves out a hook with none", () => {
  const loads = new HookLoads();
  loads.queued('ci');
  loads.queued('ci');
  loads.queued('agent');
  assert.equal(loads.depthOf('ci'), 2);
  loads.started('ci');
  assert.deepEqual(Object.fromEntries(loads.running), { ci: 1 });
  assert.deepEqual(Object.fromEntries(loads.snapshot()), {
    ci: { queued: 1, running: 1 },
    agent: { queued: 1, running: 0 },
  });
  loads.started('ci');
  loads.finished('ci');
  assert.deepEqual(Object.fromEntries(loads.snapshot()), {
    ci: { queued: 0, running: 1 },
    agent: { queued: 1, running: 0 },
  });
  assert.equal(loads.depthOf('ci'), 1);
  loads.finished('ci');
  loads.dropQueued();
  assert.deepEqual(loads.snapshot().size, 0);
  assert.equal(loads.depthOf('ci'), 0);
  assert.equal(loads.running.size, 0);
});
