// `hooks-ingress serve` under socket activation, as a real process: it is handed a listening socket
// as fd 3 with LISTEN_FDS/LISTEN_PID, serves on it, and binds nothing of its own.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, type StdioOptions } from 'node:child_process';
import { once } from 'node:events';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { test, type TestContext } from 'node:test';
import { post, send } from '../_http.ts';
import {
  assertCleanStop,
  cliCommand,
  configFile,
  IS_DENO,
  listening,
  onPath,
  ROOT,
  type Spawned,
  spawnServer,
  stopAfter,
} from '../_cli.ts';
import { defer } from '../_cleanup.ts';
import { until } from '../_until.ts';

const TOKEN = 'activation-hook-token-0123456789abcdef';
const ACTIVATE = onPath('systemd-socket-activate');

interface Fixture {
  config: string;
  state: string;
  /** The port the config names, held by this test: a server that tried to bind it would fail. */
  configPort: number;
}

async function fixture(t: TestContext): Promise<Fixture> {
  const held = await _listen();
  defer(t, () => _close(held));
  const configPort = (held.address() as AddressInfo).port;
  const { config, state } = await configFile(t, {
    hooks: { enabled: true, token: TOKEN },
    gateway: { bind: '127.0.0.1', port: configPort },
  }, 'ops-activation-');
  return { config, state, configPort };
}

/** Runs a child until it prints `listening on URL` on stdout; stops it after the test. */
async function started(t: TestContext, child: ChildProcess): Promise<Spawned> {
  defer(t, async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await once(child, 'exit');
  });
  return listening(child);
}

// The "started" log line goes to stderr just after "listening on" goes to stdout; the two pipes
// deliver in either order, so this waits for it. The deadline only turns a hang into a failure.
async function startedLine(server: Spawned): Promise<Record<string, unknown>> {
  const line = await until(
    'the "started" log line',
    () => server.stderr().split('\n').find((l) => l.includes('"msg":"started"')),
    { detail: server.stderr },
  );
  return JSON.parse(line) as Record<string, unknown>;
}

/** What a socket-activated server must show: it answers on the inherited port and bound nothing else. */
async function assertServesOn(server: Spawned, port: number): Promise<void> {
  assert.equal(server.url, `http://127.0.0.1:${port}`);
  const health = await send(server.url, '/healthz');
  assert.equal(health.status, 200);
  assert.deepEqual(health.body, { ok: true });
  const wake = await post(server.url, '/hooks/wake', {
    headers: { authorization: `Bearer ${TOKEN}` },
    body: { text: 'activated', mode: 'next-heartbeat' },
  });
  assert.equal(wake.status, 200, wake.text);
  const line = await startedLine(server);
  assert.equal(line['activated'], true);
  assert.equal(line['url'], server.url);
}

test(
  'serve run by systemd-socket-activate serves on the socket it binds, not on gateway.port',
  { skip: ACTIVATE ? false : 'systemd-socket-activate is not installed' },
  async (t) => {
    const f = await fixture(t);
    const [cmd, args] = cliCommand(['serve', '--config', f.config, '--state-dir', f.state]);
    // systemd-socket-activate passes only a few variables on; HOME is one, which Deno needs for its cache.
    let activate: ChildProcess | undefined;
    let port = 0;
    for (let attempt = 0; activate === undefined; attempt++) {
      port = await _freePort();
      const child = spawn('systemd-socket-activate', ['--listen', `127.0.0.1:${port}`, cmd, ...args], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      // It binds, says so on stderr, and execs the server when the first connection arrives.
      const bound = await _bound(child);
      if (bound) activate = child;
      else if (attempt === 2) assert.fail(`systemd-socket-activate could not bind a free port three times`);
    }
    // The first connection is what starts the server; it waits in the socket's backlog meanwhile.
    const first = send(`http://127.0.0.1:${port}`, '/healthz');
    const server = await started(t, activate);
    assert.equal((await first).status, 200);
    assert.equal(server.child.pid, activate.pid, "systemd-socket-activate exec'd the server in its own process");
    await assertServesOn(server, port);
    server.child.kill('SIGTERM');
    await assertCleanStop(server);
  },
);

test(
  'serve given a listening socket as fd 3 with LISTEN_FDS=1 and its own LISTEN_PID serves on it, not on gateway.port',
  {
    // Deno's node:net gives a listening server no file descriptor and its child_process refuses a
    // handle in stdio, so a Deno parent cannot hand a socket to a child (the test above covers Deno as the child).
    skip: IS_DENO
      ? "a Deno parent cannot pass a listening socket's fd to a child"
      : process.platform === 'win32'
      ? 'no /bin/sh or fd passing on Windows'
      : false,
  },
  async (t) => {
    const f = await fixture(t);
    const listener = await _listen();
    const { port } = listener.address() as AddressInfo;
    const fd = (listener as unknown as { _handle: { fd: number } })._handle.fd;
    assert.ok(fd > 2, 'the listening socket has a file descriptor');
    const env: Record<string, string | undefined> = { ...process.env, LISTEN_FDS: '1' };
    delete env['LISTEN_PID'];
    delete env['LISTEN_FDNAMES'];
    const [cmd, args] = cliCommand(['serve', '--config', f.config, '--state-dir', f.state]);
    // LISTEN_PID must be the server's own pid: the shell learns its pid ($$) and exec keeps it.
    const stdio: StdioOptions = ['ignore', 'pipe', 'pipe', fd];
    const shell = spawn('/bin/sh', ['-c', 'LISTEN_PID=$$; export LISTEN_PID; exec "$0" "$@"', cmd, ...args], {
      cwd: ROOT,
      env,
      stdio,
    });
    // The child holds its own copy now; this process stops accepting, so every connection reaches the child.
    await _close(listener);
    const server = await started(t, shell);
    await assertServesOn(server, port);
    server.child.kill('SIGTERM');
    await assertCleanStop(server);
  },
);

test('serve ignores LISTEN_FDS meant for another process (LISTEN_PID is not its pid) and binds its own port', async (t) => {
  const f = await fixture(t);
  const server = await spawnServer(['--config', f.config, '--state-dir', f.state, '--port', '0'], {
    LISTEN_FDS: '1',
    LISTEN_PID: '1',
  });
  stopAfter(t, server);
  const line = await startedLine(server);
  assert.equal(line['activated'], false);
  assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.notEqual(server.url, `http://127.0.0.1:${f.configPort}`);
  assert.equal((await send(server.url, '/healthz')).status, 200);
  server.child.kill('SIGTERM');
  await assertCleanStop(server);
});

// Resolves true once systemd-socket-activate says it listens, false if it exits first (the port was taken).
function _bound(child: ChildProcess): Promise<boolean> {
  return new Promise((resolve) => {
    let seen = '';
    const onData = (d: Buffer) => {
      seen += d;
      if (/^Listening on /m.test(seen)) {
        child.stderr!.off('data', onData);
        resolve(true);
      }
    };
    child.stderr!.on('data', onData);
    child.once('exit', () => resolve(false));
  });
}

async function _listen(): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return server;
}

function _close(server: Server): Promise<void> {
  return new Promise((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
}

async function _freePort(): Promise<number> {
  const probe = await _listen();
  const { port } = probe.address() as AddressInfo;
  await _close(probe);
  return port;
}
