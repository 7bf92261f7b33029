// SIGUSR1 opens Node's inspector, through which any local process of the server's user (a
// transform child on Node among them) could run code in the server: serve must ignore it.
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import process from 'node:process';
import { test } from 'node:test';
import { ignoreDebuggerSignal, SIGUSR1_LOG_EVERY_MS } from '../../lib/cli/debugger-signal.ts';
import type { Logger } from '../../lib/log.ts';
import { configFile, IS_DENO, runCli, spawnServer, stopAfter } from '../_cli.ts';
import { send } from '../_http.ts';
import { until } from '../_until.ts';

/** Whether something accepts connections on 127.0.0.1:`port`. */
function listened(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

test('serve on Node ignores SIGUSR1: no inspector opens, and the server still serves', {
  skip: IS_DENO ? "the inspector SIGUSR1 opens is Node's; this spec runs the server on the runtime it runs on" : false,
}, async (t) => {
  const { dir, config } = await configFile(
    t,
    { hooks: { enabled: true, token: 'usr1-token-0123456789abcdef' } },
    'hooks-usr1-',
  );
  // No --inspect anywhere: the operator did not ask for an inspector.
  const env = { NODE_OPTIONS: '' };
  const server = await spawnServer(['--config', config, '--port', '0', '--state-dir', join(dir, 'state')], env);
  stopAfter(t, server);
  await until('the "started" log line', () => server.stderr().includes('"msg":"started"'), { detail: server.stderr });
  // Node's default port for an inspector opened by SIGUSR1. Something else may hold it on a shared
  // machine; then only the server's own words below can tell.
  const freeBefore = !(await listened(9229));

  server.child.kill('SIGUSR1');
  // Either our line, or Node's "Debugger listening on ws://…" (or its failure to listen): whichever comes.
  const said = await until(
    'the server to react to SIGUSR1',
    () => /SIGUSR1 ignored|Debugger listening|Starting inspector/.exec(server.stderr())?.[0],
    { detail: server.stderr },
  );

  assert.equal(said, 'SIGUSR1 ignored', server.stderr());
  assert.doesNotMatch(server.stderr(), /Debugger listening|Starting inspector/);
  if (freeBefore) assert.equal(await listened(9229), false, 'something listens on 127.0.0.1:9229 after SIGUSR1');
  assert.equal((await send(server.url, '/healthz')).status, 200);
  assert.equal(server.child.exitCode, null);
});

/** A logger that keeps its warnings. */
function keeping(): { log: Logger; warned: { msg: string; fields: unknown }[] } {
  const warned: { msg: string; fields: unknown }[] = [];
  const log: Logger = {
    info() {},
    error() {},
    warn: (msg: string, fields?: unknown) => void warned.push({ msg, fields }),
  } as Logger;
  return { log, warned };
}

test('ignoreDebuggerSignal() logs the first SIGUSR1, then at most one line a minute with how many came', () => {
  const { log, warned } = keeping();
  let now = 1_000;
  const before = process.listenerCount('SIGUSR1');
  const release = ignoreDebuggerSignal(log, { isNode: true, nodeFlags: ['--max-old-space-size=64'], now: () => now });
  try {
    assert.equal(process.listenerCount('SIGUSR1'), before + 1);
    process.emit('SIGUSR1', 'SIGUSR1');
    process.emit('SIGUSR1', 'SIGUSR1');
    process.emit('SIGUSR1', 'SIGUSR1');
    now += SIGUSR1_LOG_EVERY_MS;
    process.emit('SIGUSR1', 'SIGUSR1');
    assert.deepEqual(warned, [
      { msg: 'SIGUSR1 ignored: the inspector is not opened by a signal', fields: { signals: 1 } },
      { msg: 'SIGUSR1 ignored: the inspector is not opened by a signal', fields: { signals: 3 } },
    ]);
  } finally {
    release();
  }
  assert.equal(process.listenerCount('SIGUSR1'), before);
});

test('ignoreDebuggerSignal() leaves SIGUSR1 to Node when the node command line asks for the inspector, and says so', () => {
  for (const flag of ['--inspect', '--inspect=127.0.0.1:9300', '--inspect-brk', '--inspect-wait', '--inspect-port=0']) {
    const { log, warned } = keeping();
    const before = process.listenerCount('SIGUSR1');
    ignoreDebuggerSignal(log, { isNode: true, nodeFlags: [flag] })();
    assert.equal(process.listenerCount('SIGUSR1'), before, flag);
    assert.deepEqual(warned, [{
      msg: 'SIGUSR1 opens the inspector: the node command line asks for it',
      fields: { flag: flag.replace(/=.*/, '') },
    }]);
  }
});

test('ignoreDebuggerSignal() does nothing on Deno, which opens no inspector on a signal', () => {
  const { log, warned } = keeping();
  const before = process.listenerCount('SIGUSR1');
  ignoreDebuggerSignal(log, { isNode: false })();
  assert.equal(process.listenerCount('SIGUSR1'), before);
  assert.deepEqual(warned, []);
});

test('check on Node ignores a SIGUSR1 that a transform sends it while it loads: no inspector opens', {
  skip: IS_DENO ? 'a transform child on Deno cannot signal, and Deno opens no inspector on one' : false,
}, async (t) => {
  const { dir, config, write } = await configFile(t, '', 'hooks-usr1-check-');
  await mkdir(join(dir, 'hooks', 'transforms'), { recursive: true });
  // Sent while the module loads, that is while check waits for the child's answer.
  await writeFile(
    join(dir, 'hooks', 'transforms', 'usr1.js'),
    'import process from "node:process";\nprocess.kill(process.ppid, "SIGUSR1");\nexport default () => null;\n',
  );
  const mapping = { match: { path: 'usr1' }, transform: { module: 'usr1.js' } };
  await write({ hooks: { enabled: true, token: 'usr1-token-0123456789abcdef', mappings: [mapping] } });
  const result = await runCli(['check', '--config', config], { NODE_OPTIONS: '' });
  assert.equal(result.code, 0, result.stderr);
  assert.doesNotMatch(result.stderr, /Debugger listening|Starting inspector/);
  assert.match(
    result.stderr,
    /hooks-ingress check: warning: SIGUSR1 ignored: the inspector is not opened by a signal\n/,
  );
});
