// `hooks-ingress inspect` against a real server process: a one-time link when the inspector is
// on, one clear line when it is off or no server runs, and two listeners that never answer each
// other's paths.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { main } from '../lib/cli/main.ts';
import { configFile, serveState, type Spawned } from './_cli.ts';
import { tempDir } from './_dir.ts';
import { assertError, post, send } from './_http.ts';
import { captureIo } from './_io.ts';

const TOKEN = 'cli-inspect-token-0123456789abcdef';

async function serve(t: TestContext, extra: object): Promise<{ server: Spawned; state: string }> {
  const { dir, config } = await configFile(t, { hooks: { enabled: true, token: TOKEN }, ...extra }, 'cli-inspect-');
  const state = join(dir, 'state');
  return { server: await serveState(t, { config, state }), state };
}

async function inspect(state: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const { io, out } = captureIo({});
  const code = await main(['inspect', '--state-dir', state], io);
  return { code, ...out };
}

test('inspect prints a one-time link to the running server inspector, and the log never holds its code', async (t) => {
  const { server, state } = await serve(t, { inspector: { port: 0 } });
  const got = await inspect(state);
  assert.equal(got.code, 0, got.stderr);
  const link = /^(http:\/\/127\.0\.0\.1:(\d+)\/inspector\/login\?code=([\w-]+))$/m.exec(got.stdout);
  assert.ok(link !== null, got.stdout);
  const inspector = `http://127.0.0.1:${link[2]}`;
  assert.notEqual(inspector, server.url);
  assert.equal((await send(inspector, new URL(link[1]!).pathname + new URL(link[1]!).search)).status, 303);
  // The hooks listener has no inspector paths, and the inspector no hook paths.
  assertError(await send(server.url, '/inspector/'), 404);
  assertError(await send(server.url, '/inspector/login'), 404);
  assertError(await post(inspector, '/hooks/wake', { headers: { authorization: `Bearer ${TOKEN}` }, body: { text: 'x' } }), 404);
  assertError(await send(inspector, '/healthz'), 404);
  assert.equal(server.stderr().includes(link[3]!), false, 'the code is not in the log');
});

test('inspect says in one line that the inspector is off, or that no server runs', async (t) => {
  const { state } = await serve(t, {});
  const off = await inspect(state);
  assert.equal(off.code, 1);
  assert.equal(off.stdout, '');
  assert.match(off.stderr, /^hooks-ingress inspect: the inspector is off: set inspector\.port in the config and restart the server\n$/);
  const dir = await tempDir(t, 'cli-inspect-none-');
  const none = await inspect(dir);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /^hooks-ingress inspect: no running server found for state directory /);
});
