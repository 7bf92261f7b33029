import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { buildConfig, loadConfig } from '../lib/config/load.ts';
import { DEFAULT_HEARTBEAT_PROMPT } from '../lib/config/normalise.ts';
import type { Config, ConfigResult, Env } from '../lib/config/types.ts';
import { withDir } from './_dir.ts';

function accepted(result: ConfigResult): Config {
  assert.ok(result.ok, result.ok ? '' : result.problems.join('\n'));
  return result.config;
}

function refused(result: ConfigResult): string[] {
  assert.ok(!result.ok, 'expected the config to be refused');
  return result.problems;
}

// A config held in memory, its directory pinned so relative paths are predictable.
function build(raw: unknown, env: Env = {}): Promise<ConfigResult> {
  return buildConfig(raw, { file: null, env, dir: '/etc/hooks-ingress' });
}

async function config(raw: unknown, env: Env = {}): Promise<Config> {
  return accepted(await build(raw, env));
}

async function problems(raw: unknown, env: Env = {}): Promise<string[]> {
  return refused(await build(raw, env));
}

// --- loading -------------------------------------------------------------------------------

test('loadConfig() reads a JSONC file with comments and trailing commas', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'config.json');
    await writeFile(
      file,
      `// operator notes
{
  /* the hook endpoint */
  "hooks": {
    "enabled": true,
    "token": "hook-secret", // dedicated
    "path": "/in",
  },
  "gateway": { "port": 9000, },
}
`,
    );
    const result = await loadConfig(file, {});
    const loaded = accepted(result);
    assert.equal(loaded.file, file);
    assert.equal(loaded.dir, dir);
    assert.equal(loaded.hooks.enabled, true);
    assert.equal(loaded.hooks.token, 'hook-secret');
    assert.equal(loaded.hooks.path, '/in');
    assert.equal(loaded.gateway.port, 9000);
    assert.ok(result.ok);
    assert.deepEqual(result.ignored, []);
  });
});

test('loadConfig() reports a missing file by its path', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'absent.json');
    assert.deepEqual(refused(await loadConfig(file, {})), [`cannot read ${file}: no such file`]);
  });
});

test('loadConfig() reports a JSONC syntax error with the file and its line', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'config.json');
    await writeFile(file, '{\n  "hooks": { "enabled": tru }\n}\n');
    const found = refused(await loadConfig(file, {}));
    assert.equal(found.length, 1);
    assert.ok(found[0]!.startsWith(`${file}: `), found[0]);
    assert.match(found[0]!, /\b2\b/);
  });
});

test('loadConfig() refuses a file whose value is not an object', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'config.json');
    await writeFile(file, '[]');
    assert.deepEqual(refused(await loadConfig(file, {})), ['must be an object, got array']);
  });
});

test('buildConfig() without a file resolves relative paths against the working directory', async () => {
  const built = accepted(await buildConfig({ state: { dir: 'state' } }, { file: null, env: {} }));
  assert.equal(built.file, null);
  assert.equal(built.dir, process.cwd());
  assert.equal(built.stateDir, resolve(process.cwd(), 'state'));
});

// --- defaults ------------------------------------------------------------------------------

test('buildConfig() applies every default to an empty config', async () => {
  const built = await config({});
  assert.deepEqual(built, {
    file: null,
    dir: '/etc/hooks-ingress',
    hooks: {
      enabled: false,
      token: null,
      path: '/hooks',
      maxBodyBytes: 262_144,
      allowedAgentIds: null,
      defaultSessionKey: null,
      allowRequestSessionKey: false,
      allowedSessionKeyPrefixes: null,
      presets: [],
      mappings: [],
      transformsDir: '/etc/hooks-ingress/hooks/transforms',
      transformTimeoutMs: 5000,
      transformMaxResultBytes: 1_048_576,
      transformRuntime: 'server',
      transformDenoPath: null,
      gmail: {},
      authRateLimit: { maxFailures: 20, windowSeconds: 60, lockoutSeconds: 60 },
      idempotencyTtlSeconds: 86_400,
      allowCompletionReply: false,
      onComplete: null,
      callbackOrigins: [],
      unknownPayloadFields: 'refuse',
      ledger: {
        enabled: true,
        maxEntries: 10_000,
        maxBytes: 67_108_864,
        maxAgeSeconds: 604_800,
        maxBodyBytes: 65_536,
        coalesceSeconds: 60,
        unauthenticated: { maxEntries: 2_000, maxBytes: 4_194_304, maxBodyBytes: 16_384 },
      },
      forward: null,
      maxQueuedRuns: 1000,
      agent: {},
      wake: {},
      maxEventBytes: 262144,
      maxBacklogEvents: 100000,
      maxBacklogBytes: 67108864,
    },
    agents: {
      models: {},
      model: null,
      heartbeatEveryMs: 0,
      list: [],
      defaultAgentId: 'main',
      timeoutSeconds: 600,
      maxConcurrent: 4,
      historyMaxChars: 32_000,
      heartbeat: { prompt: DEFAULT_HEARTBEAT_PROMPT, target: 'last', ackMaxChars: 300 },
    },
    providers: {},
    gateway: { bind: '127.0.0.1', port: 8789, trustedProxies: [], authToken: null },
    stateDir: null,
    channels: {},
    alerts: null,
    log: { requests: 'all', maxLinesPerSecond: 200 },
    inspector: null,
  });
});

test('buildConfig() defaults each hooks.authRateLimit field on its own', async () => {
  const built = await config({ hooks: { authRateLimit: { windowSeconds: 5 } } });
  assert.deepEqual(built.hooks.authRateLimit, { maxFailures: 20, windowSeconds: 5, lockoutSeconds: 60 });
  const all = await config({ hooks: { authRateLimit: { maxFailures: 3, windowSeconds: 10, lockoutSeconds: 300 } } });
  assert.deepEqual(all.hooks.authRateLimit, { maxFailures: 3, windowSeconds: 10, lockoutSeconds: 300 });
});

test('buildConfig() keeps every value the file sets', async () => {
  const built = await config({
    hooks: {
      enabled: true,
      token: ' tok ',
      maxBodyBytes: 1024,
      allowedAgentIds: ['main', '*'],
      defaultSessionKey: 'hook:inbox',
      allowRequestSessionKey: true,
      allowedSessionKeyPrefixes: ['hook:'],
      presets: ['gmail'],
      mappings: [{ match: { path: 'x' }, action: 'wake', textTemplate: 'x' }],
      idempotencyTtlSeconds: 60,
    },
    agents: {
      defaults: { models: { 'anthropic/claude': { alias: 'claude' } }, model: 'anthropic/claude' },
      list: [{ id: 'ops', workspace: '/srv/ops', model: 'anthropic/claude' }],
    },
    gateway: { bind: '0.0.0.0', port: 0, auth: { token: 'gateway-secret' } },
    state: { dir: '/var/lib/hooks' },
  });
  assert.equal(built.hooks.token, 'tok');
  assert.equal(built.hooks.maxBodyBytes, 1024);
  assert.deepEqual(built.hooks.allowedAgentIds, ['main', '*']);
  assert.equal(built.hooks.defaultSessionKey, 'hook:inbox');
  assert.equal(built.hooks.allowRequestSessionKey, true);
  assert.deepEqual(built.hooks.allowedSessionKeyPrefixes, ['hook:']);
  assert.deepEqual(built.hooks.presets, ['gmail']);
  assert.deepEqual(built.hooks.mappings.map((m) => [m.id, m.action, m.match.path]), [['mapping-1', 'wake', 'x'], [
    'preset:gmail',
    'agent',
    'gmail',
  ]]);
  assert.equal(built.hooks.idempotencyTtlSeconds, 60);
  assert.deepEqual(built.agents.models, { 'anthropic/claude': { alias: 'claude' } });
  assert.equal(built.agents.model, 'anthropic/claude');
  assert.deepEqual(built.agents.list, [{
    id: 'ops',
    default: false,
    workspace: '/srv/ops',
    model: 'anthropic/claude',
  }]);
  assert.equal(built.gateway.bind, '0.0.0.0');
  assert.equal(built.gateway.port, 0);
  assert.equal(built.gateway.authToken, 'gateway-secret');
  assert.equal(built.stateDir, '/var/lib/hooks');
});

test('buildConfig() picks the agent marked default, else the first, else "main"', async () => {
  assert.equal(
    (await config({ agents: { list: [{ id: 'a' }, { id: 'b', default: true }] } })).agents.defaultAgentId,
    'b',
  );
  assert.equal((await config({ agents: { list: [{ id: 'a' }, { id: 'b' }] } })).agents.defaultAgentId, 'a');
  assert.equal(
    (await config({ agents: { list: [{ id: 'a', default: false }, { id: 'b' }] } })).agents.defaultAgentId,
    'a',
  );
  assert.equal((await config({ agents: { list: [] } })).agents.defaultAgentId, 'main');
  assert.equal((await config({ agents: {} })).agents.defaultAgentId, 'main');
});

test('buildConfig() refuses two default agents and duplicate agent ids', async () => {
  assert.deepEqual(await problems({ agents: { list: [{ id: 'a', default: true }, { id: 'b', default: true }] } }), [
    'agents.list: may mark at most one agent as default',
  ]);
  assert.deepEqual(await problems({ agents: { list: [{ id: 'a' }, { id: 'b' }, { id: 'a' }] } }), [
    'agents.list[2].id: duplicates agent "a"',
  ]);
});

test('buildConfig() checks agent ids, naming the item by index', async () => {
  assert.deepEqual(await problems({ agents: { list: [{ id: 'ok' }, { id: 'a b' }, { workspace: '/x' }] } }), [
    'agents.list[1].id: may contain only letters, digits, ".", "_" and "-"',
    'agents.list[2].id: is required',
  ]);
});

test('buildConfig() resolves a relative state.dir against the config directory', async () => {
  assert.equal((await config({ state: { dir: 'state' } })).stateDir, '/etc/hooks-ingress/state');
  assert.equal((await config({ state: { dir: '/var/lib/x' } })).stateDir, '/var/lib/x');
});

// --- ${NAME} substitution ------------------------------------------------------------------

test('buildConfig() replaces ${NAME} in string values, nested and in arrays', async () => {
  const built = await config(
    {
      hooks: { token: '${HOOK_TOKEN}', path: '/${PREFIX}/in', allowedAgentIds: ['${AGENT}'] },
      gateway: { bind: '${BIND}' },
    },
    { HOOK_TOKEN: 'from-env', PREFIX: 'svc', AGENT: 'ops', BIND: '::1' },
  );
  assert.equal(built.hooks.token, 'from-env');
  assert.equal(built.hooks.path, '/svc/in');
  assert.deepEqual(built.hooks.allowedAgentIds, ['ops']);
  assert.equal(built.gateway.bind, '::1');
});

test('buildConfig() reports a missing variable once, with the key path that uses it, and not the rule its emptied value breaks', async () => {
  assert.deepEqual(await problems({ hooks: { token: '${HOOK_TOKEN}' } }), [
    'hooks.token: environment variable HOOK_TOKEN is not set',
  ]);
  assert.deepEqual(await problems({ hooks: { token: '${A}${A}' } }), [
    'hooks.token: environment variable A is not set',
  ]);
  assert.deepEqual(await problems({ gateway: { trustedProxies: ['10.0.0.1/32', '10.0.0.${LAST}'] } }), [
    'gateway.trustedProxies[1]: environment variable LAST is not set',
  ]);
  assert.deepEqual(await problems({ agents: { defaults: { models: { 'openai/gpt-5': { alias: 'gpt${V}' } } } } }), [
    'agents.defaults.models["openai/gpt-5"].alias: environment variable V is not set',
  ]);
  assert.deepEqual(await problems({ hooks: { gmail: { serve: { 'x-key': '${KEY}' } } } }), [
    'hooks.gmail.serve["x-key"]: environment variable KEY is not set',
  ]);
});

test('buildConfig() reports missing variables together with schema problems', async () => {
  const found = await problems({ hooks: { token: 'a${A}', tokn: 'x' }, gateway: { bind: 'b${B}', port: 'x' } });
  assert.deepEqual(found, [
    'hooks.token: environment variable A is not set',
    'gateway.bind: environment variable B is not set',
    'hooks.tokn: unknown key (did you mean "token"?)',
    'gateway.port: must be a number, got string',
  ]);
});

test('buildConfig() scoped to one key needs only the variables inside it; the others keep their ${NAME} text unjudged', async () => {
  const raw = {
    hooks: {
      enabled: true,
      token: '${HOOK_TOKEN}',
      mappings: [{
        match: { path: 'gh' },
        action: 'wake',
        textTemplate: 'x',
        signature: { scheme: 'github', secret: '${GITHUB_WEBHOOK_SECRET}' },
      }],
    },
    gateway: { trustedProxies: ['10.0.0.${LAST}'] },
  };
  const scoped = accepted(
    await buildConfig(raw, {
      file: null,
      env: { HOOK_TOKEN: 'hook-token-0123456789abcdef' },
      dir: '/etc/hooks-ingress',
      scope: { key: 'hooks.token' },
    }),
  );
  assert.equal(scoped.hooks.token, 'hook-token-0123456789abcdef');
  // Inside the key its variables are needed as ever; other keys are still checked.
  assert.deepEqual(refused(await buildConfig(raw, { file: null, env: {}, dir: '/', scope: { key: 'hooks' } })), [
    'hooks.token: environment variable HOOK_TOKEN is not set',
    'hooks.mappings[0].signature.secret: environment variable GITHUB_WEBHOOK_SECRET is not set',
  ]);
  assert.deepEqual(
    refused(
      await buildConfig({ ...raw, gateway: { port: 'x' } }, {
        file: null,
        env: { HOOK_TOKEN: 't' },
        dir: '/',
        scope: { key: 'hooks.token' },
      }),
    ),
    [
      'gateway.port: must be a number, got string',
    ],
  );
  // Unscoped, the same file needs every variable.
  assert.deepEqual(refused(await buildConfig(raw, { file: null, env: { HOOK_TOKEN: 't' }, dir: '/' })), [
    'hooks.mappings[0].signature.secret: environment variable GITHUB_WEBHOOK_SECRET is not set',
    'gateway.trustedProxies[0]: environment variable LAST is not set',
  ]);
});

// --- the token -----------------------------------------------------------------------------

test('buildConfig() reads hooks.tokenFile relative to the config directory, trimmed', async () => {
  await withDir(async (dir) => {
    await mkdir(join(dir, 'secrets'));
    await writeFile(join(dir, 'secrets', 'hook-token'), '  file-secret\n');
    const file = join(dir, 'config.json');
    await writeFile(file, '{ "hooks": { "enabled": true, "tokenFile": "secrets/hook-token" } }');
    const loaded = accepted(await loadConfig(file, {}));
    assert.equal(loaded.hooks.token, 'file-secret');
    assert.equal(loaded.hooks.enabled, true);
  });
});

test('buildConfig() reads an absolute hooks.tokenFile as it is', async () => {
  await withDir(async (dir) => {
    await writeFile(join(dir, 'tok'), 'abs-secret');
    const built = accepted(
      await buildConfig({ hooks: { tokenFile: join(dir, 'tok') } }, { file: null, env: {}, dir: '/nowhere' }),
    );
    assert.equal(built.hooks.token, 'abs-secret');
  });
});

test('buildConfig() reports an unreadable or empty hooks.tokenFile', async () => {
  await withDir(async (dir) => {
    const where = { file: join(dir, 'config.json'), env: {} };
    assert.deepEqual(refused(await buildConfig({ hooks: { tokenFile: 'missing' } }, where)), [
      `hooks.tokenFile: cannot read ${join(dir, 'missing')}: no such file`,
    ]);
    await writeFile(join(dir, 'blank'), ' \n');
    assert.deepEqual(refused(await buildConfig({ hooks: { tokenFile: 'blank' } }, where)), [
      `hooks.tokenFile: the file ${join(dir, 'blank')} is empty`,
    ]);
  });
});

test('buildConfig() refuses hooks.token and hooks.tokenFile together', async () => {
  assert.deepEqual(await problems({ hooks: { token: 'a', tokenFile: 'b' } }), [
    'hooks.tokenFile: cannot be set together with hooks.token',
  ]);
});

test('buildConfig() uses $CREDENTIALS_DIRECTORY/hooks-token when neither token key is set', async () => {
  await withDir(async (dir) => {
    await writeFile(join(dir, 'hooks-token'), 'cred-secret\n');
    const env = { CREDENTIALS_DIRECTORY: dir };
    assert.equal((await config({ hooks: { enabled: true } }, env)).hooks.token, 'cred-secret');
    assert.equal((await config({ hooks: { token: 'explicit' } }, env)).hooks.token, 'explicit');
    await writeFile(join(dir, 'other'), 'file-secret');
    const viaFile = accepted(await buildConfig({ hooks: { tokenFile: 'other' } }, { file: join(dir, 'c.json'), env }));
    assert.equal(viaFile.hooks.token, 'file-secret');
  });
});

test('buildConfig() treats an absent credential as no token', async () => {
  await withDir(async (dir) => {
    const env = { CREDENTIALS_DIRECTORY: dir };
    assert.equal((await config({}, env)).hooks.token, null);
    assert.deepEqual(await problems({ hooks: { enabled: true } }, env), [
      'hooks.token: is required when hooks.enabled is true (or set hooks.tokenFile)',
    ]);
  });
});

test('buildConfig() reports an empty or unreadable credential under hooks.token', async () => {
  await withDir(async (dir) => {
    const env = { CREDENTIALS_DIRECTORY: dir };
    const credential = join(dir, 'hooks-token');
    await writeFile(credential, '\n');
    assert.deepEqual(await problems({}, env), [`hooks.token: the file ${credential} is empty`]);
    await rm(credential);
    await mkdir(credential);
    assert.deepEqual(await problems({}, env), [`hooks.token: cannot read ${credential}: is a directory`]);
  });
});

// --- hooks.path ----------------------------------------------------------------------------

test('buildConfig() normalises hooks.path', async () => {
  assert.equal((await config({ hooks: { path: 'in' } })).hooks.path, '/in');
  assert.equal((await config({ hooks: { path: '/in/' } })).hooks.path, '/in');
  assert.equal((await config({ hooks: { path: ' /svc/hooks// ' } })).hooks.path, '/svc/hooks');
  assert.equal((await config({ hooks: { path: '/a-b_c.d~e' } })).hooks.path, '/a-b_c.d~e');
});

test('buildConfig() refuses a hooks.path that is "/" once normalised', async () => {
  for (const path of ['/', '', '///', ' / ']) {
    assert.deepEqual(
      await problems({ hooks: { path } }),
      ['hooks.path: may not be "/"'],
      `path ${JSON.stringify(path)}`,
    );
  }
});

test('buildConfig() refuses a hooks.path with characters a route cannot hold', async () => {
  for (const path of ['/a b', '/in?x=1', '/in#x', '/%41']) {
    assert.deepEqual(
      await problems({ hooks: { path } }),
      ['hooks.path: may contain only letters, digits and "-._~/"'],
      path,
    );
  }
});

// --- cross-key rules -----------------------------------------------------------------------

test('buildConfig() requires a token when hooks.enabled is true', async () => {
  assert.deepEqual(await problems({ hooks: { enabled: true } }), [
    'hooks.token: is required when hooks.enabled is true (or set hooks.tokenFile)',
  ]);
  assert.equal((await config({ hooks: { enabled: false } })).hooks.enabled, false);
  assert.equal((await config({ hooks: { enabled: true, token: 't' } })).hooks.enabled, true);
});

test('buildConfig() requires the hook token to differ from gateway.auth.token', async () => {
  const message = 'hooks.token: must differ from gateway.auth.token (the hook token must be dedicated)';
  assert.deepEqual(await problems({ hooks: { token: 'same' }, gateway: { auth: { token: 'same' } } }), [message]);
  assert.deepEqual(await problems({ hooks: { token: ' same' }, gateway: { auth: { token: 'same ' } } }), [message]);
  assert.equal((await config({ hooks: { token: 'a' }, gateway: { auth: { token: 'b' } } })).gateway.authToken, 'b');
  assert.equal((await config({ gateway: { auth: { token: 'b' } } })).hooks.token, null);
});

test('buildConfig() compares a token read from hooks.tokenFile with gateway.auth.token too', async () => {
  await withDir(async (dir) => {
    await writeFile(join(dir, 'tok'), 'shared\n');
    const result = await buildConfig(
      { hooks: { tokenFile: 'tok' }, gateway: { auth: { token: 'shared' } } },
      { file: join(dir, 'config.json'), env: {} },
    );
    assert.deepEqual(refused(result), [
      'hooks.token: must differ from gateway.auth.token (the hook token must be dedicated)',
    ]);
  });
});

test('buildConfig() requires hooks.defaultSessionKey to match hooks.allowedSessionKeyPrefixes', async () => {
  assert.deepEqual(await problems({ hooks: { defaultSessionKey: 'main', allowedSessionKeyPrefixes: ['hook:'] } }), [
    'hooks.defaultSessionKey: must start with one of hooks.allowedSessionKeyPrefixes',
  ]);
  const matched = await config({
    hooks: { defaultSessionKey: 'HOOK:Inbox', allowedSessionKeyPrefixes: ['agent:', 'hook:'] },
  });
  assert.equal(matched.hooks.defaultSessionKey, 'HOOK:Inbox');
  // With a default key the generated prefix need not be admitted.
  assert.deepEqual(
    (await config({ hooks: { defaultSessionKey: 'agent:x', allowedSessionKeyPrefixes: ['agent:'] } })).hooks
      .allowedSessionKeyPrefixes,
    [
      'agent:',
    ],
  );
  assert.equal((await config({ hooks: { defaultSessionKey: 'anything' } })).hooks.defaultSessionKey, 'anything');
});

test('buildConfig() requires prefixes without a default key to admit "hook:"', async () => {
  const message =
    'hooks.allowedSessionKeyPrefixes: must admit "hook:" when hooks.defaultSessionKey is not set (generated session keys start with it)';
  assert.deepEqual(await problems({ hooks: { allowedSessionKeyPrefixes: ['agent:'] } }), [message]);
  assert.deepEqual(await problems({ hooks: { allowedSessionKeyPrefixes: ['hook:inbox:'] } }), [message]);
  assert.deepEqual(await problems({ hooks: { allowedSessionKeyPrefixes: [] } }), [message]);
  for (const prefixes of [['hook:'], ['agent:', 'HOOK:'], ['hook'], ['h']]) {
    assert.deepEqual(
      (await config({ hooks: { allowedSessionKeyPrefixes: prefixes } })).hooks.allowedSessionKeyPrefixes,
      prefixes,
    );
  }
});

test('buildConfig() reports every cross-key problem at once', async () => {
  assert.deepEqual(
    await problems({
      hooks: { enabled: true, allowedSessionKeyPrefixes: ['agent:'] },
      agents: { list: [{ id: 'a', default: true }, { id: 'a', default: true }], defaults: { models: { gpt: {} } } },
    }),
    [
      'hooks.token: is required when hooks.enabled is true (or set hooks.tokenFile)',
      'hooks.allowedSessionKeyPrefixes: must admit "hook:" when hooks.defaultSessionKey is not set (generated session keys start with it)',
      'agents.list: may mark at most one agent as default',
      'agents.list[1].id: duplicates agent "a"',
      'agents.defaults.models.gpt: must be keyed "provider/model"',
    ],
  );
});

test('buildConfig() reports a single-key rule together with the schema problems', async () => {
  assert.deepEqual(await problems({ hooks: { path: '/', maxBodyBytes: 0 }, gateway: { port: 70_000 } }), [
    'hooks.path: may not be "/"',
    'hooks.maxBodyBytes: must be at least 1',
    'gateway.port: must be at most 65535',
  ]);
});

// --- unknown and ignored keys --------------------------------------------------------------

test('buildConfig() refuses unknown keys at every level with a did-you-mean suggestion', async () => {
  assert.deepEqual(await problems({ hooks: { tokn: 'x' } }), ['hooks.tokn: unknown key (did you mean "token"?)']);
  assert.deepEqual(await problems({ gatway: {} }), ['gatway: unknown key (did you mean "gateway"?)']);
  assert.deepEqual(await problems({ hooks: { authRateLimit: { maxFailure: 3 } } }), [
    'hooks.authRateLimit.maxFailure: unknown key (did you mean "maxFailures"?)',
  ]);
  assert.deepEqual(await problems({ agents: { list: [{ id: 'a', defualt: true }] } }), [
    'agents.list[0].defualt: unknown key (did you mean "default"?)',
  ]);
  assert.deepEqual(await problems({ gateway: { auth: { password: 'x' } } }), ['gateway.auth.password: unknown key']);
});

test('buildConfig() loads hooks.internal and reports it as ignored, while hooks.gmail is read', async () => {
  const result = await build({
    hooks: {
      enabled: true,
      token: 't',
      internal: { enabled: true, entries: { 'session-memory': {} } },
      gmail: { account: 'x' },
    },
  });
  assert.ok(result.ok, result.ok ? '' : result.problems.join('\n'));
  assert.deepEqual(result.ignored, ['hooks.internal']);
  assert.equal(result.config.hooks.gmail.account, 'x');
  assert.equal(result.config.hooks.enabled, true);
});

test('buildConfig() does not ignore hooks-section keys elsewhere', async () => {
  assert.deepEqual(await problems({ internal: {} }), ['internal: unknown key']);
});

// --- value rules ---------------------------------------------------------------------------

test('buildConfig() parses gateway.trustedProxies as addresses and CIDR ranges', async () => {
  const proxies =
    (await config({ gateway: { trustedProxies: ['127.0.0.1', '10.1.2.3/8', ' ::1 ', 'fd00::/8'] } })).gateway
      .trustedProxies;
  assert.deepEqual(
    proxies.map((c) => [c.family, c.prefix, [...c.bytes].slice(0, 4)]),
    [
      [4, 32, [127, 0, 0, 1]],
      [4, 8, [10, 0, 0, 0]],
      [6, 128, [0, 0, 0, 0]],
      [6, 8, [0xfd, 0, 0, 0]],
    ],
  );
});

test('buildConfig() names each trustedProxies entry that is not an address or CIDR', async () => {
  assert.deepEqual(await problems({ gateway: { trustedProxies: ['10.0.0.0/8', 'proxy.local', '10.0.0.0/33', 7] } }), [
    'gateway.trustedProxies[1]: must be an IP address or CIDR range',
    'gateway.trustedProxies[2]: must be an IP address or CIDR range',
    'gateway.trustedProxies[3]: must be an IP address or CIDR range',
  ]);
  assert.deepEqual(await problems({ gateway: { trustedProxies: '10.0.0.0/8' } }), [
    'gateway.trustedProxies: must be an array, got string',
  ]);
});

test('buildConfig() reads agents.defaults.heartbeat.every as a duration, "0" meaning off', async () => {
  const every = async (value: unknown) =>
    (await config({ agents: { defaults: { heartbeat: { every: value } } } })).agents.heartbeatEveryMs;
  assert.equal(await every('30m'), 1_800_000);
  assert.equal(await every('1h'), 3_600_000);
  assert.equal(await every('0'), 0);
  assert.equal(await every(0), 0);
  assert.equal((await config({ agents: { defaults: { heartbeat: {} } } })).agents.heartbeatEveryMs, 0);
});

test('buildConfig() refuses a heartbeat.every that is not a duration', async () => {
  for (const value of ['soon', '-5m', '30 minutes', '', true, null]) {
    assert.deepEqual(
      await problems({ agents: { defaults: { heartbeat: { every: value } } } }),
      ['agents.defaults.heartbeat.every: must be a duration such as "30m", "1h", "90s" or "0" (off)'],
      JSON.stringify(value),
    );
  }
});

test('buildConfig() requires agents.defaults.models keys written provider/model, naming odd keys in brackets', async () => {
  assert.deepEqual(
    await problems({ agents: { defaults: { models: { 'bad key': {}, 'openai/gpt-5': {}, 'x/': {} } } } }),
    [
      'agents.defaults.models["bad key"]: must be keyed "provider/model"',
      'agents.defaults.models["x/"]: must be keyed "provider/model"',
    ],
  );
  assert.deepEqual(await problems({ agents: { defaults: { models: { 'openai/gpt-5': { alias: 1, name: 'x' } } } } }), [
    'agents.defaults.models["openai/gpt-5"].name: unknown key',
    'agents.defaults.models["openai/gpt-5"].alias: must be a string, got number',
  ]);
});

test('buildConfig() bounds numbers: port 0..65535, sizes and seconds whole and positive', async () => {
  assert.deepEqual(
    await problems({
      hooks: {
        maxBodyBytes: 1.5,
        idempotencyTtlSeconds: 0,
        authRateLimit: { maxFailures: 0, windowSeconds: -1, lockoutSeconds: 'x' },
      },
      gateway: { port: -1 },
    }),
    [
      'hooks.maxBodyBytes: must be an integer',
      'hooks.authRateLimit.maxFailures: must be at least 1',
      'hooks.authRateLimit.windowSeconds: must be at least 1',
      'hooks.authRateLimit.lockoutSeconds: must be a number, got string',
      'hooks.idempotencyTtlSeconds: must be at least 1',
      'gateway.port: must be at least 0',
    ],
  );
});

test('buildConfig() checks types of the hooks keys', async () => {
  assert.deepEqual(
    await problems({
      hooks: {
        enabled: 'yes',
        token: '  ',
        allowedAgentIds: 'main',
        allowRequestSessionKey: 1,
        allowedSessionKeyPrefixes: [''],
        presets: [1],
        mappings: {},
      },
    }),
    [
      'hooks.enabled: must be a boolean, got string',
      'hooks.token: must be a non-empty string',
      'hooks.allowedAgentIds: must be an array, got string',
      'hooks.allowRequestSessionKey: must be a boolean, got number',
      'hooks.allowedSessionKeyPrefixes[0]: must be a non-empty string',
      'hooks.presets[0]: must be one of "gmail"',
      'hooks.mappings: must be an array, got object',
    ],
  );
});

// --- locating files ------------------------------------------------------------------------

test('a missing transforms root is reported at the mapping that needs it when hooks.transformsDir is not set', async () => {
  await withDir(async (dir) => {
    const mapping = { id: 'gh', match: { path: 'github' }, transform: { module: 'github.mjs' } };
    const problems = refused(
      await buildConfig({
        hooks: {
          enabled: true,
          token: 't',
          mappings: [{ id: 'a', match: { path: 'a' }, action: 'wake', textTemplate: 'x' }, mapping],
        },
      }, { file: null, env: {}, dir }),
    );
    const root = join(dir, 'hooks', 'transforms');
    assert.deepEqual(problems, [
      `hooks.mappings[1].transform.module: "github.mjs" is looked for in the transforms root ${root}, which does not exist`,
    ]);
    // With the key set, the key is what to fix.
    const named = refused(
      await buildConfig({ hooks: { enabled: true, token: 't', transformsDir: 'gh', mappings: [mapping] } }, {
        file: null,
        env: {},
        dir,
      }),
    );
    assert.deepEqual(named, [
      `hooks.transformsDir: the transforms root does not exist (the transforms root is ${root})`,
    ]);
  });
});

test('buildConfig() warns of a session-key prefix that admits every agent session, naming what it admits', async () => {
  const built = await build({
    hooks: {
      allowRequestSessionKey: true,
      allowedSessionKeyPrefixes: ['hook:', 'agent:', 'agent:hooks:slack:', 'agent:ops:'],
    },
  });
  assert.ok(built.ok);
  assert.deepEqual(built.warnings, [
    'hooks.allowedSessionKeyPrefixes[1]: "agent:" admits every session of every agent a run may go to, the main session included: ' +
    'a key is checked as sent and as re-scoped to its agent, so "agent:<id>:main" passes, and runs as "main" once its "agent:<id>:" is dropped; list "agent:<id>:<rest>" prefixes instead',
    'hooks.allowedSessionKeyPrefixes[3]: "agent:ops:" admits every session of agent "ops", its main session included: ' +
    '"agent:ops:main" passes both checks and runs as "main" once its "agent:ops:" is dropped; list "agent:ops:<rest>" prefixes instead',
  ]);
});

// --- where transforms run ------------------------------------------------------------------

test('hooks.transformRuntime "deno" takes the deno binary at hooks.transformDenoPath, else the one on PATH', async () => {
  await withDir(async (dir) => {
    const bin = join(dir, 'bin');
    await mkdir(bin);
    const deno = join(bin, 'deno');
    await writeFile(deno, '#!/bin/sh\n', { mode: 0o755 });
    const named = await config({ hooks: { transformRuntime: 'deno', transformDenoPath: deno } });
    assert.deepEqual([named.hooks.transformRuntime, named.hooks.transformDenoPath], ['deno', deno]);
    if ('Deno' in globalThis) return; // on Deno, no path named means Deno itself
    const found = await config({ hooks: { transformRuntime: 'deno' } }, {
      PATH: `relative/bin:${join(dir, 'nothing')}:${bin}`,
    });
    assert.equal(found.hooks.transformDenoPath, deno);
  });
});

test('hooks.transformRuntime "deno" without a deno binary, a transformDenoPath that is not one, or one without "deno" is refused', async () => {
  await withDir(async (dir) => {
    const plain = join(dir, 'deno');
    await writeFile(plain, 'not executable\n', { mode: 0o644 });
    assert.deepEqual(await problems({ hooks: { transformRuntime: 'deno', transformDenoPath: plain } }), [
      `hooks.transformDenoPath: ${plain} is not an executable file`,
    ]);
    if (!('Deno' in globalThis)) {
      assert.deepEqual(await problems({ hooks: { transformRuntime: 'deno' } }, { PATH: dir }), [
        'hooks.transformRuntime: "deno" needs the deno binary: none is on PATH (set hooks.transformDenoPath)',
      ]);
    }
    assert.deepEqual(await problems({ hooks: { transformDenoPath: plain } }), [
      'hooks.transformDenoPath: is used only with hooks.transformRuntime "deno"',
    ]);
    const wrong = await problems({ hooks: { transformRuntime: 'bun' } });
    assert.equal(wrong.length, 1);
    assert.match(wrong[0]!, /^hooks\.transformRuntime: .*"server".*"deno"/);
  });
});

test('a relative hooks.transformDenoPath is read from the config directory', async () => {
  await withDir(async (dir) => {
    await writeFile(join(dir, 'deno'), '#!/bin/sh\n', { mode: 0o755 });
    const built = accepted(
      await buildConfig({ hooks: { transformRuntime: 'deno', transformDenoPath: './deno' } }, {
        file: null,
        env: {},
        dir,
      }),
    );
    assert.equal(built.hooks.transformDenoPath, join(dir, 'deno'));
  });
});

test('a mapping whose match.path is a built-in endpoint (wake, agent) is refused', async () => {
  const raw = (path: string) => ({
    hooks: {
      enabled: true,
      token: 'built-in-token',
      mappings: [{ match: { path: 'ok' }, action: 'wake', textTemplate: 'x' }, {
        match: { path },
        action: 'wake',
        textTemplate: 'never applied',
      }],
    },
  });
  assert.deepEqual(await problems(raw('wake')), [
    'hooks.mappings[1].match.path: may not be "wake": /hooks/wake is the built-in endpoint',
  ]);
  assert.deepEqual(await problems(raw('/agent/')), [
    'hooks.mappings[1].match.path: may not be "agent": /hooks/agent is the built-in endpoint',
  ]);
  assert.equal((await config(raw('wakeup'))).hooks.mappings.length, 2);
});

test('buildConfig() warns about template placeholders that can never resolve: a hidden credential header, query.token, a path through __proto__', async () => {
  const built = await buildConfig(
    {
      hooks: {
        enabled: true,
        token: 'template-warning-token-0123456789',
        mappings: [
          {
            match: { path: 'a' },
            action: 'wake',
            textTemplate:
              'by {{headers.Authorization}} {{headers.x-github-event}} {{query.token}} {{payload.__proto__.x}}',
          },
          {
            match: { path: 'b' },
            action: 'wake',
            allowCredentialHeaders: ['X-Api-Key'],
            textTemplate: '{{headers.x-api-key}} {{query.page}}',
          },
        ],
      },
    },
    { file: null, env: {}, dir: '/tmp' },
  );
  assert.ok(built.ok);
  assert.deepEqual(built.warnings.filter((w) => w.includes('can never resolve')), [
    'hooks.mappings[0].textTemplate: {{headers.Authorization}} can never resolve (it renders empty): credential headers are hidden from templates unless the mapping names them in allowCredentialHeaders',
    'hooks.mappings[0].textTemplate: {{query.token}} can never resolve (it renders empty): a request with a token in its URL is refused before any mapping runs',
    'hooks.mappings[0].textTemplate: {{payload.__proto__.x}} can never resolve (it renders empty): templates read own data properties only, never __proto__, prototype or constructor',
  ]);
});

// --- inspector -----------------------------------------------------------------------------

test('inspector is off without inspector.port, and on with its defaults when the port is set', async () => {
  assert.equal((await config({})).inspector, null);
  assert.deepEqual((await config({ inspector: { port: 8790 } })).inspector, {
    port: 8790,
    bind: '127.0.0.1',
    allowNonLoopback: false,
    idleMinutes: 30,
    maxSessionHours: 12,
  });
  assert.equal((await config({ inspector: { port: 0, bind: 'localhost' } })).inspector?.bind, 'localhost');
  assert.equal((await config({ inspector: { port: 0, bind: '::1' } })).inspector?.bind, '::1');
});

test('inspector.bind off loopback is refused unless inspector.allowNonLoopback says so; the port may not be the gateway port', async () => {
  for (const bind of ['0.0.0.0', '192.168.1.5', '::', 'example.org']) {
    assert.deepEqual(await problems({ inspector: { port: 8790, bind } }), [
      'inspector.bind: must be a loopback address (127.x.x.x, ::1 or localhost) unless inspector.allowNonLoopback is true',
    ], bind);
  }
  assert.equal(
    (await config({ inspector: { port: 8790, bind: '0.0.0.0', allowNonLoopback: true } })).inspector?.bind,
    '0.0.0.0',
  );
  assert.deepEqual(await problems({ inspector: { port: 8789 } }), [
    'inspector.port: must differ from gateway.port (the inspector has a listener of its own)',
  ]);
  assert.deepEqual(await problems({ inspector: { port: 70000, idleMinutes: 0, maxSessionHours: 0 } }), [
    'inspector.port: must be at most 65535',
    'inspector.idleMinutes: must be at least 1',
    'inspector.maxSessionHours: must be at least 1',
  ]);
  assert.equal((await config({ inspector: { port: 8790, maxSessionHours: 2 } })).inspector?.maxSessionHours, 2);
});

test('buildConfig() takes log.requests and log.maxLinesPerSecond, and names either when it is wrong', async () => {
  const problemsOf = await problems({ log: { requests: 'some', maxLinesPerSecond: 0 } });
  assert.equal(problemsOf.length, 2, problemsOf.join('\n'));
  assert.match(problemsOf[0]!, /^log\.requests: /);
  assert.match(problemsOf[1]!, /^log\.maxLinesPerSecond: /);
});

// --- alerts --------------------------------------------------------------------------------

test('buildConfig() takes alerts to a configured channel with every kind by default, and refuses an unknown kind, last, an unknown channel and a missing recipient', async () => {
  const channels = { telegram: { botToken: '1:abc' } };
  const on = await config({
    channels: { telegram: { botToken: '1:abc', defaultTo: '42' } },
    alerts: { channel: 'telegram' },
  });
  assert.deepEqual(on.alerts, {
    channel: 'telegram',
    to: null,
    on: ['signature-failures', 'run-failures', 'delivery-failures', 'outbox-dead', 'storage', 'backlog', 'budget'],
    throttleSeconds: 900,
    signatureFailures: { count: 10, minutes: 5 },
  });
  assert.equal((await config({})).alerts, null);
  assert.deepEqual(
    (await config({
      channels,
      alerts: {
        channel: 'telegram',
        to: '42',
        on: ['storage', 'storage'],
        throttleSeconds: 60,
        signatureFailures: { count: 3, minutes: 0.5 },
      },
    })).alerts,
    {
      channel: 'telegram',
      to: '42',
      on: ['storage'],
      throttleSeconds: 60,
      signatureFailures: { count: 3, minutes: 0.5 },
    },
  );
  assert.deepEqual(await problems({ channels, alerts: { channel: 'telegram', to: '42', on: ['budget', 'disk'] } }), [
    'alerts.on[1]: must be one of "signature-failures", "run-failures", "delivery-failures", "outbox-dead", "storage", "backlog", "budget"',
  ]);
  assert.deepEqual(await problems({ channels, alerts: { channel: 'last' } }), [
    'alerts.channel: must name a configured channel (not "last")',
  ]);
  assert.deepEqual(await problems({ channels, alerts: { channel: 'slack', to: 'C1' } }), [
    'alerts.channel: slack is not configured (channels.slack)',
  ]);
  assert.deepEqual(await problems({ channels, alerts: { channel: 'telegram' } }), [
    'alerts.to: is required unless channels.telegram.defaultTo is set',
  ]);
  assert.deepEqual(await problems({ channels, alerts: { channel: 'telegram', to: 'nobody' } }), [
    'alerts.to: Invalid Telegram recipient: expected a numeric chat id or @channelusername, got "nobody"',
  ]);
  assert.deepEqual(await problems({ channels, alerts: { to: '42' } }), ['alerts.channel: is required']);
});
