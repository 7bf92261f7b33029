import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { chmod, copyFile, mkdir, writeFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { test } from 'node:test';
import { DRAIN_MS } from '../lib/cli/serve.ts';
import { DEFAULTS } from '../lib/config/normalise.ts';
import { inheritedListenFd, unsetListenEnv } from '../lib/edge/systemd.ts';
import { ROOT } from './_cli.ts';
import { tempDir } from './_dir.ts';

const SERVICE = 'contrib/systemd/hooks-ingress.service';
const SOCKET = 'contrib/systemd/hooks-ingress.socket';
const MAX_EXPOSURE = 2.0;

// `security --offline` arrived in systemd 250; an older systemd-analyze would score this
// machine's running systemd instead of the file, so it is skipped rather than trusted.
const ANALYZE = _analyzeVersion();
const ANALYZE_SKIP = ANALYZE === null
  ? 'systemd-analyze is not installed'
  : ANALYZE < 250
  ? `systemd-analyze ${ANALYZE} has no --offline (needs 250 or later)`
  : false;

test('inheritedListenFd() answers 3 when LISTEN_PID is this process and LISTEN_FDS is at least 1', () => {
  assert.equal(inheritedListenFd({ LISTEN_PID: '4242', LISTEN_FDS: '1' }, 4242), 3);
  assert.equal(inheritedListenFd({ LISTEN_PID: '4242', LISTEN_FDS: '2', LISTEN_FDNAMES: 'http:admin' }, 4242), 3);
});

test('inheritedListenFd() answers null when the sockets were meant for another process', () => {
  assert.equal(inheritedListenFd({ LISTEN_PID: '4241', LISTEN_FDS: '1' }, 4242), null);
  assert.equal(inheritedListenFd({ LISTEN_FDS: '1' }, 4242), null);
  assert.equal(inheritedListenFd({ LISTEN_PID: '0', LISTEN_FDS: '1' }, 0), null);
});

test('inheritedListenFd() answers null when no socket was passed', () => {
  assert.equal(inheritedListenFd({}, 4242), null);
  assert.equal(inheritedListenFd({ LISTEN_PID: '4242' }, 4242), null);
  assert.equal(inheritedListenFd({ LISTEN_PID: '4242', LISTEN_FDS: '0' }, 4242), null);
});

test('inheritedListenFd() reads only plain decimal numbers, as sd_listen_fds does', () => {
  for (const bad of ['', ' 1', '1 ', '+1', '-1', '0x1', '1.0', '1e0', '12345678901']) {
    assert.equal(
      inheritedListenFd({ LISTEN_PID: '4242', LISTEN_FDS: bad }, 4242),
      null,
      `LISTEN_FDS=${JSON.stringify(bad)}`,
    );
    assert.equal(
      inheritedListenFd({ LISTEN_PID: bad, LISTEN_FDS: '1' }, Number(bad) || 4242),
      null,
      `LISTEN_PID=${JSON.stringify(bad)}`,
    );
  }
  assert.equal(inheritedListenFd({ LISTEN_PID: '04242', LISTEN_FDS: '01' }, 4242), 3);
});

test('unsetListenEnv() removes LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES and nothing else', () => {
  const env: Record<string, string | undefined> = {
    LISTEN_PID: '1',
    LISTEN_FDS: '1',
    LISTEN_FDNAMES: 'http',
    PATH: '/usr/bin',
  };
  unsetListenEnv(env);
  assert.deepEqual(env, { PATH: '/usr/bin' });
});

test('hooks-ingress.socket listens on the default gateway.bind:gateway.port', () => {
  assert.deepEqual(_values(SOCKET, 'ListenStream'), [`${DEFAULTS.bind}:${DEFAULTS.port}`]);
});

test('hooks-ingress.service gives the drain bound time before systemd escalates to SIGKILL', () => {
  const [stop] = _values(SERVICE, 'TimeoutStopSec');
  assert.ok(stop !== undefined && /^\d+$/.test(stop), `TimeoutStopSec=${stop} is a plain number of seconds`);
  assert.ok(Number(stop) * 1000 > DRAIN_MS, `TimeoutStopSec=${stop} exceeds the ${DRAIN_MS} ms drain`);
});

test("hooks-ingress.service leaves MemoryDenyWriteExecute off, which Node's JIT needs", () => {
  assert.deepEqual(_values(SERVICE, 'MemoryDenyWriteExecute'), ['no']);
});

test(
  `systemd-analyze security --offline=true scores hooks-ingress.service ${MAX_EXPOSURE.toFixed(1)} or lower`,
  { skip: ANALYZE_SKIP },
  () => {
    const run = spawnSync('systemd-analyze', ['security', '--offline=true', '--no-pager', SERVICE], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    assert.equal(run.error, undefined, 'systemd-analyze did not run');
    const output = `${run.stdout}${run.stderr}`;
    const score = /Overall exposure level for [^:]+: (\d+(?:\.\d+)?)/.exec(output);
    assert.ok(score, `no overall exposure level in:\n${output}`);
    assert.ok(Number(score[1]) <= MAX_EXPOSURE, `exposure ${score[1]} is above ${MAX_EXPOSURE}:\n${output}`);
  },
);

test('systemd-analyze verify finds no problem in the service and socket units', { skip: ANALYZE_SKIP }, async (t) => {
  // verify checks that each command exists, so it runs against a scratch root holding the units, stubs
  // at the commands' paths, and the one system unit (sysinit.target) that the default dependencies
  // need resolved; without --root it would look for them on this machine.
  const root = await tempDir(t, 'hooks-ingress-verify-');
  const units = join(root, 'etc/systemd/system');
  await mkdir(units, { recursive: true });
  for (const unit of [SERVICE, SOCKET]) {
    await copyFile(join(ROOT, unit), join(units, unit.slice(unit.lastIndexOf('/') + 1)));
  }
  await writeFile(join(units, 'sysinit.target'), '[Unit]\nDescription=stub\n');
  const commands = [..._values(SERVICE, 'ExecStart'), ..._values(SERVICE, 'ExecReload')];
  assert.ok(commands.length > 0);
  for (const command of commands) {
    const binary = join(root, command.split(' ')[0]!);
    await mkdir(dirname(binary), { recursive: true });
    await writeFile(binary, '#!/bin/sh\n');
    await chmod(binary, 0o755);
  }
  const run = spawnSync('systemd-analyze', [
    'verify',
    '--man=no',
    `--root=${root}`,
    'hooks-ingress.service',
    'hooks-ingress.socket',
  ], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  assert.equal(run.error, undefined, 'systemd-analyze did not run');
  assert.equal(`${run.stdout}${run.stderr}`.trim(), '', 'systemd-analyze verify reported problems');
  assert.equal(run.status, 0);
});

// The values of one key in a unit file, in order; these units use no line continuations.
function _values(unit: string, key: string): string[] {
  const lines = readFileSync(join(ROOT, unit), 'utf8').split('\n');
  return lines.filter((line) => line.startsWith(`${key}=`)).map((line) => line.slice(key.length + 1).trim());
}

function _analyzeVersion(): number | null {
  if (!process.env['PATH']?.split(delimiter).some((dir) => _executable(join(dir, 'systemd-analyze')))) return null;
  const run = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
  return Number(/^systemd (\d+)/.exec(run.stdout ?? '')?.[1] ?? 0);
}

function _executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
