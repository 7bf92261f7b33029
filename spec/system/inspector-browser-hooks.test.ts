// The inspector page's list of hooks in a real headless Chromium, against a real server whose
// slow hook holds one run and queues another: each hook's work as text, a hostile hook name
// included, and the figures follow the queue as it drains.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test } from 'node:test';
import { main } from '../../lib/cli/main.ts';
import { browserSkip, launch } from '../_browser.ts';
import { configFile, serveState } from '../_cli.ts';
import { fake } from '../_fake-server.ts';
import { post } from '../_http.ts';
import { captureIo } from '../_io.ts';
import { until } from '../_until.ts';

const TOKEN = 'inspector-hooks-token-0123456789';
const SKIP = browserSkip();
const HOSTILE = '<img src=x onerror="window.__owned=1">';

function complete(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({
    id: 'c',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'done', refusal: null }, finish_reason: 'stop' }],
  }));
}

test(
  "the inspector page lists each hook's runs running and queued, and its lane, as text",
  { skip: SKIP },
  async (t) => {
    const held: ServerResponse[] = [];
    const model = await fake(t, (_req, res) => void held.push(res));
    const files = await configFile(t, {
      hooks: {
        enabled: true,
        token: TOKEN,
        mappings: [
          { id: HOSTILE, match: { path: 'slow' }, messageTemplate: 'slow {{n}}', deliver: false, concurrency: 1 },
          { id: 'quiet', match: { path: 'quiet' }, messageTemplate: 'quiet', deliver: false },
        ],
      },
      agents: { defaults: { model: 'fake/m', timeoutSeconds: 120 } },
      models: { providers: { fake: { api: 'openai-completions', baseUrl: `${model.url}/v1` } } },
      inspector: { port: 0 },
    }, 'inspector-hooks-');
    const server = await serveState(t, files);
    for (const n of [1, 2]) {
      const reply = await post(server.url, '/hooks/slow', {
        headers: { authorization: `Bearer ${TOKEN}` },
        body: { n },
      });
      assert.equal(reply.status, 202, reply.text);
    }
    await until('the first run at the model', () => held.length === 1);

    const { io, out } = captureIo({ HOOKS_INGRESS_CONFIG: files.config });
    assert.equal(await main(['inspect', '--state-dir', files.state], io), 0, out.stderr);
    const link = /^(http:\/\/127\.0\.0\.1:\d+\/inspector\/login\?code=\S+)$/m.exec(out.stdout)?.[1];
    assert.ok(link !== undefined, out.stdout);
    const page = await (await (await launch(t)).newContext()).newPage();
    await page.goto(link);
    const list = page.locator('#hooks-list');
    await list.locator('li', { hasText: '1 running' }).waitFor();
    assert.equal(
      await list.innerText(),
      `${HOSTILE}: 1 running, 1 queued (concurrency 1)\n3 other hooks idle, no control set`,
    );
    assert.equal(await page.locator('#hooks-summary').innerText(), '1 running, 1 queued');
    assert.equal(await page.locator('#hooks-list img').count(), 0, 'the hook name is text, not markup');
    assert.equal(await page.evaluate(() => (globalThis as { __owned?: number }).__owned), undefined);

    // The queue drains: the page follows it at its next poll.
    complete(held.shift()!);
    await until('the second run at the model', () => held.length === 1);
    complete(held.shift()!);
    await list.locator('li', { hasText: 'idle (concurrency 1)' }).waitFor({ timeout: 20_000 });
    assert.equal(await page.locator('#hooks-summary').innerText(), '0 running, 0 queued');
  },
);
