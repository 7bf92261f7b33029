// `hooks-ingress gmail setup` (lib/cli/gmail-setup.ts): the config it writes, and applyGmailSetup().
import assert from 'node:assert/strict';
import { chmod, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadConfig } from '../lib/config/load.ts';
import { applyGmailSetup } from '../lib/cli/gmail-setup.ts';
import { gmailCommand } from '../lib/cli/gmail.ts';
import { ACCOUNT, gmailFiles } from './_gmail.ts';

const { fresh, capture } = await gmailFiles();

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
    assert.match(
      out.stderr,
      /gog gmail watch start --account me@example\.com --topic 'projects\/<project-id>\/topics\/gog-gmail-watch' --label INBOX/,
    );
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
    await writeFile(
      file,
      JSON.stringify({ hooks: { mappings: [{ match: { path: 'x' }, messageTemplate: 'see http://a//b /* no */' }] } }),
    );
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
    await writeFile(
      file,
      JSON.stringify({
        gateway: { port: 9000 },
        hooks: { gmail: { hookUrl: 'http://bob:pw-old-url@127.0.0.1:9000/hooks/gmail' } },
      }),
    );
    const { io, out } = capture();
    assert.equal(await gmailCommand(['setup', '--account', ACCOUNT, '-c', file], io), 0, out.stderr);
    assert.equal((await readJson(file))['hooks'].gmail.hookUrl, 'http://127.0.0.1:9000/hooks/gmail');
    assert.match(
      out.stderr,
      /hooks\.gmail\.hookUrl was http:\/\/\[redacted\]@127\.0\.0\.1:9000\/hooks\/gmail; it is now http:\/\/127\.0\.0\.1:9000\/hooks\/gmail/,
    );
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
    assert.equal(
      await gmailCommand(['setup', '--account', ACCOUNT, '-c', file, '--port', '9100'], second.io),
      0,
      second.out.stderr,
    );
    assert.equal((await readJson(file))['hooks'].gmail.hookUrl, 'http://127.0.0.1:9100/ingress/gmail');
    assert.match(
      second.out.stderr,
      /hooks\.gmail\.hookUrl was http:\/\/127\.0\.0\.1:9000\/ingress\/gmail; it is now http:\/\/127\.0\.0\.1:9100\/ingress\/gmail/,
    );
    assert.match(second.out.stdout, /--hook-url http:\/\/127\.0\.0\.1:9100\/ingress\/gmail /);
  });

  test('gmailCommand() setup takes label, topic, subscription, body and size flags, and keeps them when later runs omit them', async () => {
    const dir = await fresh();
    const file = join(dir, 'config.json');
    const args = [
      'setup',
      '--account',
      ACCOUNT,
      '-c',
      file,
      '--label',
      'Work',
      '--topic',
      'projects/p1/topics/mail',
      '--subscription',
      'mail-push',
    ];
    const first = capture();
    assert.equal(
      await gmailCommand([...args, '--no-include-body', '--max-bytes', '4096'], first.io),
      0,
      first.out.stderr,
    );
    assert.doesNotMatch(first.out.stdout, /--include-body/);
    assert.match(first.out.stdout, /--max-bytes 4096\n$/);
    assert.match(
      first.out.stderr,
      /gog gmail watch start --account me@example\.com --topic projects\/p1\/topics\/mail --label Work\n/,
    );
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
    assert.match(
      out.stderr,
      /^ {2}hooks\.defaultSessionKey: must start with one of hooks\.allowedSessionKeyPrefixes$/m,
    );
    assert.match(
      out.stderr,
      /^ {2}hooks\.mappings\[0\]\.sessionKey: must start with one of hooks\.allowedSessionKeyPrefixes$/m,
    );
    assert.equal(out.stdout, '');
  });

  test('gmailCommand() setup refuses a file it cannot parse or read, and keys of the wrong kind', async () => {
    const dir = await fresh();
    const cases: Array<[string, RegExp]> = [
      ['{ "hooks": ', /cannot parse .*: line 1/],
      ['[1, 2]', /the file must hold a JSON object/],
      ['{ "hooks": true }', /hooks: must be an object/],
      [
        '{ "hooks": { "gmail": [], "presets": "gmail", "allowedSessionKeyPrefixes": {} } }',
        /hooks\.gmail: must be an object\n.*hooks\.presets: must be an array\n.*hooks\.allowedSessionKeyPrefixes: must be an array/,
      ],
      ['{ "gateway": { "port": 0 } }', /gateway\.port is 0 .* pass --port/],
      [
        `{ "x": ${'['.repeat(10_000)}${']'.repeat(10_000)} }`,
        /^ {2}x(\[0\]){63}: may nest objects and arrays at most 64 levels deep$/m,
      ],
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
      [
        ['--account', ACCOUNT, '--include-body', '--no-include-body'],
        /Cannot set both --include-body and --no-include-body/,
      ],
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
    const narrow = applyGmailSetup(
      { hooks: { allowedSessionKeyPrefixes: ['custom:'], allowRequestSessionKey: false, enabled: false } },
      { account: ACCOUNT },
      env,
      () => 't',
    );
    assert.ok(narrow.ok);
    const hooks = narrow.value['hooks'] as Record<string, unknown>;
    assert.deepEqual(hooks['allowedSessionKeyPrefixes'], ['custom:', 'hook:']);
    assert.equal(hooks['token'], 't');
    assert.match(narrow.notes.join('\n'), /hooks\.allowRequestSessionKey was false/);
    assert.match(narrow.notes.join('\n'), /hooks\.enabled was false/);
    assert.doesNotMatch(narrow.notes.join('\n'), /allowedSessionKeyPrefixes was not set/);
    const wide = applyGmailSetup(
      { hooks: { allowedSessionKeyPrefixes: ['HOOK'] } },
      { account: ACCOUNT },
      env,
      () => 't',
    );
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
