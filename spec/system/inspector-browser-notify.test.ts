// A notify mapping's deliveries in the inspector, in a real headless Chromium against a real
// server process and a fake Telegram Bot API: what each request became reads as a delivery in
// words (its channel, recipient, status, attempts and outcome, the message as text), not as JSON,
// and a replay's dry run says in a sentence where the message would go.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { Page } from 'playwright-core';
import { main } from '../../lib/cli/main.ts';
import { browserSkip, launch } from '../_browser.ts';
import { configFile, serveState } from '../_cli.ts';
import { fake, json } from '../_fake-server.ts';
import { post } from '../_http.ts';
import { captureIo } from '../_io.ts';
import { until } from '../_until.ts';

const TOKEN = 'inspector-notify-hook-token-0123456789';
const BOT_TOKEN = '616161:AAInspector-notify_bot0123456789abcd';
const OWNER = '777000';
const GONE = '555000';
const HOSTILE = '<img src=x onerror="window.__xss=1">';
const SKIP = browserSkip();

// The Bot API: the owner's chat takes messages; the other chat is one the bot cannot write to.
async function telegram(t: TestContext): Promise<{ url: string }> {
  let sent = 0;
  return await fake(t, (req, res) => {
    if (req.method !== 'POST' || req.url !== `/bot${BOT_TOKEN}/sendMessage`) {
      return json(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
    }
    const body = JSON.parse(req.body) as { chat_id: unknown; text: string };
    if (String(body.chat_id) === GONE) {
      return json(res, 400, { ok: false, error_code: 400, description: 'Bad Request: chat not found' });
    }
    sent++;
    json(res, 200, {
      ok: true,
      result: { message_id: 900 + sent, date: 1_790_000_000, chat: { id: body.chat_id, type: 'private' }, text: '' },
    });
  });
}

function notify(id: string, path: string, to: string) {
  return {
    id,
    match: { path },
    action: 'notify',
    name: id === 'deploys' ? 'Deploys' : 'Gone',
    messageTemplate: 'Deploy {{app}} finished: {{status}}',
    channel: 'telegram',
    to,
  };
}

async function loginLink(config: string, state: string): Promise<string> {
  const { io, out } = captureIo({ HOOKS_INGRESS_CONFIG: config });
  const code = await main(['inspect', '--state-dir', state], io);
  assert.equal(code, 0, out.stderr);
  const url = /^(http:\/\/127\.0\.0\.1:\d+\/inspector\/login\?code=\S+)$/m.exec(out.stdout)?.[1];
  assert.ok(url !== undefined, out.stdout);
  return url;
}

async function detail(page: Page, path: string): Promise<string> {
  await page.locator('#list li', { hasText: path }).locator('button').click();
  const became = page.locator('#detail .became');
  await became.waitFor();
  return await became.innerText();
}

test(
  "a notify mapping's delivery reads in words in the inspector: channel, recipient, status, attempts, outcome and the message as text; its replay's dry run names where it would go",
  { skip: SKIP, timeout: 120_000 },
  async (t) => {
    const bot = await telegram(t);
    const { config, state } = await configFile(t, {
      hooks: {
        enabled: true,
        token: TOKEN,
        mappings: [notify('deploys', 'deploy', OWNER), notify('gone', 'gone', GONE)],
      },
      channels: { telegram: { botToken: BOT_TOKEN, apiBase: bot.url } },
      inspector: { port: 0 },
    }, 'inspector-browser-notify-');
    const server = await serveState(t, { config, state });
    const headers = { authorization: `Bearer ${TOKEN}` };
    const sent = await post(server.url, '/hooks/deploy', { headers, body: { app: 'web', status: `ok ${HOSTILE}` } });
    assert.equal(sent.status, 202, sent.text);
    const lost = await post(server.url, '/hooks/gone', { headers, body: { app: 'api', status: 'ok' } });
    assert.equal(lost.status, 202, lost.text);
    const deliveryId = String(sent.body['deliveryId']);
    const failedId = String(lost.body['deliveryId']);

    const browser = await launch(t);
    const page = await (await browser.newContext()).newPage();
    await page.goto(await loginLink(config, state));
    await page.locator('#list li', { hasText: '/hooks/gone' }).waitFor();

    const delivered = await until('the delivery shown as delivered', async () => {
      const text = await detail(page, '/hooks/deploy');
      return /no model involved: delivered/.test(text) ? text : undefined;
    });
    assert.match(
      delivered,
      new RegExp(`Message ${deliveryId} of notify mapping Deploys, no model involved: delivered`),
    );
    assert.match(delivered, /channel\s+telegram/);
    assert.match(delivered, new RegExp(`recipient\\s+${OWNER}`));
    assert.match(delivered, /status\s+delivered/);
    assert.match(delivered, /attempts\s+1/);
    assert.match(delivered, new RegExp(`outcome\\s+sent to telegram ${OWNER}`));
    assert.match(delivered, /message ids\s+90\d/);
    assert.match(delivered, /Its message:\s+Deploy web finished: ok <img/);
    assert.ok(delivered.includes(`Deploy web finished: ok ${HOSTILE}`), 'the message, markup as text');
    // Words, not a tree; the raw JSON one click away; the markup stayed text.
    const became = page.locator('#detail .became');
    assert.equal(await became.locator('.json').count(), 0, 'no JSON tree');
    assert.doesNotMatch(delivered, /"deliveryId"|\{…/);
    await became.locator('details.raw summary', { hasText: 'Raw JSON' }).click();
    assert.match(await became.locator('details.raw pre').innerText(), new RegExp(`"deliveryId": "${deliveryId}"`));
    assert.equal(await page.evaluate('window.__xss'), undefined);
    assert.equal(await page.locator('#detail img').count(), 0);

    // A replay's dry run says in a sentence that it would send the message again, and where.
    await page.locator('#replay').click();
    await page.locator('#confirm[open]').waitFor();
    await page.locator('#confirm', { hasText: 'It would be accepted' }).waitFor();
    assert.match(
      await page.locator('#confirm').innerText(),
      new RegExp(`It would be accepted \\(202\\) and send a message to telegram ${OWNER}, no model involved`),
    );
    await page.keyboard.press('Escape');
    await page.locator('#confirm:not([open])').waitFor({ state: 'attached' });

    const failed = await until('the delivery shown as failed', async () => {
      const text = await detail(page, '/hooks/gone');
      return /no model involved: failed/.test(text) ? text : undefined;
    });
    assert.match(failed, new RegExp(`Message ${failedId} of notify mapping Gone, no model involved: failed`));
    assert.match(failed, new RegExp(`recipient\\s+${GONE}`));
    assert.match(failed, /attempts\s+\d+/);
    assert.match(failed, /outcome\s+failed \(telegram\): .+/);
  },
);
