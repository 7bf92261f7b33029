// Socket activation end to end: a child process is handed a listening socket as fd 3 with
// LISTEN_FDS/LISTEN_PID set, and serves HTTP on it without binding anything itself.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { get } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { IS_DENO, onPath, ROOT } from './_cli.ts';
import { tempDir } from './_dir.ts';

const ACTIVATE = onPath('systemd-socket-activate');

// What a server does with socket activation, and nothing else: take fd 3 if it is ours, serve on it.
const SERVER = (systemd: string) => `
import { createServer } from 'node:http';
import { inheritedListenFd } from ${JSON.stringify(systemd)};

const fd = inheritedListenFd(process.env, process.pid);
if (fd === null) {
  process.stderr.write(\`no inherited socket: LISTEN_PID=\${process.env.LISTEN_PID} LISTEN_FDS=\${process.env.LISTEN_FDS} pid=\${process.pid}\\n\`);
  process.exit(2);
}
const server = createServer((_req, res) => {
  res.setHeader('connection', 'close');
  res.end(JSON.stringify({ pid: process.pid, fd }));
});
server.listen({ fd }, () => process.stdout.write('ready\\n'));
`;

test(
  'inheritedListenFd(): a child given a listening socket as fd 3 with its own LISTEN_PID serves HTTP on it',
  {
    // Deno's node:net gives a listening server no file descriptor (server._handle.fd is undefined) and
    // its child_process refuses a handle in stdio, so a Deno parent cannot hand its socket to a child.
    // Deno as the child does work: the systemd-socket-activate test below runs it.
    skip: IS_DENO
      ? "a Deno parent cannot pass a listening socket's fd to a child"
      : process.platform === 'win32'
      ? 'no /bin/sh or fd passing on Windows'
      : false,
  },
  async (t) => {
    const dir = await tempDir(t, 'hooks-ingress-activation-');
    const listener = createServer();
    let child: ChildProcess | undefined;
    try {
      const script = await _script(dir);
      await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
      const { port } = listener.address() as AddressInfo;
      const fd = (listener as unknown as { _handle: { fd: number } })._handle.fd;
      assert.ok(fd > 2, 'the listening socket has a file descriptor');

      // LISTEN_PID must be the server's own pid, unknown before it starts: the shell learns its pid ($$)
      // and exec keeps it for the runtime it becomes, exactly as systemd sets the variable after fork.
      const [cmd, args] = _runtime(script);
      const env: Record<string, string | undefined> = { ...process.env, LISTEN_FDS: '1' };
      delete env['LISTEN_PID'];
      delete env['LISTEN_FDNAMES'];
      const shell = spawn('/bin/sh', ['-c', 'LISTEN_PID=$$; export LISTEN_PID; exec "$0" "$@"', cmd, ...args], {
        cwd: ROOT,
        env,
        stdio: ['ignore', 'pipe', 'pipe', fd],
      });
      child = shell;
      // The child holds its own copy of the socket now; this process stops accepting on it, so
      // every connection below reaches the child.
      await new Promise<void>((resolve) => listener.close(() => resolve()));
      await _line(shell, shell.stdout!, /^ready$/m);

      const answer = await _get({ host: '127.0.0.1', port });
      assert.deepEqual(answer, { pid: shell.pid, fd: 3 });
    } finally {
      listener.close();
      await _stop(child);
    }
  },
);

test(
  'inheritedListenFd(): a child started by systemd-socket-activate serves on the socket systemd bound',
  { skip: ACTIVATE ? false : 'systemd-socket-activate is not installed' },
  async (t) => {
    const dir = await tempDir(t, 'hooks-ingress-activation-');
    let child: ChildProcess | undefined;
    try {
      const script = await _script(dir);
      const socketPath = join(dir, 'http.sock');
      const [cmd, args] = _runtime(script);
      // systemd's own implementation of the protocol: it binds, waits for the first connection,
      // then execs the server with fd 3, LISTEN_FDS=1 and LISTEN_PID set to the server's pid.
      const activate = spawn('systemd-socket-activate', ['--listen', socketPath, cmd, ...args], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = activate;
      await _line(activate, activate.stderr, /^Listening on /m);

      const answer = await _get({ socketPath });
      assert.deepEqual(answer, { pid: activate.pid, fd: 3 });
    } finally {
      await _stop(child);
    }
  },
);

async function _script(dir: string): Promise<string> {
  const script = join(dir, 'server.ts');
  await writeFile(script, SERVER(pathToFileURL(join(ROOT, 'lib/edge/systemd.ts')).href));
  return script;
}

// The same runtime as this test: Node through tsx, or Deno running the .ts file directly.
function _runtime(script: string): [string, string[]] {
  return IS_DENO ? [process.execPath, ['run', '-A', script]] : [process.execPath, ['--import', 'tsx', script]];
}

// Resolves when `stream` has printed a line matching `pattern`; rejects if the child exits first.
function _line(child: ChildProcess, stream: Readable, pattern: RegExp): Promise<void> {
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d));
  return new Promise<void>((resolve, reject) => {
    let seen = '';
    stream.on('data', (d: Buffer) => {
      seen += d;
      if (pattern.test(seen)) resolve();
    });
    child.once(
      'exit',
      (code, signal) => reject(new Error(`the child exited (${code ?? signal}) before printing ${pattern}: ${stderr}`)),
    );
  });
}

function _get(target: { host: string; port: number } | { socketPath: string }): Promise<unknown> {
  return new Promise((resolve, reject) => {
    get({ ...target, path: '/', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        try {
          resolve(JSON.parse(body));
        } catch (error) {
          reject(error);
        }
      });
    }).on('error', reject);
  });
}

async function _stop(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}
