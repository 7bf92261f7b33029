// The owner's alerts end to end, through `hooks-ingress serve` as a process and a fake Telegram Bot
// API: bad signatures, a failing model, and `hooks-ingress alerts test`.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { configFile, runCli, serveState } from '../_cli.ts';
import { fake, type FakeServer, json } from '../_fake-server.ts';
import { post } from '../_http.ts';
import { SIGNERS } from '../_signers.ts';
import { until } from '../_until.ts';

const TOKEN = 'alerts-spec-hook-token-0123456789';
const BOT_TOKEN = '616161:AAAlerts-bot_token0123456789abcdefgh';
const OWNER = '555000';
// Text that only a request carries: no alert may quote it.
const CANARY = 'PAYLOAD-CANARY-7731';

interface Telegram {
  server: FakeServer;
  /** The texts delivered, with when each arrived. */
  messages: { text: string; at: number }[];
}

async function telegram(t: TestContext): Promise<Telegram> {
  const messages: Telegram['messages'] = [];
  const server = await fake(t, (req, res) => {
    if (req.method !== 'POST' || req.url !== `/bot${BOT_TOKEN}/sendMessage`) {
      return json(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
    }
    const body = JSON.parse(req.body) as { chat_id: unknown; text: string };
    if (String(body.chat_id) !== OWNER) {
      return json(res, 400, { ok: false, error_code: 400, description: 'Bad Request: chat not found' });
    }
    messages.push({ text: body.text, at: Date.now() });
    json(res, 200, {
      ok: true,
      result: {
        message_id: messages.length,
        date: 1_790_000_000,
        chat: { id: body.chat_id, type: 'private' },
        text: body.text,
      },
    });
  });
  return { server, messages };
}

test(
  '20 bad signatures in a moment send one alert and, after a quiet window, one recovery, neither quoting the payload',
  { timeout: 120_000 },
  async (t) => {
    const chat = await telegram(t);
    const { config, state } = await configFile(t, {
      hooks: {
        enabled: true,
        token: TOKEN,
        authRateLimit: { maxFailures: 1000 },
        mappings: [{
          match: { path: 'github' },
          signature: { scheme: 'github', secret: 'the-real-secret' },
          action: 'wake',
          textTemplate: 'push to {{repository.name}}',
        }],
      },
      channels: { telegram: { botToken: BOT_TOKEN, apiBase: chat.server.url } },
      // Ten within 1.2 s start an episode; a window of 4 s ends with the rate long gone, the next one quiet.
      alerts: { channel: 'telegram', to: OWNER, throttleSeconds: 4, signatureFailures: { count: 10, minutes: 0.02 } },
    }, 'runtime-alerts-');
    const server = await serveState(t, { config, state });
    const body = JSON.stringify({ repository: { name: CANARY }, ref: CANARY });
    const headers = await SIGNERS['github']!({ secret: 'a-wrong-secret', body, nowSeconds: 0, id: 'delivery-1' });
    for (let i = 0; i < 20; i++) {
      const refused = await post(server.url, '/hooks/github', {
        headers: { ...headers, 'content-type': 'application/json' },
        body,
      });
      assert.equal(refused.status, 401, refused.text);
    }
    await until(
      'the recovery',
      () => (chat.messages.some((m) => m.text.startsWith('hooks-ingress recovered')) ? true : undefined),
    );
    const texts = chat.messages.map((m) => m.text);
    assert.equal(texts.length, 2, texts.join('\n'));
    assert.match(
      texts[0]!,
      /^hooks-ingress alert: signature failures on hook github: 10 \(bad-signature\), first \S+Z, last \S+Z$/,
    );
    assert.match(texts[1]!, /^hooks-ingress recovered: no signature failures on hook github for 4 s \(last \S+Z\)$/);
    for (const text of texts) assert.doesNotMatch(text, new RegExp(CANARY));
    assert.doesNotMatch(server.stderr(), new RegExp(CANARY));
  },
);

test('a failing model sends one alert per throttle window, counting every failed run once, then one recovery', {
  timeout: 120_000,
}, async (t) => {
  const chat = await telegram(t);
  const model = await fake(
    t,
    (_req, res) =>
      json(res, 401, {
        error: {
          message: 'Incorrect API key provided',
          type: 'invalid_request_error',
          param: null,
          code: 'invalid_api_key',
        },
      }),
  );
  const throttleSeconds = 3;
  const { config, state } = await configFile(t, {
    hooks: { enabled: true, token: TOKEN },
    agents: { defaults: { model: 'fake/m' } },
    models: {
      providers: { fake: { api: 'openai-completions', baseUrl: `${model.url}/v1`, apiKey: 'sk-expired-0123456789' } },
    },
    channels: { telegram: { botToken: BOT_TOKEN, apiBase: chat.server.url } },
    alerts: { channel: 'telegram', to: OWNER, on: ['run-failures'], throttleSeconds },
  }, 'runtime-alerts-');
  const server = await serveState(t, { config, state });
  for (let i = 0; i < 4; i++) {
    const accepted = await post(server.url, '/hooks/agent', {
      headers: { authorization: `Bearer ${TOKEN}` },
      body: { message: `${CANARY} ${i}`, name: 'CI', deliver: false, wakeMode: 'next-heartbeat' },
    });
    assert.equal(accepted.status, 202, accepted.text);
  }
  await until(
    'the recovery',
    () => (chat.messages.some((m) => m.text.startsWith('hooks-ingress recovered')) ? true : undefined),
  );
  const alerts = chat.messages.filter((m) => m.text.startsWith('hooks-ingress alert'));
  const counts = alerts.map((m) =>
    Number(
      /^hooks-ingress alert: failed runs on hook agent: (\d+) \(HTTP 401 invalid_api_key\), first \S+Z, last \S+Z$/
        .exec(m.text)?.[1],
    )
  );
  assert.equal(counts[0], 1, 'the first failure is said at once');
  assert.equal(counts.reduce((a, b) => a + b, 0), 4, chat.messages.map((m) => m.text).join('\n'));
  // A lower bound only: a busy machine makes the gaps longer, never shorter (a second of slack for delivery).
  for (let i = 1; i < alerts.length; i++) {
    assert.ok(alerts[i]!.at - alerts[i - 1]!.at >= (throttleSeconds - 1) * 1000, 'at most one alert per window');
  }
  assert.equal(
    chat.messages.at(-1)!.text,
    `hooks-ingress recovered: no failed runs on hook agent for ${throttleSeconds} s (last ${
      /last (\S+Z)$/.exec(alerts.at(-1)!.text)![1]
    })`,
  );
  for (const { text } of chat.messages) assert.doesNotMatch(text, new RegExp(CANARY));
});

test("hooks-ingress alerts test sends one message to the alerts' chat; without alerts it says so and exits 1", {
  timeout: 60_000,
}, async (t) => {
  const chat = await telegram(t);
  const base = { channels: { telegram: { botToken: BOT_TOKEN, apiBase: chat.server.url, defaultTo: OWNER } } };
  const on = await configFile(t, { ...base, alerts: { channel: 'telegram' } }, 'runtime-alerts-');
  const sent = await runCli(['alerts', 'test', '--config', on.config]);
  assert.equal(sent.code, 0, sent.stderr);
  assert.equal(sent.stdout, `delivered to telegram ${OWNER} (1)\n`);
  assert.deepEqual(chat.messages.map((m) => m.text), ['hooks-ingress alert test: alerts reach this chat.']);
  const off = await configFile(t, base, 'runtime-alerts-');
  const refused = await runCli(['alerts', 'test', '--config', off.config]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /alerts are not configured/);
  assert.equal(chat.messages.length, 1);
});
