// The inspector's Pause and Resume buttons in a real headless Chromium against a real server: a
// hook paused from the page holds its wakes (the page shows how many and since when the oldest
// waits, as `pause` does), and Resume lets them join the main session.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { main } from '../../lib/cli/main.ts';
import { browserSkip, launch } from '../_browser.ts';
import { configFile, serveState } from '../_cli.ts';
import { post } from '../_http.ts';
import { captureIo } from '../_io.ts';
import { until } from '../_until.ts';

const TOKEN = 'inspector-pause-token-0123456789';
const SKIP = browserSkip();

test("Pause on the page holds a hook's wakes and shows what it holds; Resume lets them join the session", {
  skip: SKIP,
  timeout: 120_000,
}, async (t) => {
  const { config, state } = await configFile(t, {
    hooks: {
      enabled: true,
      token: TOKEN,
      mappings: [
        { id: 'ci', match: { path: 'ci' }, action: 'wake', wakeMode: 'next-heartbeat', textTemplate: 'build {{n}}' },
      ],
    },
    inspector: { port: 0 },
  }, 'inspector-pause-');
  const server = await serveState(t, { config, state });
  const cli = async (...args: string[]) => {
    const { io, out } = captureIo({ HOOKS_INGRESS_CONFIG: config });
    const code = await main([...args, '--state-dir', state], io);
    return { code, ...out };
  };
  const link = /^(http:\/\/127\.0\.0\.1:\d+\/inspector\/login\?code=\S+)$/m.exec((await cli('inspect')).stdout)?.[1];
  assert.ok(link !== undefined);
  const page = await (await launch(t)).newPage();
  await page.goto(link);

  await page.locator('#pause-hook option[value="ci"]').waitFor({ state: 'attached' });
  await page.locator('#pause-hook').selectOption('ci');
  await page.locator('#pause-button').click();
  await page.locator('#hooks-said', { hasText: 'Paused ci.' }).waitFor();
  assert.match((await cli('pause')).stdout, /^ci: paused since /);

  for (const n of [1, 2]) {
    const reply = await post(server.url, '/hooks/ci', { headers: { authorization: `Bearer ${TOKEN}` }, body: { n } });
    assert.equal(reply.body['eventOutcome'], 'held');
  }
  const line = page.locator('#hooks-list li', { hasText: 'ci: paused, 2 wakes held, oldest waiting' });
  await line.waitFor();
  assert.equal(await page.locator('#pause-hook option[value="ci"]').count(), 0, 'a paused hook is not offered again');
  const events = async () => (await cli('events', '--json')).stdout.match(/build \d/g) ?? [];
  assert.deepEqual(await events(), []);

  await line.locator('button[data-resume="ci"]').click();
  await page.locator('#hooks-said', { hasText: 'Resumed ci.' }).waitFor();
  await until('the held wakes to join the session', async () => ((await events()).length === 2 ? true : undefined));
  assert.deepEqual(await events(), ['build 1', 'build 2']);
  assert.equal((await cli('pause')).stdout, 'no hook is paused\n');
});
