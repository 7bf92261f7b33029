import assert from 'node:assert/strict';
import { test } from 'node:test';
import { completionOf, createCompletions, isSettled } from '../lib/runtime/completion.ts';
import type { RunRecord } from '../lib/model/records.ts';

const OPTIONS = { ackMaxChars: 300, allowReply: false };

function run(change: Partial<RunRecord> = {}): RunRecord {
  return {
    runId: 'r1',
    hook: 'agent',
    name: 'Hook',
    message: 'm',
    sessionKey: 'hook:s',
    agentId: 'main',
    wakeMode: 'now',
    deliver: true,
    channel: 'last',
    status: 'pending',
    acceptedAt: '',
    attempts: 0,
    ...change,
  };
}

test('isSettled() waits for the delivery a finished run still owes', () => {
  assert.equal(isSettled(run({ status: 'running' })), false);
  assert.equal(isSettled(run({ status: 'ok', reply: 'hi' })), false);
  assert.equal(isSettled(run({ status: 'ok', reply: 'hi', delivery: { status: 'skipped', reason: 'x' } })), true);
  assert.equal(isSettled(run({ status: 'ok', reply: 'hi', deliver: false })), true);
  assert.equal(isSettled(run({ status: 'error', error: 'boom' })), true);
});

test('completionOf() reports delivery, its failure and the reply disposition; the reply only when allowed', () => {
  const delivered = run({
    status: 'ok',
    reply: 'Hello',
    delivery: { status: 'delivered', channel: 'slack', to: 'C1', messageIds: ['1'] },
  });
  assert.deepEqual(completionOf(delivered, OPTIONS), {
    status: 'ok',
    replyDisposition: 'visible',
    delivered: true,
    deliveryAttempted: true,
  });
  assert.deepEqual(completionOf(delivered, { ...OPTIONS, allowReply: true }).reply, 'Hello');
  const failed = run({
    status: 'ok',
    reply: 'Hello',
    delivery: { status: 'failed', channel: 'slack', reason: 'channel_not_found' },
  });
  assert.deepEqual(completionOf(failed, OPTIONS), {
    status: 'ok',
    replyDisposition: 'visible',
    delivered: false,
    deliveryAttempted: true,
    deliveryError: 'channel_not_found',
  });
  assert.equal(completionOf(run({ status: 'ok', reply: '', deliver: false }), OPTIONS).replyDisposition, 'empty');
  assert.equal(
    completionOf(run({ status: 'ok', reply: 'HEARTBEAT_OK', deliver: false }), OPTIONS).replyDisposition,
    'silent',
  );
  assert.deepEqual(completionOf(run({ status: 'error', error: 'no model' }), { ...OPTIONS, allowReply: true }), {
    status: 'error',
    replyDisposition: 'empty',
    delivered: false,
    deliveryAttempted: false,
  });
  assert.equal(completionOf(run({ status: 'running' }), OPTIONS).status, 'timeout');
  assert.equal(completionOf(null, OPTIONS).status, 'error');
});

test('createCompletions() answers at once for settled runs, on the change that settles the rest, and at the bound otherwise', async () => {
  const runs = new Map<string, RunRecord>([['a', run({ runId: 'a', status: 'timeout' })], [
    'b',
    run({ runId: 'b', status: 'running' }),
  ]]);
  const listeners = new Set<(r: RunRecord) => void>();
  const store = {
    run: (id: string) => runs.get(id) ?? null,
    watchRuns: (listener: (r: RunRecord) => void) => (listeners.add(listener), () => listeners.delete(listener)),
  };
  const completions = createCompletions(store);
  assert.deepEqual((await completions.wait(['a'], 60_000, OPTIONS)).map((c) => c.status), ['timeout']);
  const both = completions.wait(['a', 'b'], 60_000, OPTIONS);
  const b = run({ runId: 'b', status: 'ok', reply: 'x', deliver: false });
  runs.set('b', b);
  for (const listener of listeners) listener(b);
  assert.deepEqual((await both).map((c) => c.status), ['timeout', 'ok']);
  assert.equal(listeners.size, 0, 'the wait stopped watching');
  runs.set('c', run({ runId: 'c', status: 'running' }));
  // The wait's own timer is unref'd (it never keeps a stopping process alive): hold the loop open here.
  const alive = setInterval(() => undefined, 1_000);
  assert.deepEqual((await completions.wait(['c'], 10, OPTIONS)).map((c) => c.status), ['timeout']);
  clearInterval(alive);
  assert.equal(listeners.size, 0);
});

test('createCompletions() ends a wait as soon as its client is gone: nothing watched, no timer, not counted as held', async () => {
  const runs = new Map<string, RunRecord>([['r', run({ runId: 'r', status: 'running' })]]);
  const listeners = new Set<(r: RunRecord) => void>();
  const store = {
    run: (id: string) => runs.get(id) ?? null,
    watchRuns: (listener: (r: RunRecord) => void) => (listeners.add(listener), () => listeners.delete(listener)),
  };
  const completions = createCompletions(store);
  const departures = new Set<() => void>();
  const gone = (listener: () => void) => (departures.add(listener), () => void departures.delete(listener));
  const waits = Array.from({ length: 1500 }, () => completions.wait(['r'], 3_600_000, OPTIONS, gone));
  assert.equal(completions.held(), 1500);
  assert.equal(listeners.size, 1500);
  for (const leave of [...departures]) leave();
  assert.deepEqual(new Set((await Promise.all(waits)).flat().map((c) => c.status)), new Set(['timeout']));
  assert.equal(completions.held(), 0);
  assert.equal(listeners.size, 0, 'no run watcher left');
  assert.equal(departures.size, 0, 'no departure listener left');
  // A wait that ends on its own unsubscribes from the departure too; one already gone ends at once.
  const settled = completions.wait(['r'], 3_600_000, OPTIONS, gone);
  const done = run({ runId: 'r', status: 'ok', reply: 'x', deliver: false });
  runs.set('r', done);
  for (const listener of listeners) listener(done);
  assert.equal((await settled)[0]!.status, 'ok');
  assert.equal(departures.size, 0);
  runs.set('q', run({ runId: 'q', status: 'running' }));
  assert.equal(
    (await completions.wait(['q'], 3_600_000, OPTIONS, (listener) => (listener(), () => undefined)))[0]!.status,
    'timeout',
  );
  assert.equal(completions.held(), 0);
});
