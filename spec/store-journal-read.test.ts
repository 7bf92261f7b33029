// The CLI's read-only view of a state directory, read while a server may hold it open.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RunSpec } from '../lib/model/actions.ts';
import { readEvents } from '../lib/store/journal/read.ts';
import { Store } from '../lib/store/journal/store.ts';
import { withDir } from './_dir.ts';

const RUN: RunSpec = {
  runId: 'r1',
  hook: 'agent',
  name: 'Hook',
  message: 'run r1',
  sessionKey: 'hook:s',
  agentId: 'main',
  wakeMode: 'now',
  deliver: true,
  channel: 'last',
};

test('readEvents() reads the events of a store that is open, without runs or keys', async () => {
  await withDir(async (dir) => {
    const { store } = await Store.open(dir, { idempotencyTtlMs: 60_000 });
    const e1 = await store.addEvent({ kind: 'system', text: 'one', source: 'wake', mode: 'now' }, {
      scope: '/hooks/wake',
      key: 'k',
      status: 200,
      body: { ok: true, key: 'k' },
    });
    await store.commit({ runs: [RUN] });
    const e2 = await store.addEvent({ kind: 'heartbeat', text: 'two', source: 'request' });
    assert.deepEqual(await readEvents(dir), [e1, e2]);
    await store.close();
  });
});

test('readEvents() reads a missing state directory as empty', async () => {
  await withDir(async (dir) => {
    assert.deepEqual(await readEvents(join(dir, 'missing')), []);
  });
});
