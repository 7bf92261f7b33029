// The inspector's replay dialog in a real headless Chromium against a real server: a bulk replay
// runs what can run, skips what succeeded before, was replayed already or arrived with a stale
// signed timestamp, and forces only the requests a person ticked, each on its own.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { Page } from 'playwright-core';
import { main } from '../../lib/cli/main.ts';
import { browserSkip, launch } from '../_browser.ts';
import { configFile, serveState } from '../_cli.ts';
import { post } from '../_http.ts';
import { captureIo } from '../_io.ts';
import { SIGNERS } from '../_signers.ts';
import { until } from '../_until.ts';

const RIGHT = 'replay-github-secret-right';
const WRONG = 'replay-github-secret-wrong';
const STRIPE = 'whsec_replay_stripe_secret';
const SKIP = browserSkip();

const hooks = (secret: string) => ({
  hooks: {
    enabled: true,
    token: 'inspector-replay-token-0123456789',
    mappings: [
      {
        match: { path: 'github' },
        signature: { scheme: 'github', secret },
        action: 'wake',
        wakeMode: 'next-heartbeat',
        textTemplate: 'push {{after}}',
      },
      {
        match: { path: 'stripe' },
        signature: { scheme: 'stripe', secret: STRIPE },
        action: 'wake',
        wakeMode: 'next-heartbeat',
        textTemplate: 'stripe {{type}} {{id}}',
      },
    ],
  },
  inspector: { port: 0 },
});

interface Setup {
  config: string;
  state: string;
  url: string;
  cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /** The text of every main-session event the hooks made. */
  events(): Promise<string[]>;
}

async function setup(t: TestContext): Promise<Setup> {
  const { config, state, write } = await configFile(t, hooks(WRONG), 'inspector-replay-');
  const server = await serveState(t, { config, state });
  const cli = async (...args: string[]) => {
    const { io, out } = captureIo({ HOOKS_INGRESS_CONFIG: config });
    const code = await main([...args, '--state-dir', state], io);
    return { code, ...out };
  };
  // Two pushes refused for the wrong secret, and a Stripe delivery signed an hour ago.
  for (const after of ['aaa', 'bbb']) {
    const body = JSON.stringify({ ref: 'refs/heads/main', after });
    const headers = await SIGNERS['github']!({
      secret: RIGHT,
      body,
      nowSeconds: Math.floor(Date.now() / 1000),
      id: `gh-${after}`,
    });
    assert.equal(
      (await post(server.url, '/hooks/github', { headers: { ...headers, 'content-type': 'application/json' }, body }))
        .status,
      401,
    );
  }
  const invoice = JSON.stringify({ id: 'evt_old', type: 'invoice.payment_failed', data: { object: {} } });
  const stale = await SIGNERS['stripe']!({
    secret: STRIPE,
    body: invoice,
    nowSeconds: Math.floor(Date.now() / 1000) - 3600,
    id: 'evt_old',
  });
  assert.equal(
    (await post(server.url, '/hooks/stripe', {
      headers: { ...stale, 'content-type': 'application/json' },
      body: invoice,
    })).status,
    401,
  );
  // The secret fixed, and push bbb replayed from the command line already.
  await write(hooks(RIGHT));
  assert.equal((await cli('reload')).code, 0);
  // The ledger writes in the background: the entry is listed once it is on disk.
  const bbb = await until('push bbb in the ledger', async () => {
    const listed = (await cli('requests', '--json')).stdout.split('\n').filter((line) => line !== '').map((line) =>
      JSON.parse(line) as { id: string; headers: Record<string, string> }
    );
    return listed.find((e) => e.headers['x-github-delivery'] === 'gh-bbb') ?? null;
  });
  const replayed = await cli('requests', 'replay', bbb.id, '--yes');
  assert.equal(replayed.code, 0, replayed.stderr);
  const events = async () =>
    (await cli('events', '--json')).stdout.split('\n').filter((l) => l.includes('"source":"hook:')).map((l) =>
      (JSON.parse(l) as { text: string }).text
    );
  await until(
    "the command line's replay of push bbb",
    async () => (await events()).some((e) => e.includes('push bbb')),
  );
  return { config, state, url: server.url, cli, events };
}

async function loginLink(s: Setup): Promise<string> {
  const got = await s.cli('inspect');
  const url = /^(http:\/\/127\.0\.0\.1:\d+\/inspector\/login\?code=\S+)$/m.exec(got.stdout)?.[1];
  assert.ok(url !== undefined, got.stdout);
  return url;
}

// The bulk dialog over the three failed requests, its plan shown.
async function bulkDialog(t: TestContext, s: Setup): Promise<Page> {
  const page = await (await (await launch(t)).newContext()).newPage();
  await page.goto(await loginLink(s));
  await page.locator('#list li', { hasText: 'invoice.payment_failed' }).waitFor();
  // Every failure, push bbb (resolved by its replay) too.
  await page.locator('#f-status').selectOption('failed-all');
  await page.locator('#bulk').click();
  await page.locator('#confirm-title', { hasText: 'Replay 3 failed requests?' }).waitFor();
  await page.locator('#confirm-yes:not([disabled])').waitFor();
  return page;
}

const times = (events: string[], text: string) => events.filter((e) => e.includes(text)).length;

test(
  'bulk replay: ticking "replay anyway" after the pass forces only what was offered, and what just ran does not run again',
  { skip: SKIP },
  async (t) => {
    const s = await setup(t);
    const page = await bulkDialog(t, s);
    await page.locator('#confirm-yes').click();
    await until('push aaa replayed', async () => times(await s.events(), 'push aaa') === 1);
    // After the pass, whatever the dialog offers to force is ticked, as a person wanting bbb again would.
    const boxes = page.locator('#confirm input[type="checkbox"]:visible');
    await boxes.first().waitFor();
    for (const box of await boxes.all()) await box.check();
    await page.locator('#confirm-yes').click();
    await until('push bbb replayed again', async () => times(await s.events(), 'push bbb') === 2);
    const after = await s.events();
    assert.equal(times(after, 'push aaa'), 1, 'push aaa, replayed by the pass, ran again when the box was ticked');
  },
);

test('bulk replay: the plan says how many run and why the others wait, and each waiting request needs its own choice', {
  skip: SKIP,
}, async (t) => {
  const s = await setup(t);
  const page = await bulkDialog(t, s);
  const plan = await page.locator('#confirm').innerText();
  assert.match(plan, /Will run\s+1\b/);
  assert.match(plan, /Will skip\s+1\s+already replayed/);
  assert.match(plan, /Will skip\s+1\s+its signed timestamp was stale/);
  assert.match(plan, /push aaa/, 'the table says what the request would become');
  assert.doesNotMatch(plan, /--[a-z]/, 'no command-line option in the page');
  assert.equal(await page.locator('#confirm details[open] details, #confirm .json').count(), 0, 'no JSON tree');
  assert.equal(await page.locator('#confirm-yes').innerText(), 'Replay 1');
  await page.locator('#confirm-yes').click();
  await page.locator('#confirm-summary', { hasText: 'Done' }).waitFor();
  const done = await page.locator('#confirm').innerText();
  assert.match(done, /Ran\s+1\s+1 accepted/);
  assert.match(done, /Skipped\s+1\s+already replayed/);
  // Only push bbb's own box: the stale Stripe delivery is not run with it.
  await page.locator('#confirm .offers li', { hasText: 'push POST /hooks/github' }).getByLabel('Replay anyway').check();
  assert.equal(await page.locator('#confirm-yes').innerText(), 'Replay 1');
  await page.locator('#confirm-yes').click();
  await until('push bbb replayed again', async () => times(await s.events(), 'push bbb') === 2);
  await page.locator('#confirm-summary', { hasText: 'Done' }).waitFor();
  const events = await s.events();
  assert.equal(times(events, 'push aaa'), 1, 'push aaa ran once');
  assert.equal(times(events, 'evt_old'), 0, 'the stale delivery ran unasked');
  assert.match(await page.locator('#confirm').innerText(), /Skipped\s+1\s+its signed timestamp was stale/);
});

test(
  'a resolved request says so: "resolved by replay X (200)" and its replays, Replay again only behind its own box, and Mark resolved after a question',
  { skip: SKIP },
  async (t) => {
    const s = await setup(t);
    const page = await (await (await launch(t)).newContext()).newPage();
    await page.goto(await loginLink(s));
    const bbb = page.locator('#list li', { hasText: 'gh-bbb' }).filter({ hasText: '401' });
    await bbb.waitFor();
    // Push bbb, replayed from the command line with success: its row and detail say by which replay.
    await bbb.locator('.o-resolved', { hasText: /^resolved by replay \S+ \(200\)$/ }).waitFor({ timeout: 15_000 });
    await bbb.locator('button').click();
    await page.locator('#detail h2', { hasText: 'Replays' }).waitFor();
    assert.match(
      await page.locator('#detail .history').innerText(),
      /Resolved by replay \S+ \(200\)\.[\s\S]*200 accepted/,
    );
    assert.equal(await page.locator('#resolve').count(), 0, 'nothing to mark resolved');
    await page.locator('#replay', { hasText: 'Replay again' }).click();
    await page.locator('#confirm .offers li').waitFor();
    assert.match(
      await page.locator('#confirm').innerText(),
      /Will run\s+0[\s\S]*This request is replayed only if you choose to/,
    );
    assert.equal(await page.locator('#confirm-yes').isDisabled(), true, 'nothing runs unless its box is ticked');
    await page.locator('#confirm-no').click();

    // Push aaa, never fixed here: marked resolved by hand, after a question that Cancel leaves unanswered.
    const aaa = page.locator('#list li', { hasText: 'gh-aaa' });
    await aaa.locator('button').click();
    await page.locator('#resolve').click();
    await page.locator('#confirm-title', { hasText: /^Mark request \S+ resolved\?$/ }).waitFor();
    await page.locator('#confirm-no').click();
    const aaaId = String(await aaa.locator('button').getAttribute('data-id'));
    assert.ok((await s.cli('requests', '--failed')).stdout.includes(aaaId), 'Cancel marked nothing');
    await page.locator('#resolve').click();
    await page.locator('#confirm-yes', { hasText: 'Mark resolved' }).click();
    await page.locator('#confirm-summary', { hasText: 'Marked resolved.' }).waitFor();
    await page.locator('#confirm-no', { hasText: 'Close' }).click();
    await aaa.locator('.o-resolved', { hasText: 'resolved by hand' }).waitFor({ timeout: 15_000 });
    // The failures not resolved leave it out; with the resolved ones, it is there.
    await page.locator('#f-status').selectOption('failed');
    await page.locator('#list li', { hasText: 'gh-aaa' }).waitFor({ state: 'detached' });
    assert.ok(
      await page.locator('#list li', { hasText: 'invoice.payment_failed' }).isVisible(),
      'the stale delivery, not resolved, is still listed',
    );
    await page.locator('#f-status').selectOption('failed-all');
    await page.locator('#list li', { hasText: 'gh-aaa' }).waitFor();
  },
);
