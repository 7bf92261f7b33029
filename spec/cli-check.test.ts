import assert from 'node:assert/strict';
import { chmod, mkdir, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { main } from '../lib/cli/main.ts';
import { configFile, IS_DENO } from './_cli.ts';
import { captureIo } from './_io.ts';

const METRICS_OFF =
  'hooks-ingress check: note: GET /metrics is off (it answers 404): set gateway.auth.token to turn it on; scrape it with that token as Bearer\n';

async function check(
  t: import('node:test').TestContext,
  config: unknown,
  transforms: Record<string, string> = {},
  setup: (dir: string, path: string) => Promise<void> = async () => {},
  env: Record<string, string> = {},
) {
  const { dir, config: path } = await configFile(t, config, 'hooks-check-');
  await mkdir(join(dir, 'hooks', 'transforms'), { recursive: true });
  for (const [name, source] of Object.entries(transforms)) {
    await writeFile(join(dir, 'hooks', 'transforms', name), source);
  }
  await setup(dir, path);
  const { io, out } = captureIo({ HOME: dir, ...env });
  return { code: await main(['check', '-c', path], io), path, ...out };
}

/** `check` of a config written 0600, changed by `setup` (modes, files beside it) before it runs. */
function checkWith(
  t: import('node:test').TestContext,
  config: unknown,
  env: Record<string, string>,
  setup?: (dir: string, path: string) => Promise<void>,
) {
  return check(t, config, {}, setup, env);
}

test("check says ok for the quick start's config, and warns that runs and heartbeats cannot work yet", async (t) => {
  const result = await check(t, { hooks: { enabled: true, token: 'a-token-for-check' } });
  assert.equal(result.code, 0);
  assert.equal(result.stdout, `${result.path}: ok\n`);
  assert.equal(
    result.stderr,
    'hooks-ingress check: warning: agent "main" has no model and agents.defaults.model is not set: agent runs and heartbeats will fail\n' +
      'hooks-ingress check: warning: no channel is configured (channels): run replies (deliver defaults to true) and heartbeat replies will not be delivered\n' +
      METRICS_OFF,
  );
});

test('check warns, one line, about a model whose provider is missing', async (t) => {
  const result = await check(t, {
    hooks: { enabled: true, token: 'a-token-for-check' },
    agents: { defaults: { model: 'openai/gpt-4o-mini' } },
    channels: { telegram: { botToken: '123:abc', defaultTo: '42' } },
  });
  assert.equal(result.code, 0);
  assert.equal(
    result.stderr,
    'hooks-ingress check: warning: agents.defaults.model: provider "openai" is not configured (models.providers.openai)\n' +
      METRICS_OFF,
  );
});

test('check says nothing about /metrics once gateway.auth.token is set', async (t) => {
  const result = await check(t, {
    hooks: { enabled: true, token: 'a-token-for-check' },
    gateway: { auth: { token: 'a-gateway-token-for-check' } },
    agents: { defaults: { model: 'openai/gpt-4o-mini' } },
    models: {
      providers: { openai: { api: 'openai-completions', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-check' } },
    },
    channels: { telegram: { botToken: '123:abc', defaultTo: '42' } },
  });
  assert.equal(result.code, 0);
  assert.equal(result.stderr, '');
});

test('check prints errors first, then the warnings and notes, and exits 1', async (t) => {
  const result = await check(
    t,
    {
      hooks: {
        enabled: true,
        token: 'a-token-for-check',
        mappings: [{ match: { path: 'ci' }, transform: { module: 'broken.js' } }],
      },
    },
    { 'broken.js': 'export default (' },
  );
  assert.equal(result.code, 1);
  assert.equal(result.stdout, '');
  const lines = result.stderr.trimEnd().split('\n');
  assert.equal(lines[0], `hooks-ingress check: invalid config ${result.path}:`);
  assert.match(lines[1]!, /^ {2}hooks\.mappings\[0\]\.transform: /);
  // The error's detail may run over several lines (Deno's SyntaxError shows the source); the
  // warnings and the note come after all of it.
  const first = lines.findIndex((l) => /^hooks-ingress check: (warning|note): /.test(l));
  assert.ok(first > 1, result.stderr);
  assert.deepEqual(
    lines.slice(first).map((l) => /^hooks-ingress check: (warning|note): /.exec(l)?.[1]),
    // On Node, the first says what the transform can still reach there.
    [...(IS_DENO ? [] : ['warning']), 'warning', 'warning', 'note'],
    result.stderr,
  );
});

test("check warns about a mapping without a path, or matched by source alone, that would take the gmail preset's requests", async (t) => {
  const hooks = {
    enabled: true,
    token: 'a-token-for-check',
    allowRequestSessionKey: true,
    allowedSessionKeyPrefixes: ['hook:'],
    presets: ['gmail'],
  };
  const result = await check(t, {
    hooks: {
      ...hooks,
      mappings: [
        { match: { source: 'gmail' }, action: 'wake', textTemplate: 'mail' },
        { match: { path: 'gmail' }, action: 'wake', textTemplate: 'my own gmail mapping' },
        { action: 'wake', textTemplate: 'anything' },
        { match: { path: 'github' }, action: 'wake', textTemplate: 'push' },
      ],
    },
    agents: { defaults: { model: 'local/echo' } },
    models: { providers: { local: { api: 'command', command: ['cat'] } } },
    channels: { telegram: { botToken: '123:abc', defaultTo: '42' } },
  });
  assert.equal(result.code, 0, result.stderr);
  const shadow =
    'the gmail hook too: it shadows the gmail preset for requests made with hooks.token (those made with hooks.gmail.hookToken reach only mappings on the path "gmail"); give it a match.path\n';
  assert.equal(
    result.stderr,
    `hooks-ingress check: warning: hooks.mappings[0].match: is matched by source alone, so it takes any hook whose payload names that source, ${shadow}` +
      `hooks-ingress check: warning: hooks.mappings[2].match: has no path, so it takes any hook, ${shadow}` +
      METRICS_OFF,
  );
  // Without the preset there is nothing to shadow.
  const plain = await check(t, {
    hooks: { enabled: true, token: 'a-token-for-check', mappings: [{ action: 'wake', textTemplate: 'anything' }] },
    agents: { defaults: { model: 'local/echo' } },
    models: { providers: { local: { api: 'command', command: ['cat'] } } },
    channels: { telegram: { botToken: '123:abc', defaultTo: '42' } },
  });
  assert.equal(plain.stderr, METRICS_OFF);
});

test('check refuses a value nested 10,000 arrays deep with one line naming its key path, not a stack overflow', async (t) => {
  const deep = `${'['.repeat(10_000)}"\${HOME}"${']'.repeat(10_000)}`;
  const result = await check(
    t,
    `{"hooks":{"enabled":true,"token":"a-token-for-check","mappings":[{"match":{"path":"x"},"filter":{"payload":{"a":${deep}}}}]}}`,
  );
  assert.equal(result.code, 1);
  assert.equal(result.stdout, '');
  // The file is level 1, `a` level 7: the array at level 65 is the first one too deep.
  const at = `hooks.mappings[0].filter.payload.a${'[0]'.repeat(58)}`;
  assert.equal(
    result.stderr,
    `hooks-ingress check: invalid config ${result.path}:\n  ${result.path}: ${at}: may nest objects and arrays at most 64 levels deep\n`,
  );
});

const READY = {
  models: { providers: { ollama: { api: 'openai-completions', baseUrl: 'http://127.0.0.1:11434/v1' } } },
  agents: { defaults: { model: 'ollama/llama3.2' } },
  channels: { telegram: { botToken: '${TELEGRAM_TOKEN}', defaultTo: '42' } },
};

test('check warns about a world-readable config file that holds secrets, naming the keys; ${NAME} references are not secrets', async (t) => {
  const config = {
    hooks: { enabled: true, token: 'a-literal-hook-token' },
    ...READY,
    gateway: { auth: { token: '${GATEWAY_TOKEN}' } },
  };
  const env = { TELEGRAM_TOKEN: '1:x', GATEWAY_TOKEN: 'a-gateway-token-here' };
  const open = await checkWith(t, config, env, (_dir, path) => chmod(path, 0o644));
  assert.equal(open.code, 0, open.stderr);
  assert.equal(
    open.stderr,
    `hooks-ingress check: warning: ${open.path} is world-readable (mode 0644) and holds a secret in hooks.token: chmod o-r it, or write \${NAME} there and pass the value in the environment (or use hooks.tokenFile)\n`,
  );
  const referenced = await checkWith(t, { ...config, hooks: { enabled: true, token: '${HOOK_TOKEN}' } }, {
    ...env,
    HOOK_TOKEN: 'a-hook-token-from-env',
  }, (_dir, path) => chmod(path, 0o644));
  assert.equal(referenced.stderr, '');
  const owner = await checkWith(t, config, env);
  assert.equal(owner.stderr, '', 'a 0600 file may hold secrets');
});

test('check warns about a config file and a transforms directory others can write, and a link out of the transforms directory', async (t) => {
  const config = {
    hooks: {
      enabled: true,
      token: 'a-literal-hook-token',
      mappings: [{ match: { path: 't' }, transform: { module: 't.js' } }],
    },
    ...READY,
  };
  const result = await checkWith(t, config, { TELEGRAM_TOKEN: '1:x' }, async (dir, path) => {
    const root = join(dir, 'hooks', 'transforms');
    await mkdir(root, { recursive: true });
    await writeFile(join(root, 't.js'), 'export default () => null;\n');
    await symlink(path, join(root, 'config-link.json'));
    await chmod(path, 0o620);
    await chmod(root, 0o777);
  });
  assert.equal(result.code, 0, result.stderr);
  const root = join(dirname(result.path), 'hooks', 'transforms');
  const lines = result.stderr.split('\n').filter((line) =>
    !line.includes('transforms run on Node') && !line.includes(': note: ')
  );
  assert.deepEqual(lines, [
    `hooks-ingress check: warning: ${result.path} is group-writable (mode 0620): whoever can write it decides the token and runs transforms and commands as this server; chmod go-w it`,
    `hooks-ingress check: warning: ${root} is world-writable (mode 0777): whoever can write it runs code in every transform call; chmod go-w it`,
    `hooks-ingress check: warning: ${
      join(root, 'config-link.json')
    } is a symbolic link to ${result.path}, outside the transforms directory: every transform can read it through the link`,
    '',
  ]);
});

test('check fails, as serve refuses to start, when a link in the transforms directory leads into the state directory', async (t) => {
  const result = await check(
    t,
    { hooks: { enabled: true, token: 'a-token-for-check' }, state: { dir: 'state' } },
    {},
    async (dir) => {
      await mkdir(join(dir, 'state'));
      await symlink(join(dir, 'state'), join(dir, 'hooks', 'transforms', 'state-link'));
    },
  );
  assert.equal(result.code, 1);
  assert.equal(result.stdout, '');
  const state = join(dirname(result.path), 'state');
  assert.ok(
    result.stderr.includes(
      `hooks-ingress check: cannot use state directory ${state}: the transforms directory ${
        join(dirname(result.path), 'hooks', 'transforms')
      } holds a symbolic link ${
        join(dirname(result.path), 'hooks', 'transforms', 'state-link')
      } to it: transforms may read it through the link; remove the link or use another state directory\n`,
    ),
    result.stderr,
  );
});

test('check warns about a deno binary for transforms that group or others can write, and not about one only its owner can', async (t) => {
  const config = {
    hooks: { enabled: true, token: '${HOOK_TOKEN}', transformRuntime: 'deno', transformDenoPath: 'bin/deno' },
  };
  const withMode = (mode: number) =>
    checkWith(t, config, { HOOK_TOKEN: 'a-hook-token-from-env' }, async (dir) => {
      await mkdir(join(dir, 'bin'));
      await writeFile(join(dir, 'bin', 'deno'), '#!/bin/sh\nexit 0\n');
      await chmod(join(dir, 'bin', 'deno'), mode);
    });
  const warning = (result: { stderr: string }) =>
    result.stderr.split('\n').filter((line) => line.includes('deno binary'));
  const group = await withMode(0o775);
  assert.equal(group.code, 0, group.stderr);
  assert.deepEqual(warning(group), [
    `hooks-ingress check: warning: ${
      join(dirname(group.path), 'bin', 'deno')
    } (the deno binary of hooks.transformRuntime "deno") is group-writable (mode 0775): whoever can write it runs native code as this server, outside the transform sandbox; chmod go-w it`,
  ]);
  const world = await withMode(0o757);
  assert.match(
    warning(world).join('\n'),
    /is world-writable \(mode 0757\): whoever can write it runs native code as this server/,
  );
  assert.deepEqual(warning(await withMode(0o755)), []);
});
