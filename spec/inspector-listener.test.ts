import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import {
  createInspector,
  INSPECTOR_PREFIX,
  type InspectorSource,
  KEY_HEADER,
  loadPage,
} from '../lib/inspector/listener.ts';
import { listen } from '../lib/edge/listen.ts';
import { captureLog } from './_app.ts';
import { defer } from './_cleanup.ts';
import { assertError, type Reply, send, type SendOptions } from './_http.ts';

// The inspector's HTTP rules, without a browser: Host, login codes, the cookie and the tab's key,
// Origin, the sessions' lifetimes.

interface Started {
  url: string;
  port: number;
  login: () => string;
  replays: unknown[];
  lines: Record<string, unknown>[];
  clock: { now: number };
}

async function start(
  t: TestContext,
  extra: { extraHosts?: string[]; maxAgeMs?: number; runs?: boolean; hooks?: InspectorSource['hooks'] } = {},
): Promise<Started> {
  const replays: unknown[] = [];
  const { log, lines } = captureLog();
  const clock = { now: 1_000_000 };
  const source: InspectorSource = {
    list: async (filter) => ({ entries: [{ id: 'e1', status: 401, path: '/hooks/x', filter }] }),
    show: async (id) => (id === 'e1' ? { id: 'e1', status: 401 } : null),
    replay: async (ids, options) => {
      replays.push({ ids, options });
      return { replayed: ids.length };
    },
    resolve: async (ids) => {
      replays.push({ resolve: ids });
      return { resolved: ids.length };
    },
    ...(extra.runs === false ? {} : {
      retry: async (ids: readonly string[], options: { check: boolean }) => {
        replays.push({ retry: ids, options });
        return { retried: ids.length };
      },
      redeliver: async (ids: readonly string[]) => {
        replays.push({ redeliver: ids });
        return { redelivered: ids.length };
      },
    }),
    ...(extra.hooks === undefined ? {} : { hooks: extra.hooks }),
  };
  const { runs: _runs, hooks: _hooks, ...options } = extra;
  const inspector = createInspector({
    source,
    log,
    idleMs: 60_000,
    maxAgeMs: 3_600_000,
    now: () => clock.now,
    ...options,
  });
  const running = await listen(inspector, { host: '127.0.0.1', port: 0 });
  defer(t, () => running.close(100));
  const port = Number(new URL(running.url).port);
  inspector.bound(port);
  return { url: running.url, port, login: () => inspector.login().path, replays, lines, clock };
}

interface Login {
  /** The `Cookie` header to send. */
  cookie: string;
  /** The tab's key, from the redirect's fragment. */
  key: string;
  /** Both, as headers. */
  headers: Record<string, string>;
}

// Logs in with a fresh code (sending `cookie`, when given, as a browser that has one would).
async function loggedIn(s: Started, cookie?: string): Promise<Login> {
  const reply = await send(s.url, s.login(), cookie === undefined ? {} : { headers: { cookie } });
  assert.equal(reply.status, 303, reply.text);
  const set = String(reply.headers['set-cookie']?.[0]).split(';')[0]!;
  const key = /^\/inspector\/#login=([\w-]{43})$/.exec(String(reply.headers.location))?.[1];
  assert.ok(key !== undefined, String(reply.headers.location));
  const headers = { cookie: set, [KEY_HEADER]: key };
  const session = await send(s.url, `${INSPECTOR_PREFIX}/api/session`, { headers });
  assert.equal(session.status, 200, session.text);
  return { cookie: set, key, headers };
}

function postAs(
  s: Started,
  path: string,
  headers: Record<string, string>,
  body: object = { ids: ['e1'] },
): Promise<Reply> {
  const options: SendOptions = { method: 'POST', headers, body };
  return send(s.url, `${INSPECTOR_PREFIX}${path}`, options);
}

test('a login link opens a session once: the cookie is HttpOnly, SameSite=Strict, named after the port and scoped to the inspector; the redirect drops the code and hands the key over in its fragment', async (t) => {
  const s = await start(t);
  const path = s.login();
  assert.match(path, /^\/inspector\/login\?code=[\w-]{43}$/);
  const first = await send(s.url, path);
  assert.equal(first.status, 303);
  assert.match(String(first.headers.location), /^\/inspector\/#login=[\w-]{43}$/);
  const cookie = String(first.headers['set-cookie']?.[0]);
  assert.match(
    cookie,
    new RegExp(`^hooks_inspector_${s.port}=[\\w-]{43}; Path=/inspector/; HttpOnly; SameSite=Strict$`),
  );
  assert.equal(first.text, '');
  assertError(await send(s.url, path), 401, /unknown, used or expired/);
  const page = await send(s.url, '/inspector/', { headers: { cookie: cookie.split(';')[0]! } });
  assert.equal(page.status, 200);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  assert.match(page.text, /<script type="module" src="app.js"><\/script>/);
});

test('the cookie alone opens the page files but no API path, and no answer to it carries the key', async (t) => {
  const s = await start(t);
  const { cookie, key } = await loggedIn(s);
  for (const path of ['/inspector/', '/inspector/app.js', '/inspector/app.css']) {
    const reply = await send(s.url, path, { headers: { cookie } });
    assert.equal(reply.status, 200, path);
    assert.equal(reply.text.includes(key), false);
  }
  const origin = `http://127.0.0.1:${s.port}`;
  for (
    const [method, path] of [['GET', '/api/session'], ['GET', '/api/requests'], ['GET', '/api/hooks'], [
      'GET',
      '/api/requests/e1',
    ], [
      'POST',
      '/api/replay',
    ], ['POST', '/api/logout']] as const
  ) {
    for (
      const headers of [{ cookie }, { cookie, [KEY_HEADER]: '' }, { cookie, [KEY_HEADER]: `${key}x` }, {
        [KEY_HEADER]: key,
      }, { cookie: 'hooks_inspector=x', [KEY_HEADER]: key }]
    ) {
      const reply = await send(s.url, `${INSPECTOR_PREFIX}${path}`, {
        method,
        headers: { ...headers, origin },
        ...(method === 'POST' ? { body: { ids: ['e1'] } } : {}),
      });
      assertError(reply, 401, /no inspector session/);
      assert.equal(reply.text.includes(key), false);
    }
  }
  assert.deepEqual(s.replays, []);
  // And the session still works for its tab.
  assert.equal((await send(s.url, '/inspector/api/requests', { headers: { cookie, [KEY_HEADER]: key } })).status, 200);
});

test("GET /api/hooks answers each hook's work from the source, and an empty list where the source has none", async (t) => {
  const hooks = [{ hook: 'ci', running: 1, queued: 2, concurrency: 1, maxQueued: null }];
  const s = await start(t, { hooks: () => hooks });
  const { headers } = await loggedIn(s);
  const reply = await send(s.url, '/inspector/api/hooks', { headers });
  assert.equal(reply.status, 200, reply.text);
  assert.deepEqual(reply.body, { hooks });
  const bare = await start(t);
  const login = await loggedIn(bare);
  assert.deepEqual((await send(bare.url, '/inspector/api/hooks', { headers: login.headers })).body, { hooks: [] });
  assert.equal((await send(s.url, '/inspector/hooks.js', { headers: { cookie: headers.cookie! } })).status, 200);
});

test("a same-named cookie planted beside the owner's, before or after it, does not log the owner out", async (t) => {
  const s = await start(t);
  const { cookie, key } = await loggedIn(s);
  const name = cookie.split('=')[0]!;
  for (const header of [`${name}=planted; ${cookie}`, `${cookie}; ${name}=planted`, `${name}=; ${name}; ${cookie}`]) {
    assert.equal(
      (await send(s.url, '/inspector/api/requests', { headers: { cookie: header, [KEY_HEADER]: key } })).status,
      200,
      header,
    );
    assert.equal((await send(s.url, '/inspector/app.js', { headers: { cookie: header } })).status, 200, header);
  }
  // A second login from the same browser keeps its cookie, so the first tab stays logged in.
  const second = await loggedIn(s, `${name}=planted; ${cookie}`);
  assert.equal(second.cookie, cookie);
  assert.notEqual(second.key, key);
  for (const k of [key, second.key]) {
    assert.equal((await send(s.url, '/inspector/api/requests', { headers: { cookie, [KEY_HEADER]: k } })).status, 200);
  }
  // Another browser's cookie does not open this tab's session.
  const other = await loggedIn(s);
  assert.notEqual(other.cookie, cookie);
  assertError(
    await send(s.url, '/inspector/api/requests', { headers: { cookie: other.cookie, [KEY_HEADER]: key } }),
    401,
  );
});

test('a login code expires after a minute, a session after its idle time, and any session after its lifetime, however busy', async (t) => {
  const s = await start(t);
  const stale = s.login();
  s.clock.now += 60_001;
  assertError(await send(s.url, stale), 401);
  const { headers } = await loggedIn(s);
  s.clock.now += 59_000;
  assert.equal((await send(s.url, '/inspector/api/requests', { headers })).status, 200);
  s.clock.now += 59_000;
  assert.equal(
    (await send(s.url, '/inspector/api/requests', { headers })).status,
    200,
    'each use keeps the session alive',
  );
  s.clock.now += 60_001;
  assertError(await send(s.url, '/inspector/api/requests', { headers }), 401, /no inspector session/);

  const busy = await start(t, { maxAgeMs: 3 * 60_000 });
  const login = await loggedIn(busy);
  const started = busy.clock.now;
  const ends = await send(busy.url, '/inspector/api/session', { headers: login.headers });
  assert.equal(ends.body['endsAt'], new Date(started + 3 * 60_000).toISOString());
  // Polled every 30 s (well inside the idle time) until the lifetime is up.
  while (busy.clock.now + 30_000 < started + 3 * 60_000) {
    busy.clock.now += 30_000;
    assert.equal((await send(busy.url, '/inspector/api/requests', { headers: login.headers })).status, 200);
  }
  busy.clock.now = started + 3 * 60_000;
  assertError(await send(busy.url, '/inspector/api/requests', { headers: login.headers }), 401, /no inspector session/);
  assertError(await send(busy.url, '/inspector/', { headers: { cookie: login.cookie } }), 401);
});

test('without a session every inspector path answers 401 and shows nothing', async (t) => {
  const s = await start(t);
  for (
    const path of [
      '/inspector',
      '/inspector/',
      '/inspector/app.js',
      '/inspector/api/requests',
      '/inspector/api/requests/e1',
      '/inspector/api/session',
    ]
  ) {
    const reply = await send(s.url, path);
    assertError(reply, 401);
    assert.doesNotMatch(reply.text, /e1|endsAt/);
  }
  assertError(
    await send(s.url, '/inspector/api/requests', {
      headers: { cookie: `hooks_inspector_${s.port}=forged`, [KEY_HEADER]: 'forged' },
    }),
    401,
  );
});

test('Host must name this listener by a loopback name and its port: anything else is 421 (DNS rebinding)', async (t) => {
  const s = await start(t);
  const path = s.login();
  for (
    const host of [
      'evil.example',
      `evil.example:${s.port}`,
      `127.0.0.1:${s.port + 1}`,
      '127.0.0.1',
      `10.0.0.1:${s.port}`,
      `127.0.0.2:${s.port}`,
    ]
  ) {
    assertError(await send(s.url, path, { headers: { host } }), 421, /Host/);
  }
  // The refused requests did not use the code up.
  assert.equal((await send(s.url, path, { headers: { host: `localhost:${s.port}` } })).status, 303);
  const again = await start(t, { extraHosts: ['inspector.lan', '127.0.0.2', '::1'] });
  for (const host of ['inspector.lan', '127.0.0.2', '[::1]']) {
    assert.equal(
      (await send(again.url, again.login(), { headers: { host: `${host}:${again.port}` } })).status,
      303,
      host,
    );
  }
});

test("a state change needs this origin and the tab's key; a GET never changes anything", async (t) => {
  const s = await start(t);
  const { cookie, key } = await loggedIn(s);
  const origin = `http://127.0.0.1:${s.port}`;
  assertError(await postAs(s, '/api/replay', { cookie, [KEY_HEADER]: key }), 403, /Origin/);
  assertError(
    await postAs(s, '/api/replay', { cookie, [KEY_HEADER]: key, origin: 'http://evil.example' }),
    403,
    /Origin/,
  );
  assertError(
    await postAs(s, '/api/replay', { cookie, [KEY_HEADER]: key, origin: `http://127.0.0.1:${s.port + 1}` }),
    403,
    /Origin/,
  );
  assertError(
    await postAs(s, '/api/replay', { cookie, [KEY_HEADER]: key, origin: `http://localhost:${s.port}` }),
    403,
    /Origin/,
  );
  assertError(await postAs(s, '/api/replay', { cookie, origin }), 401);
  assertError(await postAs(s, '/api/replay', { cookie, origin, [KEY_HEADER]: `${key}x` }), 401);
  assertError(await postAs(s, '/api/replay', { origin, [KEY_HEADER]: key }), 401);
  assert.equal(
    (await send(s.url, '/inspector/api/replay?ids=e1', { headers: { cookie, [KEY_HEADER]: key } })).status,
    404,
  );
  assert.deepEqual(s.replays, []);
  const headers = { cookie, origin, [KEY_HEADER]: key };
  const done = await postAs(s, '/api/replay', headers, { ids: ['e1'], dryRun: true });
  assert.equal(done.status, 200, done.text);
  assert.deepEqual(s.replays, [{ ids: ['e1'], options: { dryRun: true, force: false } }]);
  assertError(await postAs(s, '/api/replay', headers, { ids: [] }), 400, /ids/);
  assertError(await postAs(s, '/api/replay', headers, { ids: [42] }), 400, /ids/);
  const raw = await send(s.url, `${INSPECTOR_PREFIX}/api/replay`, { method: 'POST', headers, body: 'not json' });
  assertError(raw, 400, /body: must be valid JSON/);
  assertError(await postAs(s, '/api/replay', headers, { ids: ['x'.repeat(70_000)] }), 413);
});

test("/api/resolve is a state change like /api/replay (this page's Origin, the tab's key, 1 to 1000 ids); /api/replay forces every id or only those listed", async (t) => {
  const s = await start(t);
  const { cookie, key } = await loggedIn(s);
  const origin = `http://127.0.0.1:${s.port}`;
  assertError(await postAs(s, '/api/resolve', { cookie, [KEY_HEADER]: key }, { ids: ['e1'] }), 403, /Origin/);
  assertError(await postAs(s, '/api/resolve', { cookie, origin }, { ids: ['e1'] }), 401);
  const headers = { cookie, origin, [KEY_HEADER]: key };
  assertError(await postAs(s, '/api/resolve', headers, { ids: [] }), 400, /ids must be a list/);
  const resolved = await postAs(s, '/api/resolve', headers, { ids: ['e1', 'e2'] });
  assert.equal(resolved.status, 200, resolved.text);
  assert.deepEqual(JSON.parse(resolved.text), { resolved: 2 });
  assert.equal((await postAs(s, '/api/replay', headers, { ids: ['e1', 'e2'], force: ['e2'] })).status, 200);
  assert.equal((await postAs(s, '/api/replay', headers, { ids: ['e1'], force: true })).status, 200);
  assertError(await postAs(s, '/api/replay', headers, { ids: ['e1'], force: [7] }), 400, /force must be a list/);
  assert.deepEqual(s.replays, [{ resolve: ['e1', 'e2'] }, {
    ids: ['e1', 'e2'],
    options: { dryRun: false, force: ['e2'] },
  }, { ids: ['e1'], options: { dryRun: false, force: true } }]);
});

test("/api/retry and /api/redeliver are state changes like /api/replay (this page's Origin, the tab's key, 1 to 1000 ids), answered 404 where runs cannot be", async (t) => {
  const s = await start(t);
  const { cookie, key } = await loggedIn(s);
  const origin = `http://127.0.0.1:${s.port}`;
  for (const path of ['/api/retry', '/api/redeliver']) {
    assertError(await postAs(s, path, { cookie, [KEY_HEADER]: key }, { ids: ['r1'] }), 403, /Origin/);
    assertError(await postAs(s, path, { cookie, origin }, { ids: ['r1'] }), 401);
    assertError(await postAs(s, path, { cookie, origin, [KEY_HEADER]: key }, { ids: [] }), 400, /ids must be a list/);
  }
  const headers = { cookie, origin, [KEY_HEADER]: key };
  assert.deepEqual(JSON.parse((await postAs(s, '/api/retry', headers, { ids: ['r1'], check: true })).text), {
    retried: 1,
  });
  assert.equal((await postAs(s, '/api/retry', headers, { ids: ['r1', 'r2'] })).status, 200);
  assert.equal((await postAs(s, '/api/redeliver', headers, { ids: ['r3'] })).status, 200);
  assert.deepEqual(s.replays, [
    { retry: ['r1'], options: { check: true } },
    { retry: ['r1', 'r2'], options: { check: false } },
    { redeliver: ['r3'] },
  ]);

  const without = await start(t, { runs: false });
  const other = await loggedIn(without);
  const theirs = { cookie: other.cookie, origin: `http://127.0.0.1:${without.port}`, [KEY_HEADER]: other.key };
  assertError(await postAs(without, '/api/retry', theirs, { ids: ['r1'] }), 404);
  assertError(await postAs(without, '/api/redeliver', theirs, { ids: ['r1'] }), 404);
});

test("logout ends the tab's session", async (t) => {
  const s = await start(t);
  const { headers } = await loggedIn(s);
  const out = await postAs(s, '/api/logout', { ...headers, origin: `http://127.0.0.1:${s.port}` }, {});
  assert.equal(out.status, 200);
  assertError(await send(s.url, '/inspector/api/session', { headers }), 401);
  assertError(await send(s.url, '/inspector/', { headers: { cookie: headers.cookie! } }), 401);
});

test('every answer carries the strict CSP, nosniff and no framing; the inspector answers no hook path', async (t) => {
  const s = await start(t);
  const { headers } = await loggedIn(s);
  for (
    const [path, status] of [
      ['/inspector/', 200],
      ['/inspector/app.js', 200],
      ['/inspector/api/requests/none', 404],
      ['/inspector/api/requests/%E0%A4%A', 404],
      ['/hooks/wake', 404],
      ['/', 404],
      ['/healthz', 404],
    ] as const
  ) {
    const reply = await send(s.url, path, { headers });
    assert.equal(reply.status, status, path);
    const csp = String(reply.headers['content-security-policy']);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self';/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe/);
    assert.equal(reply.headers['x-content-type-options'], 'nosniff');
    assert.equal(reply.headers['cache-control'], 'no-store');
  }
  const hook = await send(s.url, '/hooks/wake', { method: 'POST', body: { text: 'x' } });
  assertError(hook, 404);
});

test('the list passes the page filters to the source, bounded; more=count asks for the count past the limit; since, the version the page has', async (t) => {
  const s = await start(t);
  const { headers } = await loggedIn(s);
  const reply = await send(
    s.url,
    '/inspector/api/requests?hook=github&status=4xx&code=ERR_UNAUTHORIZED&text=%2Fgit&limit=999999&other=1',
    { headers },
  );
  assert.deepEqual((reply.body['entries'] as { filter: unknown }[])[0]?.filter, {
    limit: 1000,
    hook: 'github',
    status: '4xx',
    code: 'ERR_UNAUTHORIZED',
    text: '/git',
  });
  const counted = await send(s.url, '/inspector/api/requests?status=failed&limit=1000&more=count', { headers });
  assert.deepEqual((counted.body['entries'] as { filter: unknown }[])[0]?.filter, {
    limit: 1000,
    status: 'failed',
    more: true,
  });
  const since = await send(s.url, `/inspector/api/requests?since=${'v'.repeat(300)}`, { headers });
  assert.deepEqual((since.body['entries'] as { filter: unknown }[])[0]?.filter, { limit: 200, since: 'v'.repeat(200) });
});

test('a login code never reaches the log, even when the source fails', async (t) => {
  const s = await start(t);
  const path = s.login();
  await send(s.url, path);
  assert.equal(JSON.stringify(s.lines).includes(path.split('=')[1]!), false);
});

test('the page is small, ours, and builds what it shows from text nodes only', () => {
  const page = loadPage();
  const size = Object.values(page).reduce((sum, text) => sum + Buffer.byteLength(text), 0);
  assert.ok(size < 80 * 1024, `the page is ${size} bytes`);
  // The page speaks to a person with a browser: no command-line option in anything it says.
  for (const [name, text] of Object.entries(page)) {
    if (!name.endsWith('.css')) assert.doesNotMatch(text, /(^|[\s"'`(])--[a-z]/m, `a command-line option in ${name}`);
  }
  // Every module the page imports is one the listener serves.
  for (const text of Object.values(page)) {
    for (const [, file] of text.matchAll(/from '\.\/([\w-]+\.js)'/g)) assert.ok(file! in page, file);
  }
  const all = Object.values(page).join('\n');
  assert.doesNotMatch(all, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/);
  assert.doesNotMatch(all, /https?:\/\/(?!www\.w3\.org)/, 'nothing from another origin');
  for (const html of ['index.html', 'signin.html']) {
    assert.doesNotMatch(page[html]!, /<script>|<style>|\sstyle=|\son\w+=/, `no inline script or style in ${html}`);
  }
  assert.doesNotMatch(page['signin.html']!, /<script/, 'the sign-in page runs nothing');
});
