import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { createInspector, INSPECTOR_PREFIX, loadPage, type InspectorSource } from '../lib/edge/inspector.ts';
import { listen } from '../lib/edge/listen.ts';
import { captureLog } from './_app.ts';
import { defer } from './_cleanup.ts';
import { assertError, send, type Reply, type SendOptions } from './_http.ts';

// The inspector's HTTP rules, without a browser: Host, login codes, the cookie, Origin and CSRF.

interface Started {
  url: string;
  port: number;
  login: () => string;
  replays: unknown[];
  lines: Record<string, unknown>[];
  clock: { now: number };
}

async function start(t: TestContext, extra: { extraHosts?: string[] } = {}): Promise<Started> {
  const replays: unknown[] = [];
  const { log, lines } = captureLog();
  const clock = { now: 1_000_000 };
  const source: InspectorSource = {
    list: async (filter) => [{ id: 'e1', status: 401, path: '/hooks/x', filter }],
    show: async (id) => (id === 'e1' ? { id: 'e1', status: 401 } : null),
    replay: async (ids, options) => {
      replays.push({ ids, options });
      return { replayed: ids.length };
    },
  };
  const inspector = createInspector({ source, log, idleMs: 60_000, now: () => clock.now, ...extra });
  const running = await listen(inspector, { host: '127.0.0.1', port: 0 });
  defer(t, () => running.close(100));
  const port = Number(new URL(running.url).port);
  inspector.bound(port);
  return { url: running.url, port, login: () => inspector.login().path, replays, lines, clock };
}

// Logs in with a fresh code; answers the cookie header to send and the session's CSRF token.
async function loggedIn(s: Started): Promise<{ cookie: string; csrf: string }> {
  const reply = await send(s.url, s.login());
  assert.equal(reply.status, 303, reply.text);
  const cookie = String(reply.headers['set-cookie']?.[0]).split(';')[0]!;
  const session = await send(s.url, `${INSPECTOR_PREFIX}/api/session`, { headers: { cookie } });
  assert.equal(session.status, 200, session.text);
  return { cookie, csrf: String(session.body['csrf']) };
}

function postAs(s: Started, path: string, headers: Record<string, string>, body: object = { ids: ['e1'] }): Promise<Reply> {
  const options: SendOptions = { method: 'POST', headers, body };
  return send(s.url, `${INSPECTOR_PREFIX}${path}`, options);
}

test('a login link opens a session once: the cookie is HttpOnly, SameSite=Strict, scoped to the inspector, and the redirect drops the code', async (t) => {
  const s = await start(t);
  const path = s.login();
  assert.match(path, /^\/inspector\/login\?code=[\w-]{43}$/);
  const first = await send(s.url, path);
  assert.equal(first.status, 303);
  assert.equal(first.headers.location, '/inspector/');
  const cookie = String(first.headers['set-cookie']?.[0]);
  assert.match(cookie, /^hooks_inspector=[\w-]{43}; Path=\/inspector\/; HttpOnly; SameSite=Strict$/);
  assertError(await send(s.url, path), 401, /unknown, used or expired/);
  const page = await send(s.url, '/inspector/', { headers: { cookie: cookie.split(';')[0]! } });
  assert.equal(page.status, 200);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  assert.match(page.text, /<script src="app.js" defer><\/script>/);
});

test('a login code expires after a minute, and a session after its idle time', async (t) => {
  const s = await start(t);
  const stale = s.login();
  s.clock.now += 60_001;
  assertError(await send(s.url, stale), 401);
  const { cookie } = await loggedIn(s);
  s.clock.now += 59_000;
  assert.equal((await send(s.url, '/inspector/api/requests', { headers: { cookie } })).status, 200);
  s.clock.now += 59_000;
  assert.equal((await send(s.url, '/inspector/api/requests', { headers: { cookie } })).status, 200, 'each use keeps the session alive');
  s.clock.now += 60_001;
  assertError(await send(s.url, '/inspector/api/requests', { headers: { cookie } }), 401, /no inspector session/);
});

test('without a session every inspector path answers 401 and shows nothing', async (t) => {
  const s = await start(t);
  for (const path of ['/inspector', '/inspector/', '/inspector/app.js', '/inspector/api/requests', '/inspector/api/requests/e1', '/inspector/api/session']) {
    const reply = await send(s.url, path);
    assertError(reply, 401);
    assert.doesNotMatch(reply.text, /e1|csrf/);
  }
  assertError(await send(s.url, '/inspector/api/requests', { headers: { cookie: 'hooks_inspector=forged' } }), 401);
});

test('Host must name this listener by a loopback name and its port: anything else is 421 (DNS rebinding)', async (t) => {
  const s = await start(t);
  const path = s.login();
  for (const host of ['evil.example', `evil.example:${s.port}`, `127.0.0.1:${s.port + 1}`, '127.0.0.1', `10.0.0.1:${s.port}`]) {
    assertError(await send(s.url, path, { headers: { host } }), 421, /Host/);
  }
  // The refused requests did not use the code up.
  assert.equal((await send(s.url, path, { headers: { host: `localhost:${s.port}` } })).status, 303);
  const again = await start(t, { extraHosts: ['inspector.lan'] });
  assert.equal((await send(again.url, again.login(), { headers: { host: `inspector.lan:${again.port}` } })).status, 303);
});

test('a state change needs this origin and the session CSRF token; a GET never changes anything', async (t) => {
  const s = await start(t);
  const { cookie, csrf } = await loggedIn(s);
  const origin = `http://127.0.0.1:${s.port}`;
  assertError(await postAs(s, '/api/replay', { cookie, 'x-csrf-token': csrf }), 403, /Origin/);
  assertError(await postAs(s, '/api/replay', { cookie, 'x-csrf-token': csrf, origin: 'http://evil.example' }), 403, /Origin/);
  assertError(await postAs(s, '/api/replay', { cookie, 'x-csrf-token': csrf, origin: `http://localhost:${s.port}` }), 403, /Origin/);
  assertError(await postAs(s, '/api/replay', { cookie, origin }), 403, /CSRF/);
  assertError(await postAs(s, '/api/replay', { cookie, origin, 'x-csrf-token': `${csrf}x` }), 403, /CSRF/);
  assertError(await postAs(s, '/api/replay', { origin, 'x-csrf-token': csrf }), 401);
  assert.equal((await send(s.url, '/inspector/api/replay?ids=e1', { headers: { cookie } })).status, 404);
  assert.deepEqual(s.replays, []);
  const done = await postAs(s, '/api/replay', { cookie, origin, 'x-csrf-token': csrf }, { ids: ['e1'], dryRun: true });
  assert.equal(done.status, 200, done.text);
  assert.deepEqual(s.replays, [{ ids: ['e1'], options: { dryRun: true, force: false } }]);
  assertError(await postAs(s, '/api/replay', { cookie, origin, 'x-csrf-token': csrf }, { ids: [] }), 400, /ids/);
  assertError(await postAs(s, '/api/replay', { cookie, origin, 'x-csrf-token': csrf }, { ids: [42] }), 400, /ids/);
  const raw = await send(s.url, `${INSPECTOR_PREFIX}/api/replay`, { method: 'POST', headers: { cookie, origin, 'x-csrf-token': csrf }, body: 'not json' });
  assertError(raw, 400, /body: must be valid JSON/);
  assertError(await postAs(s, '/api/replay', { cookie, origin, 'x-csrf-token': csrf }, { ids: ['x'.repeat(70_000)] }), 413);
});

test('logout ends the session', async (t) => {
  const s = await start(t);
  const { cookie, csrf } = await loggedIn(s);
  const out = await postAs(s, '/api/logout', { cookie, csrf, origin: `http://127.0.0.1:${s.port}`, 'x-csrf-token': csrf }, {});
  assert.equal(out.status, 200);
  assert.match(String(out.headers['set-cookie']?.[0]), /Max-Age=0/);
  assertError(await send(s.url, '/inspector/api/session', { headers: { cookie } }), 401);
});

test('every answer carries the strict CSP, nosniff and no framing; the inspector answers no hook path', async (t) => {
  const s = await start(t);
  const { cookie } = await loggedIn(s);
  for (const [path, status] of [['/inspector/', 200], ['/inspector/app.js', 200], ['/inspector/api/requests/none', 404], ['/inspector/api/requests/%E0%A4%A', 404], ['/hooks/wake', 404], ['/', 404], ['/healthz', 404]] as const) {
    const reply = await send(s.url, path, { headers: { cookie } });
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

test('the list passes the page filters to the source, bounded', async (t) => {
  const s = await start(t);
  const { cookie } = await loggedIn(s);
  const reply = await send(s.url, '/inspector/api/requests?hook=github&status=4xx&code=ERR_UNAUTHORIZED&text=%2Fgit&limit=999999&other=1', { headers: { cookie } });
  assert.deepEqual((reply.body['entries'] as { filter: unknown }[])[0]?.filter, { limit: 1000, hook: 'github', status: '4xx', code: 'ERR_UNAUTHORIZED', text: '/git' });
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
  assert.ok(size < 60 * 1024, `the page is ${size} bytes`);
  const all = Object.values(page).join('\n');
  assert.doesNotMatch(all, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/);
  assert.doesNotMatch(all, /https?:\/\/(?!www\.w3\.org)/, 'nothing from another origin');
  assert.doesNotMatch(page['index.html']!, /<script>|<style>|\sstyle=|\son\w+=/, 'no inline script or style');
});
