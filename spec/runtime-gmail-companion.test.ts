import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { GmailDeps } from '../lib/server/gmail-companion.ts';
import { gmailCommand } from '../lib/cli/gmail.ts';
import { BACKOFF, companionEnv, STOP_GRACE_MS } from '../lib/runtime/gmail-companion.ts';
import { RELAY_LIMITS } from '../lib/runtime/relay.ts';
import { ACCOUNT, BOUNDED_WAIT, fakeGog, gmailFiles } from './_gmail.ts';

// The supervisor that keeps gog running, driven as `gmail run` drives it.

const { tmp, capture, setupRun } = await gmailFiles();

const EXPECTED_ARGS = [
  'gmail',
  'watch',
  'serve',
  '--account',
  ACCOUNT,
  '--hook-url',
  'http://127.0.0.1:8789/hooks/gmail',
  '--hook-token',
  'gmail-run-token-0123456789',
  '--include-body',
  '--max-bytes',
  '20000',
];

test('the supervisor (gmail run) starts gog with the companion arguments and restarts it with doubling backoff that resets after a long run', async () => {
  const { dir, file, bin } = await setupRun();
  const log = join(dir, 'argv.log');
  await fakeGog(bin, `printf '%s\\n' "$@" > '${log}'\necho "gog says hi"\necho "gog complains" >&2\nexit 3`);
  const stop = new AbortController();
  let clock = 0;
  let spawned = 0;
  const slept: number[] = [];
  const deps: GmailDeps = {
    now: () => clock,
    spawn: (f, args, env) => {
      const child = spawn(f, [...args], { env: { ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      // The third run counts as a long one: the next delay starts over.
      if (++spawned === 3) clock += BACKOFF.resetAfterMs;
      return child;
    },
    sleep: async (ms) => {
      slept.push(ms);
      if (slept.length === 10) stop.abort();
    },
  };
  const { io, out } = capture({ PATH: `${bin}:${process.env['PATH']}` }, stop.signal);
  assert.equal(await gmailCommand(['run', '--config', file], io, deps), 0, out.stderr);
  assert.deepEqual(slept, [1000, 2000, 1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]);
  assert.equal(spawned, 10);
  assert.deepEqual((await readFile(log, 'utf8')).trimEnd().split('\n'), EXPECTED_ARGS);
  assert.match(out.stdout, /gog says hi/);
  assert.match(out.stderr, /gog complains/);
  assert.match(out.stderr, /gog exited with code 3 after 60\.0 s; starting it again in 1 s/);
  assert.match(out.stderr, /--hook-token '<redacted>'/);
  assert.doesNotMatch(out.stderr, /run-token-0123456789abcdef|gmail-run-token-0123456789/);
});

test('the supervisor (gmail run) gives gog a minimal environment: never the hook token or an API key, but its own GOG_* settings, HOME, PATH and the XDG directories', async () => {
  const { dir, file, bin } = await setupRun();
  const dump = join(dir, 'env.txt');
  await fakeGog(bin, `env > '${dump}'\nexit 0`);
  const stop = new AbortController();
  const deps: GmailDeps = { sleep: async () => stop.abort() };
  const env = {
    PATH: `${bin}:${process.env['PATH']}`,
    XDG_CONFIG_HOME: join(dir, 'xdg'),
    GOG_KEYRING_PASSWORD: 'keyring-pass',
    LANG: 'C.UTF-8',
    HOOKS_TOKEN: 'run-token-0123456789abcdef',
    OPENAI_API_KEY: 'sk-not-for-gog',
    AWS_SECRET_ACCESS_KEY: 'aws-not-for-gog',
  };
  const { io, out } = capture(env, stop.signal);
  assert.equal(await gmailCommand(['run', '--config', file], io, deps), 0, out.stderr);
  const seen = Object.fromEntries(
    (await readFile(dump, 'utf8')).trimEnd().split('\n').map((
      line,
    ) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  for (const name of ['HOOKS_TOKEN', 'OPENAI_API_KEY', 'AWS_SECRET_ACCESS_KEY']) {
    assert.equal(seen[name], undefined, name);
  }
  assert.ok(
    !Object.values(seen).some((value) => value.includes('run-token-0123456789abcdef')),
    "the hook token is nowhere in gog's environment",
  );
  assert.equal(seen['HOME'], tmp);
  assert.equal(seen['PATH'], env.PATH);
  assert.equal(seen['XDG_CONFIG_HOME'], env.XDG_CONFIG_HOME);
  assert.equal(seen['GOG_KEYRING_PASSWORD'], 'keyring-pass');
  assert.equal(seen['LANG'], 'C.UTF-8');
});

test('companionEnv() keeps PATH, HOME, the XDG and GOG_ variables, locale, time zone, D-Bus, TLS and proxy settings, and nothing else', () => {
  const kept = companionEnv({
    PATH: '/bin',
    HOME: '/h',
    USER: 'u',
    LOGNAME: 'u',
    TMPDIR: '/t',
    TZ: 'UTC',
    LANG: 'C',
    LC_ALL: 'C',
    XDG_RUNTIME_DIR: '/run/user/1',
    DBUS_SESSION_BUS_ADDRESS: 'unix:path=/run/user/1/bus',
    GOG_ACCOUNT: 'a@b',
    GOG_KEYRING_BACKEND: 'file',
    SSL_CERT_FILE: '/c',
    HTTPS_PROXY: 'http://p:3128',
    no_proxy: 'localhost',
    HOOKS_TOKEN: 'x',
    ANTHROPIC_API_KEY: 'y',
    CREDENTIALS_DIRECTORY: '/run/credentials/x',
    NODE_OPTIONS: '--inspect',
    UNSET: undefined,
  });
  assert.deepEqual(Object.keys(kept).sort(), [
    'DBUS_SESSION_BUS_ADDRESS',
    'GOG_ACCOUNT',
    'GOG_KEYRING_BACKEND',
    'HOME',
    'HTTPS_PROXY',
    'LANG',
    'LC_ALL',
    'LOGNAME',
    'PATH',
    'SSL_CERT_FILE',
    'TMPDIR',
    'TZ',
    'USER',
    'XDG_RUNTIME_DIR',
    'no_proxy',
  ]);
});

test('the supervisor (gmail run) passes on the output of a gog that writes without pause (yes) at a bounded pace', async () => {
  const { file, bin } = await setupRun();
  await fakeGog(bin, 'exec yes');
  const stop = new AbortController();
  let seconds = 0;
  const started = performance.now();
  const { io, out } = capture({ PATH: `${bin}:${process.env['PATH']}` }, stop.signal, () => {
    if (performance.now() - started < 1500 || stop.signal.aborted) return;
    seconds = (performance.now() - started) / 1000;
    stop.abort();
  });
  assert.equal(await gmailCommand(['run', '--config', file], io), 0, out.stderr);
  // Per second begun, a second's worth and the one read that crossed it; unpaced, yes writes hundreds of MiB a second.
  const bound = (Math.ceil(seconds) + 1) * (RELAY_LIMITS.bytesPerSecond + 64 * 1024);
  assert.ok(
    out.stdout.length <= bound,
    `relayed ${out.stdout.length} bytes in ${seconds.toFixed(1)} s, bound ${bound}`,
  );
  assert.match(out.stdout, /^(y\n)+$/);
});

test('the supervisor (gmail run) passes an abort on to gog as SIGTERM and exits 0 once it stopped', async () => {
  const { dir, file, bin } = await setupRun();
  const log = join(dir, 'signals.log');
  await fakeGog(bin, `trap 'echo terminated >> "${log}"; exit 0' TERM\necho ready\n${BOUNDED_WAIT}`);
  const stop = new AbortController();
  const { io, out } = capture({ PATH: `${bin}:${process.env['PATH']}` }, stop.signal, (all) => {
    if (all.includes('ready')) stop.abort();
  });
  // The real spawn and sleep: the grace timer is cancelled as soon as gog exits.
  assert.equal(await gmailCommand(['run', '-c', file], io), 0, out.stderr);
  assert.equal(await readFile(log, 'utf8'), 'terminated\n');
  assert.match(out.stderr, /gog stopped/);
  assert.doesNotMatch(out.stderr, /gave-up/);
});

test('the supervisor (gmail run) passes SIGINT on to gog', async () => {
  const { dir, file, bin } = await setupRun();
  const log = join(dir, 'signals.log');
  await fakeGog(bin, `trap 'echo interrupted >> "${log}"; exit 0' INT\necho ready\n${BOUNDED_WAIT}`);
  const deps: GmailDeps = {
    sleep: (_ms, signal) => new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true })),
  };
  const { io, out } = capture({ PATH: `${bin}:${process.env['PATH']}` }, undefined, (all) => {
    if (all.includes('ready')) process.emit('SIGINT');
  });
  assert.equal(await gmailCommand(['run', '-c', file], io, deps), 0, out.stderr);
  assert.equal(await readFile(log, 'utf8'), 'interrupted\n');
  assert.doesNotMatch(out.stderr, /gave-up/);
});

test('the supervisor (gmail run) kills a gog that ignores SIGTERM once the grace period is over', async () => {
  const { file, bin } = await setupRun();
  await fakeGog(bin, `trap '' TERM\necho ready\n${BOUNDED_WAIT}`);
  const stop = new AbortController();
  const asked: number[] = [];
  const deps: GmailDeps = {
    sleep: async (ms) => void asked.push(ms),
  };
  const { io, out } = capture({ PATH: `${bin}:${process.env['PATH']}` }, stop.signal, (all) => {
    if (all.includes('ready')) stop.abort();
  });
  assert.equal(await gmailCommand(['run', '-c', file], io, deps), 0, out.stderr);
  assert.deepEqual(asked, [STOP_GRACE_MS]);
  assert.match(out.stderr, /gog stopped/);
  assert.doesNotMatch(out.stderr, /gave-up/);
});

test('the supervisor (gmail run) treats a gog that cannot start like one that exited', async () => {
  const { file } = await setupRun();
  const stop = new AbortController();
  const deps: GmailDeps = {
    which: async () => join(tmp, 'no-such-dir', 'gog'),
    sleep: async () => stop.abort(),
  };
  const { io, out } = capture({}, stop.signal);
  assert.equal(await gmailCommand(['run', '-c', file], io, deps), 0);
  assert.match(out.stderr, /gog could not run: .*ENOENT.*; starting it again in 1 s/);
});
