// The inspector page's finish in a real headless Chromium, over an in-process inspector and a
// source of fixed entries: a loading state before the first list, the icon answered by the
// page's own files, and the list and the replay dialog by keyboard alone.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { Page } from 'playwright-core';
import { createInspector, type InspectorSource } from '../lib/inspector/listener.ts';
import { listen } from '../lib/edge/listen.ts';
import { browserSkip, launch } from './_browser.ts';
import { silentLogger } from './_app.ts';
import { defer } from './_cleanup.ts';
import { send } from './_http.ts';

const SKIP = browserSkip();

const ENTRIES = ['e-1', 'e-2', 'e-3'].map((id, i) => ({ id, time: '2026-11-27T12:00:00.000Z', method: 'POST', path: `/hooks/n${i + 1}`, hook: `n${i + 1}`, status: 200 }));

async function start(t: TestContext): Promise<{ url: string; page: Page; replays: unknown[] }> {
  const replays: unknown[] = [];
  const source: InspectorSource = {
    list: async () => ({ entries: ENTRIES }),
    show: async (id) => ENTRIES.find((e) => e.id === id) ?? null,
    replay: async (ids, options) => {
      replays.push({ ids, ...options });
      return { results: ids.map((id) => ({ id, ok: true })) };
    },
  };
  const inspector = createInspector({ source, log: silentLogger, idleMs: 60_000, maxAgeMs: 3_600_000 });
  const running = await listen(inspector, { host: '127.0.0.1', port: 0 });
  defer(t, () => running.close(100));
  inspector.bound(Number(new URL(running.url).port));
  const browser = await launch(t);
  const page = await (await browser.newContext()).newPage();
  return { url: `${running.url}${inspector.login().path}`, page, replays };
}

test('the page says it is loading until the first list arrives', { skip: SKIP }, async (t) => {
  const { url, page } = await start(t);
  // Hold the first list back: what the page shows meanwhile is what a slow first answer shows.
  let release = (): void => {};
  const held = new Promise<void>((resolve) => { release = resolve; });
  await page.route('**/api/requests?*', async (route) => {
    await held;
    await route.continue();
  });
  await page.goto(url);
  await page.locator('#loading', { hasText: 'Loading requests' }).waitFor();
  assert.equal(await page.locator('#list li').count(), 0);
  release();
  await page.locator('#list li').first().waitFor();
  assert.equal(await page.locator('#loading').isVisible(), false);
});

test('the icon comes from the page\'s own files: its link and /favicon.ico answer 200, with no session', { skip: SKIP }, async (t) => {
  const { url, page } = await start(t);
  await page.goto(url);
  await page.locator('#list li').first().waitFor();
  const href = new URL(String(await page.locator('link[rel="icon"]').getAttribute('href')), page.url()).href;
  const origin = new URL(url).origin;
  for (const target of [href, `${origin}/favicon.ico`]) {
    const answer = await page.request.get(target);
    assert.equal(answer.status(), 200, target);
    assert.match(String(answer.headers()['content-type']), /^image\/svg\+xml/, target);
    // Without the cookie too: the browser asks for /favicon.ico outside the cookie's path.
    const bare = await send(origin, new URL(target).pathname);
    assert.equal(bare.status, 200, target);
  }
});

test('the list and the replay dialog work by keyboard: arrows move and open, Escape cancels and gives focus back', { skip: SKIP }, async (t) => {
  const { url, page, replays } = await start(t);
  await page.goto(url);
  await page.locator('#list li').nth(2).waitFor();
  assert.ok(await page.locator('#list').getAttribute('aria-label'));
  await page.locator('#list li button').first().focus();
  await page.keyboard.press('ArrowDown');
  await page.locator('#detail .reqline', { hasText: 'POST /hooks/n2' }).waitFor();
  assert.equal(await page.evaluate('document.activeElement.dataset.id'), 'e-2');
  await page.keyboard.press('End');
  await page.locator('#detail .reqline', { hasText: 'POST /hooks/n3' }).waitFor();
  await page.keyboard.press('ArrowUp');
  await page.locator('#detail .reqline', { hasText: 'POST /hooks/n2' }).waitFor();
  assert.equal(await page.evaluate('document.activeElement.dataset.id'), 'e-2');

  // Replay from the keyboard: the dialog takes focus on Cancel, Escape closes it, nothing is replayed.
  await page.locator('#replay').focus();
  await page.keyboard.press('Enter');
  await page.locator('#confirm[open]').waitFor();
  assert.equal(await page.evaluate('document.activeElement.id'), 'confirm-no');
  await page.keyboard.press('Escape');
  await page.locator('#confirm:not([open])').waitFor({ state: 'attached' });
  assert.equal(await page.evaluate('document.activeElement.id'), 'replay');
  assert.deepEqual(replays.filter((r) => (r as { dryRun: boolean }).dryRun === false), []);
  // Every control in the dialog has a name a screen reader reads.
  for (const id of ['confirm-no', 'confirm-yes']) {
    const name = await page.evaluate(`(document.getElementById('${id}').labels?.[0] ?? document.getElementById('${id}')).textContent`);
    assert.ok(String(name).trim().length > 0, id);
  }
});
