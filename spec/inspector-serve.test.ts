import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { startInspector } from '../lib/inspector/serve.ts';
import type { Config } from '../lib/config/types.ts';
import { KEY_HEADER } from '../lib/inspector/listener.ts';
import { silentLogger } from './_app.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { send } from './_http.ts';

// serve's inspector as the config describes it: its bind address, its sessions' lifetimes.

type InspectorConfig = NonNullable<Config['inspector']>;

async function started(t: TestContext, config: Partial<InspectorConfig>) {
  const stateDir = await tempDir(t, 'serve-inspector-');
  const running = await startInspector({
    config: { port: 0, bind: '127.0.0.1', allowNonLoopback: false, idleMinutes: 30, maxSessionHours: 12, ...config },
    stateDir,
    env: {},
    log: silentLogger,
    store: {
      run: () => null,
      events: () => [],
      outboxEntry: () => null,
      notice: () => null,
      root: () => null,
      changes: () => 0,
    },
    replay: async () => ({}),
  });
  defer(t, () => running.close());
  return running;
}

// Follows a login link as a browser would: the cookie it sets and the key in its fragment.
async function login(url: string): Promise<Record<string, string>> {
  const reply = await send(url, new URL(url).pathname + new URL(url).search);
  assert.equal(reply.status, 303, reply.text);
  const key = /#login=([\w-]+)$/.exec(String(reply.headers.location))?.[1] ?? '';
  return { cookie: String(reply.headers['set-cookie']?.[0]).split(';')[0]!, [KEY_HEADER]: key };
}

test('an inspector bound to another loopback address (127.0.0.2) answers by that name', async (t) => {
  const running = await started(t, { bind: '127.0.0.2' });
  const { url } = running.login();
  assert.match(url, /^http:\/\/127\.0\.0\.2:\d+\/inspector\/login\?code=/);
  const headers = await login(url);
  const session = await send(url, '/inspector/api/session', { headers });
  assert.equal(session.status, 200, session.text);
});

test('a session lasts inspector.maxSessionHours at most', async (t) => {
  const before = Date.now();
  const running = await started(t, { maxSessionHours: 2 });
  const { url } = running.login();
  const session = await send(url, '/inspector/api/session', { headers: await login(url) });
  const endsAt = Date.parse(String(session.body['endsAt']));
  assert.ok(endsAt >= before + 2 * 3_600_000 && endsAt <= Date.now() + 2 * 3_600_000, String(session.body['endsAt']));
});
