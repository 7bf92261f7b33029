// action "notify" at the edge: what the config accepts, what a request is answered, what the
// journal and the ledger's trace keep, and what a dry run shows; in-process on a real store.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { formatNotice } from '../lib/cli/listing.ts';
import { formatPreview } from '../lib/cli/preview-text.ts';
import { buildConfig } from '../lib/config/load.ts';
import { previewHook } from '../lib/edge/preview.ts';
import type { NoticeRecord } from '../lib/model/records.ts';
import { readNotices } from '../lib/store/journal/read.ts';
import { type AppHarness, startApp, withHooks } from './_app.ts';
import { tempDir } from './_dir.ts';
import { post } from './_http.ts';

const TOKEN = 'notify-edge-token-0123456789abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const TELEGRAM = { telegram: { botToken: '1:abc', defaultTo: '42' } };
const NOTIFY = {
  id: 'deploys',
  match: { path: 'deploy' },
  action: 'notify',
  name: 'Deploys',
  messageTemplate: 'Deploy {{app}}',
  channel: 'telegram',
  to: '12345',
};

async function problems(t: TestContext, raw: Record<string, unknown>): Promise<string[]> {
  const built = await buildConfig(withHooks(raw, TOKEN), {
    file: null,
    env: {},
    dir: await tempDir(t, 'notify-config-'),
  });
  return built.ok ? [] : built.problems;
}

async function start(t: TestContext, mappings: unknown[]): Promise<AppHarness & { sent: NoticeRecord[] }> {
  const sent: NoticeRecord[] = [];
  const runs = { enqueue() {}, depth: 0, notify: (notice: NoticeRecord) => void sent.push(notice) };
  const h = await startApp(t, {
    raw: { hooks: { mappings }, channels: TELEGRAM },
    token: TOKEN,
    with: () => ({ runs }),
  });
  return { ...h, sent };
}

test("the config takes a notify mapping to a configured channel, its recipient written out or the channel's defaultTo", async (t) => {
  assert.deepEqual(
    await problems(t, { hooks: { mappings: [NOTIFY, { ...NOTIFY, to: undefined }] }, channels: TELEGRAM }),
    [],
  );
});

test('the config refuses a notify mapping without a concrete, configured channel and a recipient the configuration wrote', async (t) => {
  const { to: _to, ...noTo } = NOTIFY;
  assert.deepEqual(
    await problems(t, {
      hooks: {
        mappings: [
          { ...NOTIFY, channel: undefined },
          { ...NOTIFY, channel: 'discord' },
          { ...NOTIFY, to: '{{chat}}' },
          noTo,
          { ...NOTIFY, to: 'not-a-chat' },
          { ...NOTIFY, messageTemplate: undefined },
        ],
      },
      channels: { telegram: { botToken: '1:abc' } },
    }),
    [
      'hooks.mappings[0].channel: is required for a notify mapping, and must name a configured channel (not "last")',
      'hooks.mappings[1].channel: discord is not configured (channels.discord)',
      "hooks.mappings[2].to: must be written without placeholders for a notify mapping: its recipient is the configuration's, never the payload's",
      'hooks.mappings[3].to: is required for a notify mapping unless channels.telegram.defaultTo is set',
      'hooks.mappings[4].to: Invalid Telegram recipient: expected a numeric chat id or @channelusername, got "not-a-chat"',
      'hooks.mappings[5].messageTemplate: is required for a notify mapping without a transform',
    ],
  );
});

test('the config warns of the keys a notify mapping sets and never reads', async (t) => {
  const built = await buildConfig(
    withHooks({
      hooks: { mappings: [{ ...NOTIFY, model: 'openai/gpt', deliver: false, sessionKey: 'hook:x' }, NOTIFY] },
      channels: TELEGRAM,
    }, TOKEN),
    { file: null, env: {}, dir: await tempDir(t, 'notify-config-') },
  );
  assert.ok(built.ok);
  const notRead = 'is not read by a notify mapping, which sends its message with no model call, session or run';
  assert.deepEqual(built.warnings.filter((w) => w.includes('notify')), [
    `hooks.mappings[0].sessionKey: ${notRead}`,
    `hooks.mappings[0].deliver: ${notRead}`,
    `hooks.mappings[0].model: ${notRead}`,
  ]);
});

test('the config refuses a notify mapping in forward mode, where the upstream gateway delivers', async (t) => {
  const forward = { url: 'http://127.0.0.1:9/hooks', token: 'upstream-token-0123456789' };
  assert.deepEqual(await problems(t, { hooks: { forward, mappings: [NOTIFY] }, channels: TELEGRAM }), [
    'hooks.mappings[0].action: "notify" needs a channel of this server, and in forward mode (hooks.forward) the upstream gateway delivers',
  ]);
});

test('a notify request is journaled before its 202 {deliveryId}, handed to the runtime, and traced in the ledger as a delivery', async (t) => {
  const h = await start(t, [NOTIFY]);
  const reply = await post(h.url, '/hooks/deploy', { headers: AUTH, body: { app: 'web' } });
  assert.equal(reply.status, 202, reply.text);
  const deliveryId = reply.body['deliveryId'] as string;
  assert.deepEqual(reply.body, { ok: true, deliveryId });
  const [notice] = await readNotices(h.state);
  assert.deepEqual({ ...notice, acceptedAt: 'x', requestId: 'x' }, {
    kind: 'notify',
    deliveryId,
    hook: 'deploy',
    name: 'Deploys',
    channel: 'telegram',
    to: '12345',
    text: 'Deploy web',
    requestId: 'x',
    status: 'pending',
    acceptedAt: 'x',
    attempts: 0,
  });
  assert.deepEqual(h.sent.map((n) => n.deliveryId), [deliveryId]);
  assert.deepEqual(h.store.runs(), [], 'no agent run');
  assert.deepEqual(h.store.events(), [], 'nothing in the main session');
  assert.deepEqual(h.beats, [], 'no heartbeat asked for');
});

test('a forEach notify mapping answers 202 {deliveryIds}, one delivery per element', async (t) => {
  const h = await start(t, [{ ...NOTIFY, messageTemplate: '{{items[0]}}', forEach: 'items' }]);
  const reply = await post(h.url, '/hooks/deploy', { headers: AUTH, body: { items: ['a', 'b'] } });
  assert.equal(reply.status, 202, reply.text);
  const ids = reply.body['deliveryIds'] as string[];
  assert.deepEqual(reply.body, { ok: true, deliveryIds: ids });
  assert.deepEqual(h.store.notices().map((n) => [n.deliveryId, n.text]), [[ids[0], 'a'], [ids[1], 'b']]);
});

test('try shows a notify action: its channel, recipient and text, with nothing committed', async (t) => {
  const h = await start(t, [NOTIFY]);
  const preview = await previewHook({
    config: h.config,
    transforms: async () => ({ ok: false, reason: 'threw', detail: 'none' }),
    lastRoute: () => null,
  }, {
    name: 'deploy',
    headers: { 'content-type': 'application/json' },
    rawQuery: '',
    bytes: Buffer.from('{"app":"web"}'),
  });
  assert.equal(preview.status, 202);
  assert.deepEqual(preview.actions, [{
    kind: 'notify',
    text: 'Deploy web',
    unresolved: [],
    notice: { name: 'Deploys', channel: 'telegram', to: '12345' },
  }]);
  assert.match(
    formatPreview(preview),
    /notify:\n {2}channel {5}telegram to 12345\n {2}name {8}Deploys\n {2}text:\n {4}Deploy web/,
  );
  assert.deepEqual(h.store.notices(), []);
});

test("formatNotice() shows a delivery's kind, status, destination, text and outcome, control characters escaped", () => {
  const notice: NoticeRecord = {
    kind: 'notify',
    deliveryId: 'd-1',
    hook: 'deploy',
    name: 'Deploys',
    channel: 'telegram',
    to: '12345',
    text: 'Deploy\u001b[2J web',
    status: 'delivered',
    acceptedAt: '2026-11-27T10:00:00.000Z',
    finishedAt: '2026-11-27T10:00:01.500Z',
    attempts: 2,
    delivery: { status: 'delivered', channel: 'telegram', to: '12345', messageIds: ['7'] },
  };
  assert.equal(
    formatNotice(notice),
    '2026-11-27T10:00:00.000Z  notify delivered 1.5s  d-1  hook=deploy name="Deploys" channel=telegram to=12345 attempts=2 (resumed)\n' +
      '    text: Deploy\\x1b[2J web\n    delivery: delivered to telegram 12345 (7)\n',
  );
});
