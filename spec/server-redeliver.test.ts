import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { Config } from '../lib/config/types.ts';
import type { RunSpec } from '../lib/model/actions.ts';
import type { DeliveryOutcome, RunRecord } from '../lib/model/records.ts';
import { Claims } from '../lib/server/claims.ts';
import { redeliverOperation, type RedeliverResult } from '../lib/server/redeliver.ts';
import { Store } from '../lib/store/journal/store.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { specConfig, withHooks } from './_app.ts';

// runs redeliver, the server's side: which runs' replies are sent again (one that ended ok, with a
// reply that is more than an acknowledgment, to be delivered, to a channel configured now) and why
// the others are not; one redelivery of a run at a time.

const BOT = '717171:AARedeliver-bot_token0123456789abcd';

const spec = (runId: string, more: Partial<RunSpec> = {}): RunSpec => ({
  runId,
  hook: 'chat',
  name: 'chat',
  message: 'm',
  sessionKey: 'k',
  agentId: 'main',
  wakeMode: 'next-heartbeat',
  deliver: true,
  channel: 'telegram',
  to: '42',
  ...more,
});

async function start(t: TestContext) {
  const dir = await tempDir(t, 'server-redeliver-');
  const { store } = await Store.open(dir, { idempotencyTtlMs: 60_000 });
  defer(t, () => store.close());
  const config = await specConfig(
    withHooks({ channels: { telegram: { botToken: BOT } } }, 'server-redeliver-token-0123456789'),
    dir,
  );
  const sent: string[] = [];
  const claims = new Claims();
  let current: Config = config;
  const op = redeliverOperation({
    store,
    claims,
    config: () => current,
    runs: {
      redeliver: (run: RunRecord, reply: string): Promise<DeliveryOutcome> => {
        sent.push(`${run.runId}: ${reply}`);
        return Promise.resolve({ status: 'delivered', channel: run.channel, to: run.to ?? '', messageIds: [] });
      },
    },
  });
  const ended = async (runId: string, more: Partial<RunSpec>, update: Partial<RunRecord>) => {
    await store.commit({ runs: [spec(runId, more)] });
    await store.commit({ runUpdates: [{ runId, ...update }] });
  };
  return {
    store,
    sent,
    claims,
    ended,
    forward: () => void (current = { ...config, hooks: { ...config.hooks, forward: {} } } as unknown as Config),
    redeliver: async (ids: unknown) => (await op({ ids })).results,
  };
}

const said = (results: RedeliverResult[]) => results.map((r) => (r.ok ? `${r.id}: ${r.delivery.status}` : r.error));

test('redeliverOperation: a finished reply is sent again; a run with no reply, no channel or only an ack is refused, saying why', async (t) => {
  const h = await start(t);
  await h.ended('ok', {}, { status: 'ok', reply: 'the answer' });
  await h.ended('err', {}, { status: 'error', error: 'down' });
  await h.ended('quiet', { deliver: false }, { status: 'ok', reply: 'kept' });
  await h.ended('ack', {}, { status: 'ok', reply: 'HEARTBEAT_OK' });
  await h.ended('gone', { channel: 'slack', to: 'C0123456789' }, { status: 'ok', reply: 'x' });
  await h.store.commit({ runs: [spec('busy')] });
  assert.deepEqual(said(await h.redeliver(['ok', 'err', 'busy', 'quiet', 'ack', 'gone', 'nobody'])), [
    'ok: delivered',
    'run err has no reply to send (it ended error); runs retry runs a failed run again',
    'run busy has no reply to send (it has not finished: pending); runs retry runs a failed run again',
    'run quiet has no channel: it was not to be delivered (deliver: false)',
    "run ack's reply is only an acknowledgment, which is never sent",
    'run gone has no channel to send to now: channel: slack is not configured (channels.slack)',
    'no run has the id "nobody" (it may have been trimmed: the newest finished runs are kept)',
  ]);
  assert.deepEqual(h.sent, ['ok: the answer']);

  assert.ok(h.claims.take('redeliver:ok'));
  assert.deepEqual(said(await h.redeliver(['ok'])), ['a redelivery of run ok runs now']);
  h.claims.release('redeliver:ok');
  await assert.rejects(h.redeliver([]), /ids: must be a non-empty list of run ids/);
  h.forward();
  await assert.rejects(h.redeliver(['ok']), /runs redeliver needs local runs/);
  assert.equal(h.sent.length, 1);
});
