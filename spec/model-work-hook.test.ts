import assert from 'node:assert/strict';
import { test } from 'node:test';
import { workControls, workHook } from '../lib/model/work-hook.ts';

test('workHook() names a mapped run or wake by its mapping id, else by the built-in hook of its kind', () => {
  assert.equal(workHook({ mapping: 'github' }, 'agent'), 'github');
  assert.equal(workHook({ mapping: 'github' }, 'wake'), 'github');
  assert.equal(workHook({}, 'agent'), 'agent');
  assert.equal(workHook({}, 'wake'), 'wake');
});

test('workControls() keeps only the hooks that set a control, hooks.agent as "agent", and is made once per hooks object', () => {
  const hooks = {
    agent: { concurrency: 2 },
    mappings: [{ id: 'ci', maxQueued: 5 }, { id: 'quiet' }, { id: 'ci', concurrency: 9 }, {
      id: 'agent',
      maxQueued: 1,
    }],
  };
  const controls = workControls(hooks);
  assert.deepEqual([...controls.keys()], ['agent', 'ci']);
  assert.deepEqual(controls.get('agent'), { concurrency: 2 }, 'hooks.agent before a mapping named agent');
  assert.deepEqual(controls.get('ci'), { id: 'ci', maxQueued: 5 }, 'the first mapping of an id');
  assert.equal(workControls(hooks), controls);
  assert.equal(workControls({ agent: {}, mappings: [{ id: 'x' }] }).size, 0);
});
