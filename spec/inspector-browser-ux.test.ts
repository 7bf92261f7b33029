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
import { until } from './_until.ts';
import { wrapUntrusted } from '../lib/untrusted/wrap.ts';

const SKIP = browserSkip();

const ENTRIES = ['e-1', 'e-2', 'e-3'].map((id, i) => ({
  id,
  time: '2026-11-27T12:00:00.000Z',
  method: 'POST',
  path: `/hooks/n${i + 1}`,
  hook: `n${i + 1}`,
  status: 200,
}));

async function start(
  t: TestContext,
  entries: readonly { id: string }[] = ENTRIES,
  list?: InspectorSource['list'],
): Promise<{ url: string; page: Page; replays: unknown[] }> {
  const replays: unknown[] = [];
  const source: InspectorSource = {
    list: list ?? (async () => ({ entries: [...entries] })),
    show: async (id) => entries.find((e) => e.id === id) ?? null,
    replay: async (ids, options) => {
      replays.push({ ids, ...options });
      // e-1 succeeded before: its dry run says it runs only when forced.
      return {
        results: ids.map((id) => ({
          id,
          ok: true,
          ...(options.dryRun && id === 'e-1' ? { needsForce: 'succeeded' } : {}),
        })),
      };
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
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
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

test('each poll sends the version of the list the page has; told nothing changed, the page keeps its rows', {
  skip: SKIP,
}, async (t) => {
  const asked: (string | undefined)[] = [];
  const { url, page } = await start(t, ENTRIES, async (filter) => {
    asked.push(filter.since);
    return filter.since === 'v-1'
      ? { entries: [], unchanged: true, version: 'v-1' }
      : { entries: [...ENTRIES], version: 'v-1' };
  });
  await page.goto(url);
  await page.locator('#list li').nth(2).waitFor();
  await until('two polls answered unchanged', () => (asked.filter((v) => v === 'v-1').length >= 2 ? true : undefined));
  assert.equal(asked[0], undefined, 'the first list is asked for whole');
  assert.equal(await page.locator('#list li').count(), 3);
  await page.locator('#live', { hasText: '3 shown' }).waitFor();
});

test(
  "the icon comes from the page's own files: its link and /favicon.ico answer 200, with no session",
  { skip: SKIP },
  async (t) => {
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
  },
);

test('the list and the replay dialog work by keyboard: arrows move and open, Escape cancels and gives focus back', {
  skip: SKIP,
}, async (t) => {
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
    const name = await page.evaluate(
      `(document.getElementById('${id}').labels?.[0] ?? document.getElementById('${id}')).textContent`,
    );
    assert.ok(String(name).trim().length > 0, id);
  }
});

// What the server's source says of two requests: one that became an event and an agent run (their
// text wrapped as the server wraps what a model reads), and one whose transform threw.
const HOSTILE = '<img src=x onerror="window.__xss=1">';
const BECAME = [
  {
    id: 'ok-1',
    time: '2026-11-27T12:00:00.000Z',
    method: 'POST',
    path: '/hooks/github',
    hook: 'github',
    status: 200,
    event: 'push',
    delivery: 'gh-77',
    outcome: 'accepted',
    became: {
      events: [{
        seq: 7,
        time: '2026-11-27T12:00:00.000Z',
        kind: 'system',
        text: `Hook github: ${wrapUntrusted(`push to me/notes ${HOSTILE}`, { source: 'Webhook' })}`,
        source: 'hook:github',
        mode: 'now',
      }],
      runs: [{
        runId: 'run-9',
        status: 'ok',
        agentId: 'main',
        sessionKey: 'hook:github:1',
        attempts: 1,
        model: 'm-1',
        message: wrapUntrusted('Summarise the push', { source: 'Webhook' }),
        reply: 'Done: one commit.',
      }],
    },
  },
  {
    id: 'bad-1',
    time: '2026-11-27T12:00:01.000Z',
    method: 'POST',
    path: '/hooks/ci',
    hook: 'ci',
    status: 500,
    code: 'ERR_MAPPING_FAILED',
    outcome: 'failed: mapping failed',
    why: 'transform ci.mjs:3 threw: bad build',
  },
];

test(
  'what a request became reads as text: the event and the run in words, the safety wrapper one folded line, the raw JSON a click away',
  { skip: SKIP },
  async (t) => {
    const { url, page } = await start(t, BECAME);
    await page.goto(url);
    // A failure's tag carries the cause the ledger kept.
    await page.locator('#list li', { hasText: '/hooks/ci' }).waitFor();
    assert.match(
      await page.locator('#list li', { hasText: '/hooks/ci' }).locator('.outcome').innerText(),
      /^failed: transform ci\.mjs:3 threw: bad build$/,
    );
    await page.locator('#list li', { hasText: '/hooks/github' }).locator('button').click();
    const became = page.locator('#detail .became');
    await became.waitFor();
    const text = await became.innerText();
    assert.match(text, /Event 7 in the main session \(wake now\):/);
    assert.ok(text.includes(`push to me/notes ${HOSTILE}`), 'the event text, markup as text');
    assert.match(text, /Agent run run-9: finished/);
    assert.match(text, /Summarise the push/);
    assert.match(text, /Done: one commit\./);
    // The wrapper: one labelled line per text, folded; its notice is there on a click, never as an escaped string.
    assert.equal(await became.locator('details.wrapper').count(), 2);
    assert.match(
      await became.locator('details.wrapper summary').first().innerText(),
      /^Marked as untrusted content from Webhook for the model$/,
    );
    assert.doesNotMatch(text, /SECURITY NOTICE|EXTERNAL_UNTRUSTED_CONTENT|\\n|\{…|\[…/);
    assert.equal(await became.locator('.json').count(), 0, 'no JSON tree');
    await became.locator('details.wrapper summary').first().click();
    assert.match(await became.innerText(), /SECURITY NOTICE/);
    // The raw JSON, one click away.
    await became.locator('details.raw summary', { hasText: 'Raw JSON' }).click();
    assert.match(await became.locator('details.raw pre').innerText(), /"runId": "run-9"/);
    assert.equal(await page.evaluate('window.__xss'), undefined);
    assert.equal(await page.locator('#detail img').count(), 0);
    // The detail says the cause too.
    await page.locator('#list li', { hasText: '/hooks/ci' }).locator('button').click();
    await page.locator('#detail', { hasText: 'transform ci.mjs:3 threw: bad build' }).waitFor();
  },
);

test('a dry run answered after its dialog was closed does not fill the dialog opened since for another request', {
  skip: SKIP,
}, async (t) => {
  const { url, page } = await start(t);
  await page.goto(url);
  await page.locator('#list li').nth(2).waitFor();
  // The first dry run is held until the second dialog shows its own.
  let release = (): void => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let first = true;
  await page.route('**/api/replay', async (route) => {
    const hold = first;
    first = false;
    if (hold) await held;
    await route.continue();
  });
  await page.locator('#list li').nth(0).locator('button').click();
  await page.locator('#detail .reqline', { hasText: '/hooks/n1' }).waitFor();
  await page.locator('#replay').click();
  await page.keyboard.press('Escape');
  await page.locator('#list li').nth(1).locator('button').click();
  await page.locator('#detail .reqline', { hasText: '/hooks/n2' }).waitFor();
  await page.locator('#replay').click();
  await page.locator('#confirm-summary', { hasText: 'nothing has been replayed yet' }).waitFor();
  assert.equal(await page.locator('#confirm-yes').innerText(), 'Replay 1');
  const late = page.waitForResponse((answer) => answer.url().endsWith('/api/replay'));
  release();
  await late;
  // The page has read the late answer (a few turns of its loop after the response).
  await page.evaluate(
    'new Promise((resolve) => setTimeout(() => requestAnimationFrame(() => setTimeout(resolve, 0)), 0))',
  );
  // It was e-1's (which needs a choice): the open dialog is still e-2's, which runs as it is.
  assert.doesNotMatch(await page.locator('#confirm').innerText(), /replayed only if you choose/);
  assert.equal(await page.locator('#confirm-yes').innerText(), 'Replay 1');
});
