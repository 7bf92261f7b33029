import assert from 'node:assert/strict';
import { test } from 'node:test';
import { laneFree } from '../lib/runtime/lane.ts';
import type { QueueView } from '../lib/runtime/can-start.ts';
import type { Config } from '../lib/config/types.ts';
import type { RunRecord } from '../lib/model/records.ts';

const run = { runId: 'r1', sessionKey: 'hook:a', mapping: 'ci' } as RunRecord;

function view(hooks: Pick<Config['hooks'], 'agent' | 'mappings'>, running: Record<string, number>): QueueView {
  return {
    config: { hooks } as Config,
    now: 0,
    busySessions: new Set(),
    running: new Map(Object.entries(running)),
  };
}

const ci = (concurrency?: number) =>
  ({ agent: {}, mappings: [{ id: 'ci', ...(concurrency === undefined ? {} : { concurrency }) }] }) as unknown as Pick<
    Config['hooks'],
    'agent' | 'mappings'
  >;

test('laneFree holds a run while its hook has its concurrency in flight, and lets it start below it', () => {
  assert.deepEqual(laneFree(run, 'ci', view(ci(2), { ci: 2 })), { rule: 'lane' });
  assert.deepEqual(laneFree(run, 'ci', view(ci(2), { ci: 3 })), { rule: 'lane' }, 'more after a reload lowered it');
  assert.equal(laneFree(run, 'ci', view(ci(2), { ci: 1 })), null);
  assert.equal(laneFree(run, 'ci', view(ci(1), { other: 4 })), null, "another hook's runs do not count");
});

test('laneFree never holds the runs of a hook that sets no concurrency', () => {
  assert.equal(laneFree(run, 'ci', view(ci(), { ci: 1000 })), null);
  assert.equal(laneFree(run, 'agent', view(ci(1), { agent: 1000 })), null);
});

test("laneFree reads /agent's lane from hooks.agent", () => {
  const hooks = { agent: { concurrency: 1 }, mappings: [] } as unknown as Pick<Config['hooks'], 'agent' | 'mappings'>;
  assert.deepEqual(laneFree(run, 'agent', view(hooks, { agent: 1 })), { rule: 'lane' });
  assert.equal(laneFree(run, 'agent', view(hooks, {})), null);
});
