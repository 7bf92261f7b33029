import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { RunSpec } from '../lib/model/actions.ts';
import type { DeliveryOutcome, RunRecord } from '../lib/model/records.ts';
import type { RuntimeContext } from '../lib/runtime/context.ts';
import { MAX_REDELIVERIES, redeliverReply } from '../lib/runtime/redeliver.ts';
import type { DeliveryRequest } from '../lib/delivery/adapter.ts';
import { readRuns } from '../lib/store/journal/read.ts';
import { Store } from '../lib/store/journal/store.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { captureLog } from './_app.ts';

// A run's stored reply sent again: through the delivery given, recorded on the run as one more
// delivery (bounded), the last route moved only for a configured recipient.

const spec = (runId: string, to?: string): RunSpec => ({
  runId,
  hook: 'chat',
  name: 'chat',
  message: 'm',
  sessionKey: 'k',
  agentId: 'main',
  wakeMode: 'next-heartbeat',
  deliver: true,
  channel: 'telegram',
  ...(to === undefined ? {} : { to }),
});

async function setUp(t: TestContext, outcome: DeliveryOutcome | null) {
  const dir = await tempDir(t, 'runtime-redeliver-');
  const { store } = await Store.open(dir, { idempotencyTtlMs: 60_000 });
  defer(t, () => store.close());
  const asked: DeliveryRequest[] = [];
  const { log, lines } = captureLog();
  const ctx = {
    store,
    log,
    now: () => Date.parse('2026-05-01T12:00:00.000Z'),
    stopping: new AbortController().signal,
    ...(outcome === null ? {} : {
      deliver: (request: DeliveryRequest) => {
        asked.push(request);
        return Promise.resolve(outcome);
      },
    }),
  } as unknown as RuntimeContext;
  return { dir, store, ctx, asked, lines };
}

test("redeliverReply() sends the reply to the run's channel and recipient and records it as one more delivery", async (t) => {
  const delivered: DeliveryOutcome = { status: 'delivered', channel: 'telegram', to: '42', messageIds: ['3'] };
  const s = await setUp(t, delivered);
  await s.store.commit({ runs: [spec('r', '42')] });
  const run = s.store.run('r')!;
  assert.deepEqual(await redeliverReply(s.ctx, run, 'hello'), delivered);
  assert.deepEqual(s.asked.map((r) => [r.channel, r.to, r.text]), [['telegram', '42', 'hello']]);
  const [stored] = await readRuns(s.dir);
  assert.deepEqual(stored?.delivery, delivered);
  assert.deepEqual(stored?.redeliveries, [{ time: '2026-05-01T12:00:00.000Z', delivery: delivered }]);
  assert.equal(s.store.lastRoute(), null, 'a recipient the request chose is not the last route');
  assert.equal(s.lines.at(-1)?.['msg'], 'run delivery');

  // Bounded: the newest are kept.
  const many = {
    ...s.store.run('r')!,
    redeliveries: Array.from({ length: MAX_REDELIVERIES }, () => ({
      time: 'then',
      delivery: delivered,
    })),
  };
  await redeliverReply(s.ctx, many, 'hello');
  const kept = s.store.run('r')!.redeliveries!;
  assert.equal(kept.length, MAX_REDELIVERIES);
  assert.equal(kept.at(-1)?.time, '2026-05-01T12:00:00.000Z');
});

test('redeliverReply() moves the last route for a configured recipient, records a failure, and with no delivery records it skipped', async (t) => {
  const s = await setUp(t, { status: 'delivered', channel: 'telegram', to: '7', messageIds: [] });
  await s.store.commit({ runs: [spec('r')] });
  await redeliverReply(s.ctx, s.store.run('r')!, 'hi');
  assert.deepEqual(s.store.lastRoute(), { channel: 'telegram', to: '7' });

  const failed = await setUp(t, { status: 'failed', channel: 'telegram', reason: 'down' });
  await failed.store.commit({ runs: [spec('f')] });
  assert.equal((await redeliverReply(failed.ctx, failed.store.run('f')!, 'hi')).status, 'failed');
  assert.equal(failed.lines.at(-1)?.['level'], 'warn');

  const none = await setUp(t, null);
  await none.store.commit({ runs: [spec('n')] });
  assert.deepEqual(await redeliverReply(none.ctx, none.store.run('n')!, 'hi'), {
    status: 'skipped',
    reason: 'no delivery is configured',
  });
  assert.equal((none.store.run('n') as RunRecord).redeliveries?.length, 1);
});
