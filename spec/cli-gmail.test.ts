import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadConfig } from '../lib/config/load.ts';
import { companionArgs, findOnPath, INSTALL_HINT, serveCompanion, type GmailDeps } from '../lib/cli/gmail-companion.ts';
import { BACKOFF, companionEnv, STOP_GRACE_MS } from '../lib/runtime/gmail-companion.ts';
import { applyGmailSetup } from '../lib/cli/gmail-setup.ts';
import { gmailCommand } from '../lib/cli/gmail.ts';
import { RELAY_LIMITS } from '../lib/runtime/relay.ts';
import { captureIo } from './_io.ts';
import { fileDir } from './_dir.ts';

const tmp = await fileDir('hooks-gmail-');

let seq = 0;
/** A fresh directory for one test. */
async function fresh(): Promise<string> {
  const dir = join(tmp, `t${++seq}`);
  await mkdir(dir);
  return dir;
}

/** An Io that collects output; `onStdout` sees everything written so far. */
function capture(env: Record<string, string> = {}, signal?: AbortSignal, onStdout?: (all: string) => void) {
  return captureIo({ HOME: tmp, PATH: process.env['PATH'] ?? '', ...env }, { ...(signal === undefined ? {} : { signal }), ...(onStdout === undefined ? {} : { onStdout }) });
}

async function readJson(path: string): Promise<Record<string, any>> {
  return JSON.parse(await readFile(path, 'utf8'));
}

async function mode(path: string): Promise<number> {
  return (await stat(path)).mode & 0o777;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

const ACCOUNT = 'me@example.com';

describe('gmail setup', () => {
  test('gmailCommand() setup writes a complete configuration to a missing file, owner-only, and prints the companion command', async () => {
    const dir = await fresh();
    const file = join(dir, 'nested', 'config.json');
    const { io, out } = capture();
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '--config', file], io), 0, out.stderr);
    const written = await readJson(file);
    const token = written['hooks'].token as string;
    const gmailToken = written['hooks'].gmail.hookToken as string;
    assert.match(token, /^[\w-]{43}$/);
    assert.match(gmailToken, /^[\w-]{43}$/);
    assert.notEqual(gmailToken, token);
    assert.deepEqual(written, {
      hooks: {
        enabled: true,
        token,
        presets: ['gmail'],
        allowRequestSessionKey: true,
        allowedSessionKeyPrefixes: ['hook:'],
        gmail: {
          hookToken: gmailToken,
          account: ACCOUNT,
          label: 'INBOX',
          topic: 'gog-gmail-watch',
          subscription: 'gog-gmail-watch-push',
          hookUrl: 'http://127.0.0.1:8789/hooks/gmail',
          includeBody: true,
          maxBytes: 20000,
        },
      },
    });
    assert.equal(await mode(file), 0o600);
    assert.equal(await exists(`${file}.bak`), false);
    assert.equal(
      out.stdout,
      `gog gmail watch serve --account ${ACCOUNT} --hook-url http://127.0.0.1:8789/hooks/gmail --hook-token '<hooks.gmail.hookToken>' --include-body --max-bytes 20000\n`,
    );
    // Neither credential reaches the terminal: the command names them by placeholder.
    for (const secret of [token, gmailToken]) assert.ok(!out.stdout.includes(secret) && !out.stderr.includes(secret));
    assert.match(out.stderr, /generated a new hook token/);
    assert.match(out.stderr, /generated hooks\.gmail\.hookToken/);
    assert.match(out.stderr, /opens the gmail hook and nothing else/);
    assert.match(out.stderr, /gog gmail watch start --account me@example\.com --topic 'projects\/<project-id>\/topics\/gog-gmail-watch' --label INBOX/);
    const loaded = await loadConfig(file, {});
    assert.ok(loaded.ok);
    assert.ok(loaded.config.hooks.mappings.some((m) => m.id === 'preset:gmail'));
  });

  test('gmailCommand() setup keeps every other key of a JSONC file, backs the original up and says its comments were lost', async () => {
    const dir = await fresh();
    const file = join(dir, 'config.json');
    const original = `// operator notes
{
  /* the gateway */
  "gateway": { "bind": "127.0.0.1", "port": 9000, },
  "hooks": {
    "path": "/in/",
    "maxBodyBytes": 1000,
    "token": "an-existing-token-0123456789",
    "mappings": [{ "id": "ci", "match": { "path": "ci" }, "action": "wake", "textTemplate": "CI: {{status}} http://example.com//x" }],
    "internal": { "note": "kept // even here" },
  },
  "agents": { "list": [{ "id": "main", "default": true }], "defaults": { "timeoutSeconds": 30 } },
  "state": { "dir": "./state" },
}
`;
    await writeFile(file, original, { mode: 0o644 });
    await chmod(file, 0o644);
    const { io, out } = capture();
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '-c', file], io), 0, out.stderr);
    const written = await readJson(file);
    assert.deepEqual(written['gateway'], { bind: '127.0.0.1', port: 9000 });
    assert.deepEqual(written['agents'], { list: [{ id: 'main', default: true }], defaults: { timeoutSeconds: 30 } });
    assert.deepEqual(written['state'], { dir: './state' });
    assert.equal(written['hooks'].path, '/in/');
    assert.equal(written['hooks'].maxBodyBytes, 1000);
    assert.equal(written['hooks'].token, 'an-existing-token-0123456789');
    assert.deepEqual(written['hooks'].internal, { note: 'kept // even here' });
    assert.deepEqual(written['hooks'].mappings, [
      { id: 'ci', match: { path: 'ci' }, action: 'wake', textTemplate: 'CI: {{status}} http://example.com//x' },
    ]);
    assert.equal(written['hooks'].gmail.hookUrl, 'http://127.0.0.1:9000/in/gmail');
    assert.equal(await readFile(`${file}.bak`, 'utf8'), original);
    assert.equal(await mode(file), 0o600);
    assert.equal(await mode(`${file}.bak`), 0o600);
    assert.match(out.stderr, /comments in .* were not kept/);
    assert.doesNotMatch(out.stderr, /generated a new hook token/);
    assert.doesNotMatch(out.stdout + out.stderr, /an-existing-token-0123456789/);
    assert.deepEqual((await readdir(dir)).sort(), ['config.json', 'config.json.bak']);
  });

  test('gmailCommand() setup does not report comments for a file whose strings merely hold slashes', async () => {
    const dir = await fresh();
    const file = join(dir, 'config.json');
    await writeFile(file, JSON.stringify({ hooks: { mappings: [{ match: { path: 'x' }, messageTemplate: 'see http://a//b /* no */' }] } }));
    const { io, out } = capture();
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '-c', file], io), 0, out.stderr);
    assert.doesNotMatch(out.stderr, /comments/);
    assert.match(out.stderr, /the original is in .*config\.json\.bak/);
  });

  test('gmailCommand() setup run twice changes nothing the second time: one preset, one prefix, the same token', async () => {
    const dir = await fresh();
    const file = join(dir, 'config.json');
    const first = capture();
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '-c', file], first.io), 0);
    const text = await readFile(file, 'utf8');
    const second = capture();
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '-c', file], second.io), 0, second.out.stderr);
    assert.equal(await readFile(file, 'utf8'), text);
    assert.match(second.out.stderr, /already holds this configuration; not rewritten/);
    assert.equal(await exists(`${file}.bak`), false);
    const written = await readJson(file);
    assert.deepEqual(written['hooks'].presets, ['gmail']);
    assert.deepEqual(written['hooks'].allowedSessionKeyPrefixes, ['hook:']);
    assert.equal(second.out.stdout, first.out.stdout);
  });

  test('gmailCommand() setup replaces a hook URL with user:password in it and does not print the password', async () => {
    const dir = await fresh();
    const file = join(dir, 'config.json');
    await writeFile(file, JSON.stringify({ gateway: { port: 9000 }, hooks: { gmail: { hookUrl: 'http://bob:pw-old-url@127.0.0.1:9000/hooks/gmail' } } }));
    const { io, out } = capture();
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '-c', file], io), 0, out.stderr);
    assert.equal((await readJson(file))['hooks'].gmail.hookUrl, 'http://127.0.0.1:9000/hooks/gmail');
    assert.match(out.stderr, /hooks\.gmail\.hookUrl was http:\/\/\[redacted\]@127\.0\.0\.1:9000\/hooks\/gmail; it is now http:\/\/127\.0\.0\.1:9000\/hooks\/gmail/);
    assert.ok(!`${out.stdout}${out.stderr}`.includes('pw-old-url'));
  });

  test('gmailCommand() setup builds the hook URL from --port, else gateway.port, and from hooks.path', async () => {
    const dir = await fresh();
    const file = join(dir, 'config.json');
    await writeFile(file, JSON.stringify({ gateway: { port: 9000 }, hooks: { path: '${HOOKS_PATH}' } }));
    const first = capture({ HOOKS_PATH: 'ingress/' });
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '-c', file], first.io), 0, first.out.stderr);
    assert.equal((await readJson(file))['hooks'].gmail.hookUrl, 'http://127.0.0.1:9000/ingress/gmail');
    assert.equal((await readJson(file))['hooks'].path, '${HOOKS_PATH}');
    const second = capture({ HOOKS_PATH: 'ingress/' });
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '-c', file, '--port', '9100'], second.io), 0, second.out.stderr);
    assert.equal((await readJson(file))['hooks'].gmail.hookUrl, 'http://127.0.0.1:9100/ingress/gmail');
    assert.match(second.out.stderr, /hooks\.gmail\.hookUrl was http:\/\/127\.0\.0\.1:9000\/ingress\/gmail; it is now http:\/\/127\.0\.0\.1:9100\/ingress\/gmail/);
    assert.match(second.out.stdout, /--hook-url http:\/\/127\.0\.0\.1:9100\/ingress\/gmail /);
  });

  test('gmailCommand() setup takes label, topic, subscription, body and size flags, and keeps them when later runs omit them', async () => {
    const dir = await fresh();
    const file = join(dir, 'config.json');
    const args = ['setup', '--account', ACCOUNT, '-c', file, '--label', 'Work', '--topic', 'projects/p1/topics/mail', '--subscription', 'mail-push'];
    const first = capture();
    assert.equal(await gmailCommand([...args, '--no-include-body', '--max-bytes', '4096'], first.io), 0, first.out.stderr);
    assert.doesNotMatch(first.out.stdout, /--include-body/);
    assert.match(first.out.stdout, /--max-bytes 4096\n$/);
    assert.match(first.out.stderr, /gog gmail watch start --account me@example\.com --topic projects\/p1\/topics\/mail --label Work\n/);
    const gmailToken = (await readJson(file))['hooks'].gmail.hookToken as string;
    const second = capture();
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '-c', file], second.io), 0, second.out.stderr);
    assert.deepEqual((await readJson(file))['hooks'].gmail, {
      hookToken: gmailToken,
      account: ACCOUNT,
      label: 'Work',
      topic: 'projects/p1/topics/mail',
      subscription: 'mail-push',
      hookUrl: 'http://127.0.0.1:8789/hooks/gmail',
      includeBody: false,
      maxBytes: 4096,
    });
    const third = capture();
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '-c', file, '--include-body'], third.io), 0);
    assert.equal((await readJson(file))['hooks'].gmail.includeBody, true);
  });

  test('gmailCommand() setup uses the token of hooks.tokenFile and writes no token of its own', async () => {
    const dir = await fresh();
    const file = join(dir, 'config.json');
    await writeFile(join(dir, 'hook-token'), 'token-from-a-file-0123456789\n');
    await writeFile(file, JSON.stringify({ hooks: { tokenFile: 'hook-token' } }));
    const { io, out } = capture();
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '-c', file], io), 0, out.stderr);
    assert.equal((await readJson(file))['hooks'].token, undefined);
    assert.doesNotMatch(out.stdout + out.stderr, /token-from-a-file-0123456789/);
    assert.match(out.stdout, /--hook-token '<hooks\.gmail\.hookToken>' /);
  });

  test('gmailCommand() setup refuses a result that would be invalid, lists every problem and writes nothing', async () => {
    const dir = await fresh();
    const file = join(dir, 'config.json');
    const original = JSON.stringify({
      hooks: {
        token: 'tok-0123456789abcdef',
        defaultSessionKey: 'main',
        mappings: [{ match: { path: 'ci' }, messageTemplate: 'x', sessionKey: 'custom:ci' }],
      },
    });
    await writeFile(file, original);
    const { io, out } = capture();
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '-c', file], io), 1);
    assert.equal(await readFile(file, 'utf8'), original);
    assert.equal(await exists(`${file}.bak`), false);
    assert.match(out.stderr, /the result would be invalid, so .* was not changed/);
    assert.match(out.stderr, /^ {2}hooks\.defaultSessionKey: must start with one of hooks\.allowedSessionKeyPrefixes$/m);
    assert.match(out.stderr, /^ {2}hooks\.mappings\[0\]\.sessionKey: must start with one of hooks\.allowedSessionKeyPrefixes$/m);
    assert.equal(out.stdout, '');
  });

  test('gmailCommand() setup refuses a file it cannot parse or read, and keys of the wrong kind', async () => {
    const dir = await fresh();
    const cases: Array<[string, RegExp]> = [
      ['{ "hooks": ', /cannot parse .*: line 1/],
      ['[1, 2]', /the file must hold a JSON object/],
      ['{ "hooks": true }', /hooks: must be an object/],
      ['{ "hooks": { "gmail": [], "presets": "gmail", "allowedSessionKeyPrefixes": {} } }', /hooks\.gmail: must be an object\n.*hooks\.presets: must be an array\n.*hooks\.allowedSessionKeyPrefixes: must be an array/],
      ['{ "gateway": { "port": 0 } }', /gateway\.port is 0 .* pass --port/],
      [`{ "x": ${'['.repeat(10_000)}${']'.repeat(10_000)} }`, /^ {2}x(\[0\]){63}: may nest objects and arrays at most 64 levels deep$/m],
    ];
    for (const [i, [text, expected]] of cases.entries()) {
      const file = join(dir, `c${i}.json`);
      await writeFile(file, text);
      const { io, out } = capture();
      assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '-c', file], io), 1, text);
      assert.match(out.stderr, expected);
      assert.equal(await readFile(file, 'utf8'), text);
    }
    const { io, out } = capture();
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '-c', dir], io), 1);
    assert.match(out.stderr, /cannot read .*: EISDIR/);
  });

  test('gmailCommand() setup leaves the config unchanged when it cannot write the backup', async () => {
    const dir = await fresh();
    const file = join(dir, 'config.json');
    await writeFile(file, '{}');
    await mkdir(join(`${file}.bak`, 'in-the-way'), { recursive: true });
    const { io, out } = capture();
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '-c', file], io), 1);
    assert.match(out.stderr, /cannot write .*config\.json\.bak: E\w+; .*config\.json was not changed/);
    assert.equal(await readFile(file, 'utf8'), '{}');
    assert.deepEqual((await readdir(dir)).sort(), ['config.json', 'config.json.bak']);
    assert.equal(out.stdout, '');
  });

  test('gmailCommand() setup writes through a symlinked config file and leaves the link in place', async () => {
    const dir = await fresh();
    const real = join(dir, 'real.json');
    const link = join(dir, 'link.json');
    await writeFile(real, '{}');
    await symlink(real, link);
    const { io, out } = capture();
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '-c', link], io), 0, out.stderr);
    assert.ok((await stat(link)).isFile());
    assert.equal((await readJson(real))['hooks'].gmail.account, ACCOUNT);
    assert.equal(await readFile(`${real}.bak`, 'utf8'), '{}');
  });

  test('gmailCommand() setup finds the config through $HOOKS_INGRESS_CONFIG', async () => {
    const dir = await fresh();
    const file = join(dir, 'env.json');
    const { io } = capture({ HOOKS_INGRESS_CONFIG: file });
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT], io), 0);
    assert.equal((await readJson(file))['hooks'].gmail.account, ACCOUNT);
  });

  test('gmailCommand() setup answers bad flags with exit code 2 and the help', async () => {
    const bad: Array<[string[], RegExp]> = [
      [[], /--account is required/],
      [['--account', '  '], /--account is required/],
      [['--account', ACCOUNT, '--label', ' '], /--label may not be empty/],
      [['--account', ACCOUNT, '--port', '80x'], /--port must be an integer from 1 to 65535/],
      [['--account', ACCOUNT, '--port', '0'], /--port must be an integer/],
      [['--account', ACCOUNT, '--max-bytes', '0'], /--max-bytes must be a whole number/],
      [['--account', ACCOUNT, '--include-body', '--no-include-body'], /Cannot set both --include-body and --no-include-body/],
      [['--account', ACCOUNT, '--bogus'], /unknown option "--bogus"/],
      [['--account', ACCOUNT, 'extra'], /extra/],
    ];
    for (const [args, expected] of bad) {
      const { io, out } = capture();
      assert.equal(await gmailCommand(['setup', ...args], io), 2, args.join(' '));
      assert.match(out.stderr, expected);
      // One line naming the command and where its help is, not the whole help.
      assert.match(out.stderr, /^hooks-ingress gmail setup: [^\n]*; see hooks-ingress gmail setup --help\n$/);
    }
  });
});

describe('applyGmailSetup()', () => {
  test('applyGmailSetup() adds "hook:" only when no prefix admits it, and notes what it turned on', () => {
    const env = {};
    const narrow = applyGmailSetup({ hooks: { allowedSessionKeyPrefixes: ['custom:'], allowRequestSessionKey: false, enabled: false } }, { account: ACCOUNT }, env, () => 't');
    assert.ok(narrow.ok);
    const hooks = narrow.value['hooks'] as Record<string, unknown>;
    assert.deepEqual(hooks['allowedSessionKeyPrefixes'], ['custom:', 'hook:']);
    assert.equal(hooks['token'], 't');
    assert.match(narrow.notes.join('\n'), /hooks\.allowRequestSessionKey was false/);
    assert.match(narrow.notes.join('\n'), /hooks\.enabled was false/);
    assert.doesNotMatch(narrow.notes.join('\n'), /allowedSessionKeyPrefixes was not set/);
    const wide = applyGmailSetup({ hooks: { allowedSessionKeyPrefixes: ['HOOK'] } }, { account: ACCOUNT }, env, () => 't');
    assert.ok(wide.ok);
    assert.deepEqual((wide.value['hooks'] as Record<string, unknown>)['allowedSessionKeyPrefixes'], ['HOOK']);
  });

  test('applyGmailSetup() leaves the value it was given untouched', () => {
    const raw = { hooks: { presets: [] as string[] } };
    const result = applyGmailSetup(raw, { account: ACCOUNT }, {}, () => 't');
    assert.ok(result.ok);
    assert.deepEqual(raw, { hooks: { presets: [] } });
  });
});

describe('companionArgs() and helpers', () => {
  test('companionArgs() passes gog its own serve settings and the push token when hooks.gmail has them', async () => {
    const dir = await fresh();
    const file = join(dir, 'config.json');
    await writeFile(
      file,
      JSON.stringify({
        hooks: { enabled: true, token: 'tok-0123456789abcdef', gmail: { account: ACCOUNT, hookToken: 'gmail-only-0123456789', pushToken: 'push-secret', serve: { bind: '0.0.0.0', port: 8788, path: '/gmail-pubsub', other: true } } },
      }),
    );
    const loaded = await loadConfig(file, {});
    assert.ok(loaded.ok);
    const built = companionArgs(loaded.config);
    assert.ok(built.ok);
    assert.deepEqual(built.args, [
      'gmail', 'watch', 'serve', '--account', ACCOUNT,
      '--bind', '0.0.0.0', '--port', '8788', '--path', '/gmail-pubsub',
      '--token', 'push-secret',
      '--hook-url', 'http://127.0.0.1:8789/hooks/gmail',
      '--hook-token', 'gmail-only-0123456789',
      '--include-body', '--max-bytes', '20000',
    ]);
    const shown = companionArgs(loaded.config, true);
    assert.ok(shown.ok);
    assert.deepEqual(shown.args.filter((a) => a.startsWith('<')), ['<hooks.gmail.pushToken>', '<hooks.gmail.hookToken>']);
    assert.ok(!shown.args.includes('push-secret') && !shown.args.includes('gmail-only-0123456789'));
  });

  test('companionArgs() never hands gog the hook token: without hooks.gmail.hookToken it names the fix', async () => {
    const dir = await fresh();
    const file = join(dir, 'config.json');
    await writeFile(file, JSON.stringify({ hooks: { enabled: true, token: 'tok-0123456789abcdef', gmail: { account: ACCOUNT } } }));
    const loaded = await loadConfig(file, {});
    assert.ok(loaded.ok);
    assert.deepEqual(companionArgs(loaded.config), {
      ok: false,
      problem: 'hooks.gmail.hookToken is not set: run "hooks-ingress gmail setup --account <address>" again to create it',
    });
  });

  test('findOnPath() takes the first executable file and skips directories, non-executables and relative entries', async () => {
    const dir = await fresh();
    const [a, b, c] = [join(dir, 'a'), join(dir, 'b'), join(dir, 'c')];
    await mkdir(join(a, 'gog'), { recursive: true });
    await mkdir(b);
    await mkdir(c);
    await writeFile(join(b, 'gog'), '#!/bin/sh\n', { mode: 0o644 });
    await writeFile(join(c, 'gog'), '#!/bin/sh\n', { mode: 0o755 });
    assert.equal(await findOnPath('gog', { PATH: ['', '.', a, b, c].join(':') }), join(c, 'gog'));
    assert.equal(await findOnPath('gog', { PATH: [a, b].join(':') }), null);
    assert.equal(await findOnPath('gog', {}), null);
  });
});

describe('gmail run', () => {
  /** A config with the gmail preset set up, and a bin directory for a fake `gog`. */
  async function setupRun(hooks: Record<string, unknown> = {}): Promise<{ dir: string; file: string; bin: string }> {
    const dir = await fresh();
    const bin = join(dir, 'bin');
    await mkdir(bin);
    const file = join(dir, 'config.json');
    await writeFile(
      file,
      JSON.stringify({
        hooks: {
          enabled: true,
          token: 'run-token-0123456789abcdef',
          presets: ['gmail'],
          allowRequestSessionKey: true,
          allowedSessionKeyPrefixes: ['hook:'],
          gmail: { account: ACCOUNT, hookToken: 'gmail-run-token-0123456789', hookUrl: 'http://127.0.0.1:8789/hooks/gmail', includeBody: true, maxBytes: 20000 },
          ...hooks,
        },
      }),
    );
    return { dir, file, bin };
  }

  // Waits about ten seconds at most, so a signal that never arrives fails the test instead of hanging it.
  const BOUNDED_WAIT = 'i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; echo gave-up >&2; exit 9';

  async function fakeGog(bin: string, body: string): Promise<void> {
    await writeFile(join(bin, 'gog'), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  }

  const EXPECTED_ARGS = [
    'gmail', 'watch', 'serve', '--account', ACCOUNT,
    '--hook-url', 'http://127.0.0.1:8789/hooks/gmail',
    '--hook-token', 'gmail-run-token-0123456789',
    '--include-body', '--max-bytes', '20000',
  ];

  test('gmailCommand() run starts gog with the companion arguments and restarts it with doubling backoff that resets after a long run', async () => {
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

  test('gmailCommand() run gives gog a minimal environment: never the hook token or an API key, but its own GOG_* settings, HOME, PATH and the XDG directories', async () => {
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
    const seen = Object.fromEntries((await readFile(dump, 'utf8')).trimEnd().split('\n').map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]));
    for (const name of ['HOOKS_TOKEN', 'OPENAI_API_KEY', 'AWS_SECRET_ACCESS_KEY']) assert.equal(seen[name], undefined, name);
    assert.ok(!Object.values(seen).some((value) => value.includes('run-token-0123456789abcdef')), 'the hook token is nowhere in gog\'s environment');
    assert.equal(seen['HOME'], tmp);
    assert.equal(seen['PATH'], env.PATH);
    assert.equal(seen['XDG_CONFIG_HOME'], env.XDG_CONFIG_HOME);
    assert.equal(seen['GOG_KEYRING_PASSWORD'], 'keyring-pass');
    assert.equal(seen['LANG'], 'C.UTF-8');
  });

  test('companionEnv() keeps PATH, HOME, the XDG and GOG_ variables, locale, time zone, D-Bus, TLS and proxy settings, and nothing else', () => {
    const kept = companionEnv({
      PATH: '/bin', HOME: '/h', USER: 'u', LOGNAME: 'u', TMPDIR: '/t', TZ: 'UTC', LANG: 'C', LC_ALL: 'C',
      XDG_RUNTIME_DIR: '/run/user/1', DBUS_SESSION_BUS_ADDRESS: 'unix:path=/run/user/1/bus',
      GOG_ACCOUNT: 'a@b', GOG_KEYRING_BACKEND: 'file', SSL_CERT_FILE: '/c', HTTPS_PROXY: 'http://p:3128', no_proxy: 'localhost',
      HOOKS_TOKEN: 'x', ANTHROPIC_API_KEY: 'y', CREDENTIALS_DIRECTORY: '/run/credentials/x', NODE_OPTIONS: '--inspect', UNSET: undefined,
    });
    assert.deepEqual(Object.keys(kept).sort(), [
      'DBUS_SESSION_BUS_ADDRESS', 'GOG_ACCOUNT', 'GOG_KEYRING_BACKEND', 'HOME', 'HTTPS_PROXY', 'LANG', 'LC_ALL', 'LOGNAME', 'PATH', 'SSL_CERT_FILE', 'TMPDIR', 'TZ', 'USER', 'XDG_RUNTIME_DIR', 'no_proxy',
    ]);
  });

  test('gmailCommand() run passes on the output of a gog that writes without pause (yes) at a bounded pace', async () => {
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
    assert.ok(out.stdout.length <= bound, `relayed ${out.stdout.length} bytes in ${seconds.toFixed(1)} s, bound ${bound}`);
    assert.match(out.stdout, /^(y\n)+$/);
  });

  test('serveCompanion() is null without the preset, skips with a reason when gog is missing or opted out, and runs gog until stopped', async () => {
    const { dir, file, bin } = await setupRun();
    const load = async (path: string) => {
      const loaded = await loadConfig(path, {});
      assert.ok(loaded.ok);
      return loaded.config;
    };
    const config = await load(file);
    const plain = join(dir, 'plain.json');
    await writeFile(plain, JSON.stringify({ hooks: { enabled: true, token: 'plain-token-0123456789' } }));
    assert.equal(await serveCompanion(await load(plain), capture().io), null);
    assert.deepEqual(await serveCompanion(config, capture({ PATH: join(dir, 'empty') }).io), { skip: `gog is not on PATH (${INSTALL_HINT})` });
    assert.deepEqual(await serveCompanion(config, capture({ PATH: bin, HOOKS_INGRESS_SKIP_GMAIL_WATCHER: '1' }).io), { skip: 'HOOKS_INGRESS_SKIP_GMAIL_WATCHER=1' });

    const log = join(dir, 'companion.log');
    await fakeGog(bin, `trap 'echo stopped >> "${log}"; exit 0' TERM\necho ready\n${BOUNDED_WAIT}`);
    const stop = new AbortController();
    const { io, out } = capture({ PATH: `${bin}:${process.env['PATH']}` }, stop.signal, (all) => {
      if (all.includes('ready')) stop.abort();
    });
    const companion = await serveCompanion(config, io);
    assert.ok(companion !== null && 'run' in companion);
    await companion.run();
    assert.equal(await readFile(log, 'utf8'), 'stopped\n', out.stderr);
  });

  test('gmailCommand() run passes an abort on to gog as SIGTERM and exits 0 once it stopped', async () => {
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

  test('gmailCommand() run passes SIGINT on to gog', async () => {
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

  test('gmailCommand() run kills a gog that ignores SIGTERM once the grace period is over', async () => {
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

  test('gmailCommand() run treats a gog that cannot start like one that exited', async () => {
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

  test('gmailCommand() run exits 1 naming how to install gog when it is not on PATH, and warns when the preset is off', async () => {
    const { file, bin } = await setupRun({ presets: [] });
    await writeFile(join(bin, 'gog'), 'not executable', { mode: 0o644 });
    const { io, out } = capture({ PATH: bin });
    assert.equal(await gmailCommand(['run', '-c', file], io), 1);
    assert.match(out.stderr, /gog is not on PATH: install gogcli \(brew install steipete\/tap\/gogcli, or see https:\/\/gogcli\.sh\)/);
    assert.match(out.stderr, /warning: .*hooks\.presets lacks "gmail"/);
  });

  test('gmailCommand() run exits 1 on an invalid config or one without hooks.gmail.account', async () => {
    const dir = await fresh();
    const invalid = join(dir, 'invalid.json');
    await writeFile(invalid, JSON.stringify({ hooks: { enabled: true } }));
    const first = capture();
    assert.equal(await gmailCommand(['run', '-c', invalid], first.io), 1);
    assert.match(first.out.stderr, /invalid config .*\n {2}hooks\.token: is required/);
    const bare = join(dir, 'bare.json');
    await writeFile(bare, JSON.stringify({ hooks: { enabled: true, token: 'tok-0123456789abcdef' } }));
    const second = capture();
    assert.equal(await gmailCommand(['run', '-c', bare], second.io), 1);
    assert.match(second.out.stderr, /hooks\.gmail\.account is not set: run "hooks-ingress gmail setup --account <address>" first/);
    const tokenless = join(dir, 'tokenless.json');
    await writeFile(tokenless, JSON.stringify({ hooks: { token: 'tok-0123456789abcdef', gmail: { account: ACCOUNT } } }));
    const third = capture();
    assert.equal(await gmailCommand(['run', '-c', tokenless], third.io), 1);
    assert.match(third.out.stderr, /hooks\.gmail\.hookToken is not set/);
  });
});

describe('gmail help and usage', () => {
  test('gmailCommand() prints help for gmail, setup and run with exit code 0', async () => {
    for (const [args, usage] of [
      [['--help'], 'Usage: hooks-ingress gmail COMMAND'],
      [['-h'], 'Usage: hooks-ingress gmail COMMAND'],
      [['help'], 'Usage: hooks-ingress gmail COMMAND'],
      [['setup', '--help'], 'Usage: hooks-ingress gmail setup'],
      [['run', '-h'], 'Usage: hooks-ingress gmail run'],
    ] as const) {
      const { io, out } = capture();
      assert.equal(await gmailCommand(args, io), 0);
      assert.ok(out.stdout.startsWith(usage), out.stdout);
      assert.equal(out.stderr, '');
    }
  });

  test('gmailCommand() answers an unknown or missing subcommand, and a bad run option, with exit code 2', async () => {
    for (const [args, expected] of [
      [['watch'], /^hooks-ingress gmail: unknown command "watch"; see hooks-ingress gmail --help\n$/],
      [['rnu'], /^hooks-ingress gmail: unknown command "rnu" \(did you mean "run"\?\); see hooks-ingress gmail --help\n$/],
      [[], /^hooks-ingress gmail: missing command \(setup or run\); see hooks-ingress gmail --help\n$/],
      [['run', '--port', '1'], /^hooks-ingress gmail run: unknown option "--port"; see hooks-ingress gmail run --help\n$/],
    ] as const) {
      const { io, out } = capture();
      assert.equal(await gmailCommand(args, io), 2);
      assert.match(out.stderr, expected);
    }
  });
});
