import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { NEEDS } from '../lib/cli/load-config.ts';
import { main } from '../lib/cli/main.ts';
import { tempDir } from './_dir.ts';
import { captureIo } from './_io.ts';

// A config whose signing secret lives in the server's environment only, as a unit's EnvironmentFile= gives it.
const TOKEN = 'hook-token-for-the-load-spec-0123';
function config(state: string): unknown {
  return {
    hooks: {
      enabled: true,
      token: TOKEN,
      forward: { url: 'http://127.0.0.1:9/hooks', token: 'upstream-token' },
      mappings: [{
        match: { path: 'github' },
        action: 'wake',
        textTemplate: 'push',
        signature: { scheme: 'github', secret: '${GITHUB_WEBHOOK_SECRET}' },
      }],
    },
    // Unused in forward mode: a warning, for the commands that print warnings. Its token, unset in
    // the shell, would not pass the adapter's own check as the text "${TELEGRAM_BOT_TOKEN}".
    channels: { telegram: { botToken: '${TELEGRAM_BOT_TOKEN}' } },
    state: { dir: state },
  };
}

async function setUp(t: Parameters<typeof tempDir>[0]): Promise<{ file: string; state: string }> {
  const dir = await tempDir(t);
  const state = join(dir, 'state');
  await mkdir(state);
  const file = join(dir, 'config.json');
  await writeFile(file, JSON.stringify(config(state)));
  return { file, state };
}

async function run(argv: string[], env: Record<string, string> = {}) {
  const { io, out } = captureIo({ HOME: '/nonexistent', ...env });
  const code = await main(argv, io);
  return { code, ...out };
}

test('events, runs and outbox read the state directory without an unrelated secret set, and print no warnings', async (t) => {
  const { file } = await setUp(t);
  for (const command of ['events', 'runs', 'outbox']) {
    assert.deepEqual(await run([command, '-c', file]), { code: 0, stdout: '', stderr: '' }, command);
  }
});

test('a reading command needs the variables of state.dir, and names the one missing', async (t) => {
  const { file } = await setUp(t);
  await writeFile(file, JSON.stringify({ ...(config('x') as object), state: { dir: '${STATE_DIR}' } }));
  const missing = await run(['events', '-c', file]);
  assert.deepEqual(missing, {
    code: 1,
    stdout: '',
    stderr: `hooks-ingress events: invalid config ${file}:\n  state.dir: environment variable STATE_DIR is not set\n`,
  });
  const dir = join(file, '..', 'state');
  assert.equal((await run(['events', '-c', file], { STATE_DIR: dir })).code, 0);
});

test('config get hooks.token needs only the variables inside hooks.token, and prints no warnings', async (t) => {
  const { file } = await setUp(t);
  assert.deepEqual(await run(['config', 'get', '-c', file, 'hooks.token']), {
    code: 0,
    stdout: `${TOKEN}\n`,
    stderr: '',
  });
  const secret = await run(['config', 'get', '-c', file, 'hooks.mappings[0].signature.secret']);
  assert.equal(secret.code, 1);
  assert.equal(
    secret.stderr,
    `hooks-ingress config get: invalid config ${file}:\n  hooks.mappings[0].signature.secret: environment variable GITHUB_WEBHOOK_SECRET is not set\n`,
  );
  const set = await run(['config', 'get', '-c', file, 'hooks.mappings[0].signature.secret'], {
    GITHUB_WEBHOOK_SECRET: 'gh-secret',
  });
  assert.deepEqual(set, { code: 0, stdout: 'gh-secret\n', stderr: '' });
});

test('check needs every variable and says each missing one once; check prints the warnings', async (t) => {
  const { file } = await setUp(t);
  const missing = await run(['check', '-c', file], { TELEGRAM_BOT_TOKEN: '123:abc' });
  assert.deepEqual(missing, {
    code: 1,
    stdout: '',
    stderr:
      `hooks-ingress check: invalid config ${file}:\n  hooks.mappings[0].signature.secret: environment variable GITHUB_WEBHOOK_SECRET is not set\n`,
  });
  const ok = await run(['check', '-c', file], { GITHUB_WEBHOOK_SECRET: 'gh-secret', TELEGRAM_BOT_TOKEN: '123:abc' });
  assert.equal(ok.code, 0);
  assert.match(ok.stderr, /^hooks-ingress check: warning: channels\.telegram: is not used in forward mode/m);
});

test('every command that reads the config has its need in the one table', () => {
  assert.deepEqual(Object.keys(NEEDS).sort(), [
    'check',
    'config get',
    'events',
    'inspect',
    'outbox',
    'reload',
    'requests',
    'runs',
    'send',
    'serve',
    'sign',
    'status',
    'try',
  ]);
  for (const reader of ['events', 'runs', 'outbox', 'requests', 'reload', 'status', 'inspect']) {
    assert.deepEqual(NEEDS[reader], { of: 'state' });
  }
});

test('an unknown key that holds an unset variable is still named: by config get (not as a key it cannot check) and by check beside the variable', async (t) => {
  const { file } = await setUp(t);
  // "channel" for "channels": the unknown key is the mistake, whatever the variable inside it.
  const { channels, ...rest } = config('x') as { channels: unknown };
  await writeFile(file, JSON.stringify({ ...rest, channel: channels }));
  const get = await run(['config', 'get', '-c', file, 'hooks.token'], { GITHUB_WEBHOOK_SECRET: 'gh-secret' });
  assert.deepEqual(get, {
    code: 1,
    stdout: '',
    stderr: `hooks-ingress config get: invalid config ${file}:\n  channel: unknown key (did you mean "channels"?)\n`,
  });
  const checked = await run(['check', '-c', file], { GITHUB_WEBHOOK_SECRET: 'gh-secret' });
  assert.equal(checked.code, 1);
  assert.match(checked.stderr, /^ {2}channel: unknown key \(did you mean "channels"\?\)$/m);
  assert.match(
    checked.stderr,
    /^ {2}channel\.telegram\.botToken: environment variable TELEGRAM_BOT_TOKEN is not set$/m,
  );
});

test('config get needs no deno binary for a key outside the transform settings (the server finds its own on its PATH)', async (t) => {
  const { file } = await setUp(t);
  const base = config('x') as { hooks: Record<string, unknown> };
  await writeFile(file, JSON.stringify({ ...base, hooks: { ...base.hooks, transformRuntime: 'deno' } }));
  const noDeno = { PATH: '/nonexistent', GITHUB_WEBHOOK_SECRET: 'gh-secret' };
  assert.deepEqual(await run(['config', 'get', '-c', file, 'hooks.token'], noDeno), {
    code: 0,
    stdout: `${TOKEN}\n`,
    stderr: '',
  });
  // The key that names the runtime still needs it found, and check needs everything.
  if (!('Deno' in globalThis)) {
    assert.equal((await run(['config', 'get', '-c', file, 'hooks.transformRuntime'], noDeno)).code, 1);
    assert.equal((await run(['check', '-c', file], noDeno)).code, 1);
  }
});
