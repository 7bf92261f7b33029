import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { test } from 'node:test';
import type { RunRecord } from '../lib/model/records.ts';
import { settledCallback } from '../lib/runtime/callback-event.ts';
import { specConfig } from './_app.ts';

const TIME = '2026-11-27T12:00:00.000Z';

function run(over: Partial<RunRecord>): RunRecord {
  return {
    runId: 'r1',
    hook: 'agent',
    name: 'CI',
    message: 'm',
    sessionKey: 'hook:1',
    agentId: 'main',
    wakeMode: 'now',
    deliver: false,
    channel: 'last',
    requestId: 'req-1',
    status: 'ok',
    acceptedAt: TIME,
    attempts: 1,
    reply: 'All green.',
    callback: { url: 'http://127.0.0.1:9/cb?x=1', includeReply: false, maxAgeSeconds: 60 },
    ...over,
  };
}

test('settledCallback(): a settled run owes one callback, the completion waitForCompletion answers under a type and a version', async () => {
  const config = await specConfig({}, tmpdir());
  assert.deepEqual(settledCallback(config, run({}), TIME), [{
    id: 'msg_r1',
    runId: 'r1',
    hook: 'agent',
    url: 'http://127.0.0.1:9/cb?x=1',
    origin: 'http://127.0.0.1:9',
    maxAgeSeconds: 60,
    body: {
      type: 'run.completed',
      version: 1,
      timestamp: TIME,
      data: {
        runId: 'r1',
        hook: 'agent',
        agentId: 'main',
        sessionKey: 'hook:1',
        requestId: 'req-1',
        status: 'ok',
        replyDisposition: 'visible',
        delivered: false,
        deliveryAttempted: false,
      },
    },
  }]);
  const withReply = run({ callback: { url: 'http://a/x', mapping: 'ci', includeReply: true, maxAgeSeconds: 5 } });
  const [entry] = settledCallback(config, withReply, TIME);
  assert.equal((entry!.body['data'] as Record<string, unknown>)['reply'], 'All green.');
  assert.equal(entry!.mapping, 'ci');
  const failed = settledCallback(config, run({ status: 'timeout', error: 'no reply within 1 s' }), TIME);
  assert.equal((failed[0]!.body['data'] as Record<string, unknown>)['status'], 'timeout');
});

test('settledCallback(): none for a run without a callback, still running, or ok with a delivery not yet recorded', async () => {
  const config = await specConfig({}, tmpdir());
  const { callback: _none, ...without } = run({});
  assert.deepEqual(settledCallback(config, without, TIME), []);
  assert.deepEqual(settledCallback(config, run({ status: 'running' }), TIME), []);
  assert.deepEqual(settledCallback(config, run({ deliver: true }), TIME), []);
  const delivered = run({
    deliver: true,
    delivery: { status: 'delivered', channel: 'telegram', to: '1', messageIds: ['9'] },
  });
  assert.equal(
    (settledCallback(config, delivered, TIME)[0]!.body['data'] as Record<string, unknown>)['delivered'],
    true,
  );
});
