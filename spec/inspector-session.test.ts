// The inspector's session in a real headless Chromium, against the inspector's listener in this
// process: what another program on this host gets from the owner's browser (the cookie, sent to
// every port) and what it can do with it, a cookie of the same name planted beside the owner's,
// links to an entry, a new tab, and a fragment that does not decode.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { test, type TestContext } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { createInspector, type InspectorSource } from '../lib/inspector/listener.ts';
import { listen } from '../lib/edge/listen.ts';
import { silentLogger } from './_app.ts';
import { browserSkip, launch } from './_browser.ts';
import { defer } from './_cleanup.ts';
import { send } from './_http.ts';

const SKIP = browserSkip();

interface Seen {
  path: string;
  origin: string | undefined;
  status: number;
}

interface Inspector {
  origin: string;
  entries: Record<string, unknown>[];
  replays: unknown[];
  /** Every request the listener answered. */
  seen: Seen[];
  login(): string;
}

// The inspector's listener over a list the test adds to; each answer is recorded.
async function inspector(t: TestContext): Promise<Inspector> {
  const entries: Record<string, unknown>[] = [{
    id: 'e1',
    status: 401,
    method: 'POST',
    path: '/hooks/first',
    time: new Date().toISOString(),
  }];
  const replays: unknown[] = [];
  const source: InspectorSource = {
    list: async () => ({ entries: [...entries].reverse() }),
    show: async (id) => entries.find((e) => e.id === id) ?? null,
    replay: async (ids) => {
      replays.push(ids);
      return { results: [] };
    },
  };
  const app = createInspector({ source, log: silentLogger, idleMs: 60_000, maxAgeMs: 3_600_000 });
  const seen: Seen[] = [];
  const running = await listen((req, res) => {
    res.on('finish', () => seen.push({ path: req.url ?? '', origin: req.headers.origin, status: res.statusCode }));
    app(req, res);
  }, { host: '127.0.0.1', port: 0 });
  defer(t, () => running.close(100));
  app.bound(Number(new URL(running.url).port));
  return { origin: running.url, entries, replays, seen, login: () => `${running.url}${app.login().path}` };
}

// Another program on 127.0.0.1, on a port of its own: it serves `page` and records the Cookie
// header of every request that reaches it.
async function neighbour(
  t: TestContext,
  page: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ origin: string; cookies: string[] }> {
  const cookies: string[] = [];
  const server = createServer((req, res) => {
    if (req.headers.cookie !== undefined) cookies.push(req.headers.cookie);
    page(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  defer(t, () => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return { origin: `http://127.0.0.1:${address.port}`, cookies };
}

function html(res: ServerResponse, script: string, headers: Record<string, string> = {}): void {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers });
  res.end(`<!doctype html><title>neighbour</title><script>${script}</script>`);
}

async function loggedIn(t: TestContext, s: Inspector): Promise<{ context: BrowserContext; page: Page }> {
  const browser = await launch(t);
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(s.login());
  await page.locator('#list li', { hasText: '/hooks/first' }).waitFor();
  return { context, page };
}

// Adds an entry and waits until the page's polling shows it.
async function polled(s: Inspector, page: Page, path: string): Promise<void> {
  s.entries.push({ id: `e${s.entries.length + 1}`, status: 200, method: 'POST', path, time: new Date().toISOString() });
  await page.locator('#list li', { hasText: path }).waitFor({ timeout: 15_000 });
}

test("the cookie alone, as another program on 127.0.0.1 gets it from the owner's browser, reads and replays nothing", {
  skip: SKIP,
}, async (t) => {
  const s = await inspector(t);
  const { context } = await loggedIn(t, s);
  const target = `${s.origin}/inspector/`;
  const other = await neighbour(t, (req, res) => {
    if (req.url !== '/') return void res.writeHead(204).end();
    // Its page asks its own server for a path under /inspector/ (the browser adds the inspector's
    // cookie: cookies ignore ports), then asks the inspector's API with the browser's credentials.
    html(
      res,
      `(async () => {
      await fetch('/inspector/grab', { credentials: 'include' });
      for (const path of ['api/session', 'api/requests', 'api/requests/e1']) await fetch(${
        JSON.stringify(target)
      } + path, { credentials: 'include' }).catch(() => null);
      await fetch(${
        JSON.stringify(target)
      } + 'api/replay', { method: 'POST', mode: 'no-cors', credentials: 'include', body: '{"ids":["e1"]}' }).catch(() => null);
      window.__done = true;
    })();`,
    );
  });
  const visit = await context.newPage();
  await visit.goto(`${other.origin}/`);
  await visit.waitForFunction('window.__done === true');

  // The browser's own requests from the other origin: every one refused.
  const fromThere = s.seen.filter((r) => r.origin === other.origin);
  assert.deepEqual(fromThere.map((r) => [r.path, r.status]), [
    ['/inspector/api/session', 401],
    ['/inspector/api/requests', 401],
    ['/inspector/api/requests/e1', 401],
    ['/inspector/api/replay', 401],
  ]);

  // The neighbour did receive the cookie; presented alone, over plain HTTP, it opens nothing.
  const cookie = other.cookies.find((c) => c.includes('hooks_inspector'));
  assert.ok(
    cookie !== undefined,
    `the browser sent the inspector's cookie to the other port: ${other.cookies.join(' | ')}`,
  );
  for (const path of ['api/session', 'api/requests', 'api/requests/e1']) {
    const reply = await send(s.origin, `/inspector/${path}`, { headers: { cookie } });
    assert.equal(reply.status, 401, `${path}: ${reply.text}`);
  }
  const replay = await send(s.origin, '/inspector/api/replay', {
    method: 'POST',
    headers: { cookie, origin: s.origin, 'x-csrf-token': 'x' },
    body: { ids: ['e1'] },
  });
  assert.equal(replay.status, 401, replay.text);
  assert.deepEqual(s.replays, []);
});

test(
  'a cookie of the same name planted by another program on 127.0.0.1 does not log the owner out',
  { skip: SKIP },
  async (t) => {
    const s = await inspector(t);
    const { context, page } = await loggedIn(t, s);
    const name = (await context.cookies()).find((c) => c.name.startsWith('hooks_inspector'))?.name;
    assert.ok(name !== undefined);
    // Planted from its page's script and from its server's answer, on longer paths, so a browser
    // sends them before the owner's (and, on the owner's own path, by script: Chromium keeps the HttpOnly one).
    const other = await neighbour(t, (_req, res) =>
      html(
        res,
        `for (const path of ['/inspector/', '/inspector/api', '/inspector/api/requests']) document.cookie = ${
          JSON.stringify(name)
        } + '=planted; Path=' + path;
       window.__done = true;`,
        { 'set-cookie': `${name}=planted-too; Path=/inspector/api/; HttpOnly` },
      ));
    const visit = await context.newPage();
    await visit.goto(`${other.origin}/`);
    await visit.waitForFunction('window.__done === true');
    const planted = (await context.cookies()).filter((c) => c.name === name);
    const jar = JSON.stringify(planted.map((c) => [c.path, c.value.slice(0, 12)]));
    t.diagnostic(`the browser's cookies of that name: ${jar}`);
    assert.ok(planted.length >= 3, `planted beside the owner's: ${jar}`);

    await polled(s, page, '/hooks/after-planting');
    await page.locator('#list li', { hasText: '/hooks/first' }).locator('button').click();
    await page.locator('#detail .reqline', { hasText: '/hooks/first' }).waitFor();
  },
);

test(
  'a link to an entry opens it in a logged-in tab; a new tab has no session until a new login',
  { skip: SKIP },
  async (t) => {
    const s = await inspector(t);
    const { context, page } = await loggedIn(t, s);
    await polled(s, page, '/hooks/second');
    await page.goto(`${s.origin}/inspector/#e2`);
    await page.locator('#detail .reqline', { hasText: '/hooks/second' }).waitFor();
    await page.reload();
    await page.locator('#detail .reqline', { hasText: '/hooks/second' }).waitFor();

    const fresh = await context.newPage();
    await fresh.goto(`${s.origin}/inspector/#e2`);
    await fresh.locator('body', { hasText: 'no inspector session in this tab' }).waitFor();
    await fresh.goto(s.login());
    await fresh.locator('#list li', { hasText: '/hooks/second' }).waitFor();
    // Both tabs stay logged in.
    await polled(s, page, '/hooks/third');
    await fresh.locator('#list li', { hasText: '/hooks/third' }).waitFor({ timeout: 15_000 });
  },
);

test('a fragment that does not decode says so and the list keeps updating', { skip: SKIP }, async (t) => {
  const s = await inspector(t);
  const { page } = await loggedIn(t, s);
  await page.goto(`${s.origin}/inspector/#%E0%A4%A`);
  await page.reload();
  // Once the first list is shown, only polling can show a new entry.
  await page.locator('#live', { hasText: 'shown' }).waitFor();
  await polled(s, page, '/hooks/still-polling');
  await page.locator('#detail', { hasText: 'names no entry' }).waitFor();
});
