import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import type { DeliveryRequest } from '../lib/delivery/adapter.ts';
import type { NoticeSpec } from '../lib/model/actions.ts';
import type { DeliveryOutcome, NoticeRecord } from '../lib/model/records.ts';
import type { AlertNote } from '../lib/model/alerts.ts';
import { Runner } from '../lib/runtime/runner.ts';
import { Store } from '../lib/store/journal/store.ts';
import { Transcripts } from '../lib/store/journal/transcripts.ts';
import { captureLog, specConfig } from './_app.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { until } from './_until.ts';

function spec(deliveryId: string, over: { to?: string | undefined } = {}): NoticeSpec {
  const notice: NoticeSpec = {
    kind: 'notify',
    deliveryId,
    hook: 'deploy',
    name: 'Deploys',
    channel: 'telegram',
    to: '12345',
    text: `Deploy ${deliveryId}`,
    requestId: `req-${deliveryId}`,
  };
  if ('to' in over && over.to === undefined) delete notice.to;
  return notice;
}

interface World {
  store: Store;
  runner: Runner;
  asked: Omit<DeliveryRequest, 'signal'>[];
  lines: Record<string, unknown>[];
  beats: string[];
  noted: AlertNote[];
  /** Records deliveries as the edge's commit does, and hands them to the runner. */
  accept(...specs: NoticeSpec[]): Promise<NoticeRecord[]>;
  settled(id: string): Promise<NoticeRecord>;
}

async function world(
  t: TestContext,
  deliver: ((request: DeliveryRequest) => Promise<DeliveryOutcome>) | null,
  state?: string,
): Promise<World> {
  const dir = state ?? join(await tempDir(t, 'notice-'), 'state');
  const config = await specConfig({}, dir);
  const { store } = await Store.open(dir, { idempotencyTtlMs: 60_000 });
  const asked: Omit<DeliveryRequest, 'signal'>[] = [];
  const beats: string[] = [];
  const noted: AlertNote[] = [];
  const { log, lines } = captureLog();
  const runner = new Runner({
    store,
    config,
    log,
    alerts: { note: (n) => void noted.push(n) },
    transcripts: new Transcripts(dir),
    heartbeat: { request: (reason) => void beats.push(reason) },
    providerFor: () => {
      throw new Error('No model call expected');
    },
    ...(deliver === null ? {} : {
      deliver: (request: DeliveryRequest) => {
        const { signal: _signal, ...rest } = request;
        asked.push(rest);
        return deliver(request);
      },
    }),
  });
  defer(t, async () => {
    await runner.stop();
    await store.close();
  });
  return {
    store,
    runner,
    asked,
    lines,
    beats,
    noted,
    async accept(...specs) {
      const { notices } = await store.commit({ notices: specs });
      for (const notice of notices) runner.notify(notice);
      return notices;
    },
    async settled(id) {
      // Settled: its outcome on the record and said in the log (which follows the commit).
      await until(
        `delivery ${id} to settle`,
        () =>
          store.notice(id)?.status !== 'pending' &&
          lines.some((l) => l['msg'] === 'notify delivery' && l['deliveryId'] === id),
      );
      return store.notice(id)!;
    },
  };
}

const DELIVERED: DeliveryOutcome = { status: 'delivered', channel: 'telegram', to: '12345', messageIds: ['77'] };

test('Runner.notify() sends the text to the recorded channel and recipient and records the outcome, with nothing in the main session', async (t) => {
  const w = await world(t, async () => DELIVERED);
  await w.accept(spec('a'));
  const done = await w.settled('a');
  assert.deepEqual([done.status, done.attempts, done.delivery], ['delivered', 1, DELIVERED]);
  assert.equal(typeof done.finishedAt, 'string');
  assert.deepEqual(w.asked, [{ channel: 'telegram', to: '12345', text: 'Deploy a' }]);
  assert.deepEqual(w.store.events(), []);
  assert.deepEqual(w.beats, []);
  assert.equal(w.store.lastRoute(), null, 'a notify delivery never moves the last route');
  assert.deepEqual(
    w.lines.filter((l) => l['msg'] === 'notify delivery').map((
      l,
    ) => [l['level'], l['deliveryId'], l['requestId'], l['status']]),
    [['info', 'a', 'req-a', 'delivered']],
  );
});

test('Runner.notify() records a failed delivery and logs it at warn, still with nothing in the main session', async (t) => {
  const w = await world(
    t,
    async () => ({
      status: 'failed',
      channel: 'telegram',
      to: '12345',
      reason: 'Telegram 403: Forbidden: bot was blocked by the user',
    }),
  );
  await w.accept(spec('a', { to: undefined }));
  const done = await w.settled('a');
  assert.equal(done.status, 'failed');
  assert.deepEqual(w.asked, [{ channel: 'telegram', text: 'Deploy a' }], "no `to`: the channel's defaultTo decides");
  assert.deepEqual(w.store.events(), []);
  const [line] = w.lines.filter((l) => l['msg'] === 'notify delivery');
  assert.deepEqual([line?.['level'], line?.['error']], [
    'warn',
    'Telegram 403: Forbidden: bot was blocked by the user',
  ]);
  assert.deepEqual(
    w.noted,
    [{ kind: 'delivery-failures', hook: 'deploy', code: 'Telegram 403' }],
    "the owner's alerts hear of it by its code",
  );
});

test('Runner.notify() without delivery configured records the delivery skipped', async (t) => {
  const w = await world(t, null);
  await w.accept(spec('a'));
  assert.deepEqual((await w.settled('a')).delivery, { status: 'skipped', reason: 'no delivery is configured' });
  assert.deepEqual(w.noted, [], 'skipped is not a failure');
});

test('Runner.start() sends the deliveries a previous process left pending, counting the send it had begun', async (t) => {
  const state = join(await tempDir(t, 'notice-resume-'), 'state');
  const before = await Store.open(state, { idempotencyTtlMs: 60_000 });
  await before.store.commit({ notices: [spec('a'), spec('b')] });
  await before.store.commit({
    noticeUpdates: [{ deliveryId: 'a', attempts: 1 }, { deliveryId: 'b', status: 'delivered', delivery: DELIVERED }],
  });
  await before.store.close();
  const w = await world(t, async () => DELIVERED, state);
  w.runner.start();
  const done = await w.settled('a');
  assert.deepEqual([done.status, done.attempts], ['delivered', 2]);
  assert.deepEqual(w.asked.map((r) => r.text), ['Deploy a'], 'the delivered one is not sent again');
});

test('a delivery that fails because the runner stops stays pending for the next process', async (t) => {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const w = await world(t, async (request) => {
    await held;
    return request.signal?.aborted ? { status: 'failed', channel: 'telegram', reason: 'aborted' } : DELIVERED;
  });
  await w.accept(spec('a'));
  await until('the send to begin', () => (w.asked.length === 1 ? true : undefined));
  const stopped = w.runner.stop();
  release();
  await stopped;
  assert.deepEqual([w.store.notice('a')?.status, w.store.notice('a')?.attempts], ['pending', 1]);
  w.runner.notify(w.store.notice('a')!);
  assert.equal(w.asked.length, 1, 'a stopped runner sends nothing more');
});
