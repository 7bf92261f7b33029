// The control channel's client, callServer(), against the channel in-process; then the channel of
// a real `serve` process: up when the server says it listens, replaced after a kill -9, gone after a
// clean stop, and allowed by the shipped systemd units.
import assert from 'node:assert/strict';
import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { callServer } from '../../lib/control/client.ts';
import { CONTROL_SECRET, CONTROL_SOCKET, SOCKET_PATH_MAX } from '../../lib/control/server.ts';
import { startEcho } from '../_control.ts';
import {
  assertCleanStop,
  type ConfigFile,
  configFile,
  ROOT,
  runCli,
  serveState as serve,
  spawnServer,
} from '../_cli.ts';
import { tempDir } from '../_dir.ts';

const TOKEN = 'control-spec-token-0123456789abcdef';

function setup(t: TestContext): Promise<ConfigFile> {
  return configFile(t, { hooks: { enabled: true, token: TOKEN } }, 'ctl-serve-');
}

test('callServer() runs an operation with the secret from the state directory and returns its result', async (t) => {
  const { dir, calls } = await startEcho(t);
  assert.deepEqual(await callServer(dir, 'echo', { n: 1 }), { kind: 'result', result: { echoed: { n: 1 } } });
  assert.deepEqual(calls, [{ n: 1 }]);
});

test('callServer() answers no-server when no server ever ran, and when a killed server left its files behind', async (t) => {
  const dir = await tempDir(t, 'ctl-');
  const none = { kind: 'no-server', why: `no running server found for state directory ${dir}` };
  assert.deepEqual(await callServer(dir, 'echo', null), none);
  assert.deepEqual(await callServer(join(dir, 'missing'), 'echo', null), {
    kind: 'no-server',
    why: `no running server found for state directory ${join(dir, 'missing')}`,
  });
  // A secret without a socket, then a secret with a socket file nobody listens on.
  await writeFile(join(dir, CONTROL_SECRET), 'f'.repeat(64));
  assert.deepEqual(await callServer(dir, 'echo', null), none);
  // A file at the socket's place that nobody listens on (a real one left by kill -9 is in the kill -9 test below).
  await writeFile(join(dir, CONTROL_SOCKET), '');
  assert.deepEqual(await callServer(dir, 'echo', null), none);
});

test('callServer() gives up after timeoutMs when the operation does not answer', async (t) => {
  const { dir } = await startEcho(t, { hang: () => new Promise(() => {}) });
  assert.deepEqual(await callServer(dir, 'hang', null, { timeoutMs: 200 }), { kind: 'timeout' });
});

test('serve answers on its control channel as soon as it prints "listening on", and removes the channel files when it stops', async (t) => {
  const s = await setup(t);
  const server = await serve(t, s);
  const answer = await callServer(s.state, 'status', null);
  assert.equal(answer.kind, 'result', JSON.stringify(answer));
  const status = (answer as { result: Record<string, unknown> }).result;
  assert.equal(status['pid'], server.child.pid);
  assert.equal(status['url'], server.url);
  assert.equal(status['stateDir'], s.state);
  assert.equal((await stat(join(s.state, CONTROL_SOCKET))).mode & 0o777, 0o600);
  assert.equal((await stat(join(s.state, CONTROL_SECRET))).mode & 0o777, 0o600);
  process.kill(server.child.pid!, 'SIGTERM');
  await assertCleanStop(server);
  await assert.rejects(stat(join(s.state, CONTROL_SOCKET)), { code: 'ENOENT' });
  await assert.rejects(stat(join(s.state, CONTROL_SECRET)), { code: 'ENOENT' });
  assert.equal((await callServer(s.state, 'status', null)).kind, 'no-server');
});

test('after a kill -9 the stale socket and secret answer no-server, and the next serve replaces them', async (t) => {
  const s = await setup(t);
  const first = await serve(t, s);
  const oldSecret = await readFile(join(s.state, CONTROL_SECRET), 'utf8');
  process.kill(first.child.pid!, 'SIGKILL');
  await first.exited;
  assert.ok((await stat(join(s.state, CONTROL_SOCKET))).isSocket(), 'the killed server left its socket file');
  assert.deepEqual(await callServer(s.state, 'status', null), {
    kind: 'no-server',
    why: `no running server found for state directory ${s.state}`,
  });

  const second = await serve(t, s);
  assert.notEqual(await readFile(join(s.state, CONTROL_SECRET), 'utf8'), oldSecret);
  const answer = await callServer(s.state, 'status', null);
  assert.equal(answer.kind === 'result' && (answer.result as { pid: number }).pid, second.child.pid);
});

for (const command of ['reload', 'status']) {
  test(`hooks-ingress ${command} with no server running exits 1 and names the state directory it looked in`, async (t) => {
    const dir = await tempDir(t, 'ctl-none-');
    const result = await runCli([command, '--state-dir', dir]);
    assert.deepEqual(result, {
      code: 1,
      stdout: '',
      stderr: `hooks-ingress ${command}: no running server found for state directory ${dir}\n`,
    });
  });
}

test('serve refuses a state directory whose control socket path would be too long, naming the limit, before it starts', async (t) => {
  const s = await setup(t);
  const long = join(s.state, 'x'.repeat(SOCKET_PATH_MAX));
  const result = await runCli(['serve', '--config', s.config, '--port', '0', '--state-dir', long]);
  assert.equal(result.code, 1);
  assert.equal(result.stdout, '');
  assert.match(
    result.stderr,
    new RegExp(
      `(?:^|\n)hooks-ingress serve: cannot use state directory ${long}: the control socket ${
        join(long, CONTROL_SOCKET)
      } is \\d+ bytes long, more than the ${SOCKET_PATH_MAX} a unix socket path may have; use a state directory with a shorter path\\n$`,
    ),
  );
  await assert.rejects(stat(long), { code: 'ENOENT' }, 'nothing was created');
});

test('serve refuses a state directory inside the transforms directory, which transform children may read', async (t) => {
  const s = await setup(t);
  const inside = join(s.config, '..', 'hooks', 'transforms', 'state');
  const result = await runCli(['serve', '--config', s.config, '--port', '0', '--state-dir', inside]);
  assert.equal(result.code, 1);
  assert.match(
    result.stderr,
    /cannot use state directory \S+\/hooks\/transforms\/state: it lies inside the transforms directory \S+\/hooks\/transforms, which transforms may read; use another\n$/,
  );
  await assert.rejects(stat(inside), { code: 'ENOENT' }, 'nothing was created');
});

test('serve refuses a state directory that a link in the transforms directory leads to a folder holding, whether the state directory exists yet or not', async (t) => {
  const s = await setup(t);
  const transforms = join(s.dir, 'hooks', 'transforms');
  await mkdir(transforms, { recursive: true });
  await mkdir(join(s.dir, 'var'));
  await symlink(join(s.dir, 'var'), join(transforms, 'shared'));
  const state = join(s.dir, 'var', 'lib', 'hooks-ingress');
  for (const made of [false, true]) {
    if (made) await mkdir(state, { recursive: true });
    // A server that starts anyway (it used to, with a warning) is stopped, and the test fails.
    const started = spawnServer(['--config', s.config, '--port', '0', '--state-dir', state]).then(async (server) => {
      server.child.kill('SIGTERM');
      await server.exited;
      return server;
    });
    await assert.rejects(
      started,
      new RegExp(
        `exited with 1 before listening: [^]*cannot use state directory ${state}: the transforms directory \\S+ holds a symbolic link \\S+/hooks/transforms/shared to \\S+/var, which holds it: transforms may read it through the link; remove the link or use another state directory\n$`,
      ),
    );
    if (!made) await assert.rejects(stat(state), { code: 'ENOENT' }, 'nothing was created');
    else await assert.rejects(stat(join(state, CONTROL_SECRET)), { code: 'ENOENT' }, 'no secret was made');
  }
});

// SocketBindDeny= concerns IP sockets only; RestrictAddressFamilies= must keep AF_UNIX for the channel.
for (const unit of ['contrib/systemd/hooks-ingress.service', 'contrib/systemd/user/hooks-ingress.service']) {
  test(`${unit} lets the service make unix sockets (the control channel)`, async () => {
    const text = await readFile(join(ROOT, unit), 'utf8');
    const families = [...text.matchAll(/^RestrictAddressFamilies=(.*)$/gm)].map((m) => m[1]!.trim());
    assert.ok(families.length > 0);
    for (const value of families) {
      assert.ok(!value.startsWith('~'), `${unit}: ${value} is a deny list`);
      assert.ok(value.split(/\s+/).includes('AF_UNIX'), `${unit}: ${value}`);
    }
  });
}
