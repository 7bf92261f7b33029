// A run's buttons in the inspector, in a real headless Chromium against a real server: Retry run on
// a failed run asks the server first, then runs it once (the fake model sees one more call) and the
// request reads as resolved by the retry; Redeliver sends the stored reply to the fake Telegram
// again with no model call. Both go through the page's session and its key, as Replay does.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { main } from '../../lib/cli/main.ts';
import { browserSkip, launch } from '../_browser.ts';
import { configFile, serveState } from '../_cli.ts';
import { fake, json } from '../_fake-server.ts';
import { post } from '../_http.ts';
import { captureIo } from '../_io.ts';
import { until } from '../_until.ts';

const SKIP = browserSkip();
const TOKEN = 'inspector-runs-token-0123456789ab';
const BOT_TOKEN = '818181:AAInspector-runs_bot0123456789abcdef';
const OWNER = '777002';

async function setup(t: TestContext) {
  let fixed = false;
  const prompts: string[] = [];
  const model = await fake(t, (req, res) => {
    prompts.push((JSON.parse(req.body) as { messages: { content: string }[] }).messages.at(-1)?.content ?? '');
    if (!fixed) return json(res, 400, { error: { message: 'model is down', type: 'invalid_request_error' } });
    json(res, 200, {
      id: 'c',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'the answer' }, finish_reason: 'stop' }],
    });
  });
  const sent: string[] = [];
  const telegram = await fake(t, (req, res) => {
    const body = JSON.parse(req.body) as { chat_id: unknown; text: string };
    sent.push(body.text);
    json(res, 200, { ok: true, result: { message_id: 700 + sent.length, date: 1, chat: { id: body.chat_id } } });
  });
  const mapping = (path: string, more: Record<string, unknown>) => ({
    id: path,
    match: { path },
    action: 'agent',
    messageTemplate: `${path} {{n}}`,
    wakeMode: 'next-heartbeat',
    ...more,
  });
  const { config, state } = await configFile(t, {
    hooks: {
      enabled: true,
      token: TOKEN,
      mappings: [mapping('ci', { deliver: false }), mapping('chat', { channel: 'telegram', to: OWNER })],
    },
    agents: { defaults: { model: 'fake/m', timeoutSeconds: 60 } },
    models: { providers: { fake: { api: 'openai-completions', baseUrl: `${model.url}/v1` } } },
    channels: { telegram: { botToken: BOT_TOKEN, apiBase: telegram.url } },
    inspector: { port: 0 },
  }, 'inspector-runs-');
  const server = await serveState(t, { config, state });
  const cli = async (...args: string[]) => {
    const { io, out } = captureIo({ HOOKS_INGRESS_CONFIG: config });
    const code = await main([...args, '--state-dir', state], io);
    return { code, ...out };
  };
  const send = async (path: string, n: number) => {
    const answer = await post(server.url, `/hooks/${path}`, {
      headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': `${path}-${n}` },
      body: { n },
    });
    assert.equal(answer.status, 202, answer.text);
    return answer.body['runId'] as string;
  };
  const status = async (runId: string) =>
    (await cli('runs', '--json')).stdout.split('\n').filter((l) => l !== '').map((l) =>
      JSON.parse(l) as { runId: string; status: string; retryOf?: string }
    ).find((r) => r.runId === runId)?.status;
  const asked = (text: string) => prompts.filter((p) => p.includes(`\n${text}\n`)).length;
  const page = async () => {
    const link = /^(http:\/\/127\.0\.0\.1:\d+\/inspector\/login\?code=\S+)$/m.exec((await cli('inspect')).stdout)?.[1];
    assert.ok(link !== undefined);
    const opened = await (await (await launch(t)).newContext()).newPage();
    await opened.goto(link);
    return opened;
  };
  return { cli, send, status, asked, sent, page, fix: () => void (fixed = true) };
}

test('Retry run: a failed run, asked about first, runs once more; the request then reads resolved by the retry', {
  skip: SKIP,
  timeout: 180_000,
}, async (t) => {
  const s = await setup(t);
  const runId = await s.send('ci', 1);
  await until('the run to fail', async () => ((await s.status(runId)) === 'error' ? true : undefined));
  s.fix();
  const page = await s.page();
  const row = page.locator('#list li', { hasText: 'hooks/ci' });
  await row.locator('button').click();
  await page.locator(`#retry-${runId}`).click();
  await page.locator('#confirm-summary', { hasText: 'Nothing has run yet.' }).waitFor();
  assert.equal(s.asked('ci 1'), 1, 'the check called no model');
  assert.doesNotMatch(await page.locator('#confirm').innerText(), /--[a-z]/, 'no command-line option in the page');
  await page.locator('#confirm-yes', { hasText: 'Retry run' }).click();
  const said = await page.locator('#confirm-summary', { hasText: /^Retried, as run \S+\.$/ }).innerText();
  const retry = /as run (\S+)\.$/.exec(said)![1]!;
  await until('the retry to finish', async () => ((await s.status(retry)) === 'ok' ? true : undefined));
  assert.equal(s.asked('ci 1'), 2, 'one more model call');
  await page.locator('#confirm-no', { hasText: 'Close' }).click();

  // The detail shows the chain: the failed run retried, the retry ok, and no Retry run left to press.
  await row.locator('.o-resolved', { hasText: /^resolved by retry: run \S+ retried as \S+$/ }).waitFor({
    timeout: 15_000,
  });
  await row.locator('button').click();
  await page.locator('#detail .run', { hasText: `Agent run ${retry}: finished` }).waitFor();
  assert.equal(await page.locator(`#retry-${runId}`).count(), 0);
  assert.match(await page.locator('#detail').innerText(), new RegExp(`retried as\\s+${retry}`));
  // A replay of the request is refused now: its work goes on by the run's retries.
  await page.locator('#replay').click();
  await page.locator('#confirm', { hasText: 'was retried' }).waitFor();
  assert.equal(s.asked('ci 1'), 2);
});

test(
  'Redeliver: the stored reply goes to Telegram again with no model call',
  { skip: SKIP, timeout: 180_000 },
  async (t) => {
    const s = await setup(t);
    s.fix();
    const runId = await s.send('chat', 1);
    await until('the reply sent', () => (s.sent.length === 1 ? true : undefined));
    const calls = s.asked('chat 1');
    const page = await s.page();
    await page.locator('#list li', { hasText: 'hooks/chat' }).locator('button').click();
    await page.locator(`#redeliver-${runId}`).click();
    await page.locator('#confirm-yes', { hasText: 'Redeliver' }).click();
    await page.locator('#confirm-summary', { hasText: `Sent to telegram ${OWNER}.` }).waitFor();
    assert.deepEqual(s.sent, ['the answer', 'the answer']);
    assert.equal(s.asked('chat 1'), calls, 'no model call');
    await page.locator('#confirm-no', { hasText: 'Close' }).click();
    let shown = '';
    await until('the detail to show the redelivery', async () => {
      shown = await page.locator('#detail').innerText();
      return /sent again\s+1×/.test(shown) ? true : undefined;
    }, { detail: () => shown });
  },
);
