// `hooks-ingress inspect` against a real server process: a one-time link when the inspector is
// on, one clear line when it is off or no server runs, and two listeners that never answer each
// other's paths; `--open` hands the link over in a private file and opens nothing but a local
// login link.
import assert from 'node:assert/strict';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { isLoginLink } from '../../lib/cli/inspect.ts';
import { main } from '../../lib/cli/main.ts';
import { configFile, serveState, type Spawned } from '../_cli.ts';
import { tempDir } from '../_dir.ts';
import { assertError, post, send } from '../_http.ts';
import { startImpostor } from '../_control.ts';
import { captureIo } from '../_io.ts';
import { until } from '../_until.ts';

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
  assertError(
    await post(inspector, '/hooks/wake', { headers: { authorization: `Bearer ${TOKEN}` }, body: { text: 'x' } }),
    404,
  );
  assertError(await send(inspector, '/healthz'), 404);
  assert.equal(server.stderr().includes(link[3]!), false, 'the code is not in the log');
});

test('inspect says in one line that the inspector is off, or that no server runs', async (t) => {
  const { state } = await serve(t, {});
  const off = await inspect(state);
  assert.equal(off.code, 1);
  assert.equal(off.stdout, '');
  assert.match(
    off.stderr,
    /^hooks-ingress inspect: the inspector is off: set inspector\.port in the config and restart the server\n$/,
  );
  const dir = await tempDir(t, 'cli-inspect-none-');
  const none = await inspect(dir);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /^hooks-ingress inspect: no running server found for state directory /);
});

// A $BROWSER that notes its arguments, the modes of the file it is given and of its directory, and the file's text.
async function fakeBrowser(t: TestContext): Promise<{ script: string; record: string }> {
  const dir = await tempDir(t, 'cli-inspect-browser-');
  const record = join(dir, 'record');
  const script = join(dir, 'browser');
  await writeFile(
    script,
    `#!/bin/sh\n{ printf 'arg %s\\n' "$@"; stat -c 'mode %a' "$1" "$(dirname "$1")"; cat "$1"; } > '${record}.tmp' && mv '${record}.tmp' '${record}'\n`,
    { mode: 0o755 },
  );
  return { script, record };
}

test('inspect --open hands the link to the browser in a private file, never on its command line, and removes the file', async (t) => {
  const { server, state } = await serve(t, { inspector: { port: 0 } });
  const browser = await fakeBrowser(t);
  const runtime = await tempDir(t, 'cli-inspect-runtime-');
  const stop = new AbortController();
  const { io, out } = captureIo({ BROWSER: browser.script, XDG_RUNTIME_DIR: runtime }, { signal: stop.signal });
  const running = main(['inspect', '--state-dir', state, '--open'], io);
  const recorded = await until(
    'the browser was run',
    async () => (await readFile(browser.record, 'utf8').catch(() => null)) ?? undefined,
  );
  const link = /^(http:\/\/127\.0\.0\.1:\d+\/inspector\/login\?code=([\w-]+))$/m.exec(out.stdout);
  assert.ok(link !== null, out.stdout);
  const [args, modes, page] = [
    recorded.split('\n').filter((l) => l.startsWith('arg ')),
    recorded.split('\n').filter((l) => l.startsWith('mode ')),
    recorded,
  ];
  assert.equal(args.length, 1, recorded);
  const file = args[0]!.slice(4);
  assert.equal(file.startsWith(`${runtime}/hooks-ingress-inspect-`), true, file);
  assert.equal(
    recorded.split('\n').filter((l) => l.startsWith('arg ')).join('\n').includes(link[2]!),
    false,
    'the code is not on the command line',
  );
  assert.deepEqual(modes, ['mode 600', 'mode 700']);
  assert.ok(page.includes(`<meta http-equiv="refresh" content="0; url=${link[1]}">`), page);
  assert.ok(page.includes('<meta name="referrer" content="no-referrer">'));
  assert.ok((await stat(file)).isFile(), 'kept while the browser may still read it');
  stop.abort();
  assert.equal(await running, 0, out.stderr);
  await assert.rejects(stat(dirname(file)), { code: 'ENOENT' });
  assert.match(
    out.stderr,
    /^hooks-ingress inspect: opened with \S+\/browser; its page is removed in \d+ s \(Ctrl-C removes it now\)\n$/,
  );
  // The link the page sends the browser to still logs in: the browser never used it.
  assert.equal(
    (await send(`http://127.0.0.1:${new URL(link[1]!).port}`, new URL(link[1]!).pathname + new URL(link[1]!).search))
      .status,
    303,
  );
  assert.equal(server.stderr().includes(link[2]!), false);
});

test('inspect --open removes only its page and its folder, never what another put in the folder (no recursive removal)', async (t) => {
  const { state } = await serve(t, { inspector: { port: 0 } });
  const browser = await fakeBrowser(t);
  const runtime = await tempDir(t, 'cli-inspect-runtime-');
  const stop = new AbortController();
  const { io, out } = captureIo({ BROWSER: browser.script, XDG_RUNTIME_DIR: runtime }, { signal: stop.signal });
  const running = main(['inspect', '--state-dir', state, '--open'], io);
  const recorded = await until(
    'the browser was run',
    async () => (await readFile(browser.record, 'utf8').catch(() => null)) ?? undefined,
  );
  const file = recorded.split('\n').find((l) => l.startsWith('arg '))!.slice(4);
  // What a swap would put in the walk's way: a folder with a file, made after the page.
  await mkdir(join(dirname(file), 'other'));
  await writeFile(join(dirname(file), 'other', 'kept'), 'not yours');
  stop.abort();
  assert.equal(await running, 0, out.stderr);
  await assert.rejects(stat(file), { code: 'ENOENT' }, 'the page is removed');
  assert.equal(await readFile(join(dirname(file), 'other', 'kept'), 'utf8'), 'not yours');
});

test('inspect --open opens only a login link to a loopback inspector, whatever the answer says; the link is checked, not its port', async (t) => {
  const code = 'Zm9vYmFyYmF6cXV4MDEyMzQ1Njc4OWFiY2RlZg';
  const good = [
    `http://127.0.0.1:1/inspector/login?code=${code}`,
    `http://localhost:65535/inspector/login?code=${code}`,
    `http://[::1]:8790/inspector/login?code=${code}`,
    `http://127.0.0.2:8790/inspector/login?code=${code}`,
  ];
  const bad = [
    `http://attacker.example:8790/inspector/login?code=${code}`,
    `https://127.0.0.1:8790/inspector/login?code=${code}`,
    `http://127.0.0.1/inspector/login?code=${code}`,
    `http://127.0.0.1:0/inspector/login?code=${code}`,
    `http://127.0.0.1:65536/inspector/login?code=${code}`,
    `http://127.0.0.1.attacker.example:8790/inspector/login?code=${code}`,
    `http://user@127.0.0.1:8790/inspector/login?code=${code}`,
    `http://127.0.0.1:8790/inspector/other?code=${code}`,
    `http://127.0.0.1:8790/inspector/login?code=${code}&next=http://attacker.example/`,
    `http://127.0.0.1:8790/inspector/login?code=${code}#x`,
    `http://127.0.0.1:8790/inspector/login?code=short`,
    `http://127.0.0.1:8790/inspector/login?code=${code}\n--new-window`,
    `javascript:alert(1)//http://127.0.0.1:8790/inspector/login?code=${code}`,
    `http://256.0.0.1:8790/inspector/login?code=${code}`,
    42,
  ];
  for (const url of bad) assert.equal(isLoginLink(url), false, String(url));
  for (const url of good) assert.equal(isLoginLink(url), true, url);

  const browser = await fakeBrowser(t);
  for (const url of [bad[0], bad[7]]) {
    const impostor = await startImpostor(
      t,
      () => ({ ok: true, result: { url, expiresAt: new Date(Date.now() + 60_000).toISOString() } }),
    );
    const { io, out } = captureIo({ BROWSER: browser.script, XDG_RUNTIME_DIR: impostor.dir });
    assert.equal(await main(['inspect', '--state-dir', impostor.dir, '--open'], io), 1);
    assert.equal(out.stdout, '');
    assert.equal(
      out.stderr,
      "hooks-ingress inspect: the server's answer is not a login link to an inspector on a loopback address; nothing opened\n",
    );
  }
  await assert.rejects(stat(browser.record), { code: 'ENOENT' }, 'the browser was never run');
});
