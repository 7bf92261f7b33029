// `hooks-ingress gmail run` and the companion beside serve (lib/cli/gmail-companion.ts): gog's
// arguments, finding it on PATH, and what is refused before gog starts. The supervisor that keeps
// gog running is in runtime-gmail-companion.test.ts.
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadConfig } from '../lib/config/load.ts';
import { companionArgs, findOnPath, INSTALL_HINT, serveCompanion } from '../lib/cli/gmail-companion.ts';
import { gmailCommand } from '../lib/cli/gmail.ts';
import { ACCOUNT, BOUNDED_WAIT, fakeGog, gmailFiles } from './_gmail.ts';

const { fresh, capture, setupRun } = await gmailFiles();

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
