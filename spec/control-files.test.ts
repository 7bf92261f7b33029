// What the control client trusts in a state directory (lib/control/files.ts): only a socket and
// a secret such as the server makes, checked before a byte is sent. The attacks are those of a
// process running as the directory's owner (the service's user) against root's `status`: as root,
// with a throwaway user made for the test; the rest with files this process makes itself.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { callServer } from '../lib/control/client.ts';
import { main } from '../lib/cli/main.ts';
import { CONTROL_SECRET, CONTROL_SOCKET } from '../lib/control/server.ts';
import { defer } from './_cleanup.ts';
import { IS_DENO } from './_cli.ts';
import { startImpostor } from './_control.ts';
import { tempDir } from './_dir.ts';
import { captureIo } from './_io.ts';
import { until } from './_until.ts';

const AS_ROOT = process.getuid?.() === 0;
const NEEDS_ROOT =
  'needs root: it makes a throwaway user to own the state directory, as the service user does (CI runs as root)';
const OSC = '\x1b]8;;http://attacker.example/\x07click\x1b]8;;\x07';

interface User {
  name: string;
  uid: number;
  gid: number;
}

// A system user with its own group, removed when the test ends.
function throwawayUser(t: TestContext): User {
  const name = `hictl${randomBytes(4).toString('hex')}`;
  execFileSync('useradd', ['--system', '--no-create-home', '--user-group', '--shell', '/usr/sbin/nologin', name]);
  defer(t, () => {
    spawnSync('userdel', [name]);
  });
  const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
  return { name, uid: id('-u'), gid: id('-g') };
}

// A state directory owned by `user`, 0700, in a directory that user can reach.
async function userState(t: TestContext, user: User): Promise<{ base: string; state: string }> {
  const base = await tempDir(t, 'ctl-owner-');
  await chmod(base, 0o755);
  const state = join(base, 'state');
  await mkdir(state, { mode: 0o700 });
  await chown(state, user.uid, user.gid);
  return { base, state };
}

// Runs `script` (CommonJS, on Node) as `user`, with `args` in process.argv from index 1.
function runAs(
  t: TestContext,
  user: User,
  script: string,
  args: string[],
): { lines: () => string[]; exited: Promise<unknown> } {
  const child = spawn(IS_DENO ? 'node' : process.execPath, ['-e', script, ...args], {
    uid: user.uid,
    gid: user.gid,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: '/' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  defer(t, async () => {
    child.kill('SIGKILL');
    await exited;
  });
  return { lines: () => out.split('\n').filter((l) => l !== ''), exited };
}

// The listener a process of the service's user puts on control.sock: it notes each connection and
// answers a status whose url carries an OSC escape. The secret it links is the script's second argument.
const IMPOSTOR = `
const fs = require('node:fs'), net = require('node:net'), path = require('node:path');
const [state, target] = process.argv.slice(1);
if (target !== '') fs.symlinkSync(target, path.join(state, ${JSON.stringify(CONTROL_SECRET)}));
const status = { pid: 1, startedAt: 'x', uptimeSeconds: 1, url: ${
  JSON.stringify(OSC)
}, stateDir: state, backlog: { events: 0, bytes: 0 }, outbox: null, callbacks: { pending: 0, sent: 0, dead: 0 }, journalBytes: 0, ledger: null, lastReload: null, reloading: { running: false, pending: false, waiting: 0 } };
const server = net.createServer((socket) => {
  process.stdout.write('connected\\n');
  socket.on('error', () => {});
  socket.on('data', (d) => {
    fs.appendFileSync(path.join(state, 'received'), d);
    if (String(d).includes('\\n')) socket.end(JSON.stringify({ ok: true, result: status }) + '\\n');
  });
});
server.listen(path.join(state, ${JSON.stringify(CONTROL_SOCKET)}), () => {
  fs.chmodSync(path.join(state, ${JSON.stringify(CONTROL_SOCKET)}), 0o600);
  process.stdout.write('ready\\n');
});
`;

test("as root, status refuses a secret that is a link to a root-only file, and neither reads it nor connects to the owner's listener", async (t) => {
  if (!AS_ROOT) return t.skip(NEEDS_ROOT);
  const user = throwawayUser(t);
  const { base, state } = await userState(t, user);
  const rootOnly = join(base, 'root-only');
  await writeFile(rootOnly, 'ROOT-ONLY-CONTENT-5e1d\n', { mode: 0o600 });
  const impostor = runAs(t, user, IMPOSTOR, [state, rootOnly]);
  await until('the impostor listens', () => impostor.lines().includes('ready'));

  const { io, out } = captureIo({});
  const code = await main(['status', '--state-dir', state], io);
  assert.equal(code, 1);
  assert.equal(out.stdout, '');
  assert.equal(
    out.stderr,
    `hooks-ingress status: refusing to use the control channel: ${
      join(state, CONTROL_SECRET)
    } is a symbolic link; the server writes a regular file there\n`,
  );
  assert.deepEqual(impostor.lines(), ['ready'], 'no connection was made');
  await assert.rejects(readFile(join(state, 'received')), { code: 'ENOENT' }, 'nothing was sent');
});

test('as root, status refuses a control.sock that links to a root-only socket, and never connects to that socket', async (t) => {
  if (!AS_ROOT) return t.skip(NEEDS_ROOT);
  const user = throwawayUser(t);
  const { base, state } = await userState(t, user);
  // A socket only root can reach, such as a root daemon's.
  const rootDir = join(base, 'root-only');
  await mkdir(rootDir, { mode: 0o700 });
  const heard: string[] = [];
  const rootSocket = createServer((socket) => {
    socket.on('data', (d: Buffer) => heard.push(String(d)));
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => rootSocket.listen(join(rootDir, 'admin.sock'), resolve));
  defer(t, () => new Promise<void>((resolve) => rootSocket.close(() => resolve())));
  let connections = 0;
  rootSocket.on('connection', () => connections++);
  // What the service's user plants: a secret of its own, and the link.
  const planted = runAs(
    t,
    user,
    `
    const fs = require('node:fs'), path = require('node:path');
    const [state, target] = process.argv.slice(1);
    fs.writeFileSync(path.join(state, ${JSON.stringify(CONTROL_SECRET)}), 'ab'.repeat(32) + '\\n', { mode: 0o600 });
    fs.symlinkSync(target, path.join(state, ${JSON.stringify(CONTROL_SOCKET)}));
  `,
    [state, join(rootDir, 'admin.sock')],
  );
  assert.equal(await planted.exited, 0);

  const answer = await callServer(state, 'status', null);
  assert.deepEqual(answer, {
    kind: 'error',
    code: 'ERR_CONTROL_UNSAFE',
    message: `refusing to use the control channel: ${
      join(state, CONTROL_SOCKET)
    } is a symbolic link; the server makes a socket there`,
  });
  assert.equal(connections, 0);
  assert.deepEqual(heard, []);
});

test('as root, a socket or a secret owned by another uid than the state directory is refused before anything is sent', async (t) => {
  if (!AS_ROOT) return t.skip('needs root: only root can give a file to another uid');
  const impostor = await startImpostor(t, () => ({ ok: true, result: 'heard' }));
  await chown(join(impostor.dir, CONTROL_SOCKET), 65534, 65534);
  assert.deepEqual(await callServer(impostor.dir, 'echo', null), {
    kind: 'error',
    code: 'ERR_CONTROL_UNSAFE',
    message: `refusing to use the control channel: ${
      join(impostor.dir, CONTROL_SOCKET)
    } is owned by uid 65534, not by the state directory's owner (uid 0)`,
  });
  await chown(join(impostor.dir, CONTROL_SOCKET), 0, 0);
  await chown(join(impostor.dir, CONTROL_SECRET), 65534, 65534);
  assert.match(
    JSON.stringify(await callServer(impostor.dir, 'echo', null)),
    /control\.secret is owned by uid 65534, not by the state directory's owner \(uid 0\)/,
  );
  assert.deepEqual(impostor.requests, []);
  // Given back, the same files are used: the refusals were for the owner alone.
  await chown(join(impostor.dir, CONTROL_SECRET), 0, 0);
  assert.deepEqual(await callServer(impostor.dir, 'echo', null), { kind: 'result', result: 'heard' });
});

test('a FIFO at control.secret is refused at once instead of waiting for a writer', async (t) => {
  const impostor = await startImpostor(t, () => ({ ok: true, result: 'heard' }));
  await rm(join(impostor.dir, CONTROL_SECRET));
  execFileSync('mkfifo', ['-m', '600', join(impostor.dir, CONTROL_SECRET)]);
  // The bound only turns a hang (the old client's read of the FIFO) into a failure.
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise((resolve) => (timer = setTimeout(resolve, 10_000, 'still waiting after 10 s')));
  const answer = await Promise.race([callServer(impostor.dir, 'echo', null), bound]);
  clearTimeout(timer);
  assert.deepEqual(answer, {
    kind: 'error',
    code: 'ERR_CONTROL_UNSAFE',
    message: `refusing to use the control channel: ${
      join(impostor.dir, CONTROL_SECRET)
    } is not a regular file; the server writes one there`,
  });
  assert.deepEqual(impostor.requests, []);
});

test('files that group or others can reach, a secret that is not hex digits, a directory or a link are refused, naming the file; nothing is sent', async (t) => {
  const impostor = await startImpostor(t, () => ({ ok: true, result: 'heard' }));
  const socket = join(impostor.dir, CONTROL_SOCKET);
  const secret = join(impostor.dir, CONTROL_SECRET);
  const refused = async (why: string) =>
    assert.deepEqual(await callServer(impostor.dir, 'echo', null), {
      kind: 'error',
      code: 'ERR_CONTROL_UNSAFE',
      message: `refusing to use the control channel: ${why}`,
    });

  await chmod(socket, 0o666);
  await refused(`${socket} has mode 0666: group or others can reach it; the server makes it 0600`);
  await chmod(socket, 0o600);
  await chmod(secret, 0o640);
  await refused(`${secret} has mode 0640: group or others can reach it; the server makes it 0600`);
  await writeFile(secret, 'not the secret\n', { mode: 0o600 });
  await chmod(secret, 0o600);
  await refused(`${secret} does not hold a control secret (hex digits, as the server writes)`);
  await rm(secret);
  await mkdir(secret, { mode: 0o700 });
  await refused(`${secret} is not a regular file; the server writes one there`);
  await rm(secret, { recursive: true });
  const elsewhere = join(await tempDir(t, 'ctl-elsewhere-'), 'secret');
  await writeFile(elsewhere, `${'cd'.repeat(32)}\n`, { mode: 0o600 });
  await symlink(elsewhere, secret);
  await refused(`${secret} is a symbolic link; the server writes a regular file there`);
  assert.deepEqual(impostor.requests, []);
});

test("a listener in the server's place whose files pass the checks is sent the line, and its error answer comes back escaped", async (t) => {
  const impostor = await startImpostor(
    t,
    () => ({ ok: false, error: { code: `ERR_X${OSC}`, message: `bad ${OSC}\u009b2J` } }),
  );
  const answer = await callServer(impostor.dir, 'echo', { n: 1 });
  assert.deepEqual(impostor.requests, [{ secret: 'ab'.repeat(32), op: 'echo', args: { n: 1 } }]);
  assert.equal(answer.kind, 'error');
  const shown = JSON.stringify(answer);
  assert.doesNotMatch(shown, /\\u001b|\\u0007|\u009b/, shown);
  assert.match(shown, /bad \\\\x1b\]8;;http/);
});
