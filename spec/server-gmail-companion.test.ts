// The Gmail companion as serve runs it (lib/server/gmail-companion.ts): gog's arguments, finding it
// on PATH, and the companion beside serve. `gmail run` is in cli-gmail-companion.test.ts.
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadConfig } from '../lib/config/load.ts';
import { companionArgs, findOnPath, INSTALL_HINT, serveCompanion } from '../lib/server/gmail-companion.ts';
import { ACCOUNT, BOUNDED_WAIT, fakeGog, gmailFiles } from './_gmail.ts';

const { fresh, capture, setupRun } = await gmailFiles();

describe('companionArgs() and helpers', () => {
  test('companionArgs() passes gog its own serve settings and the push token when hooks.gmail has them', async () => {
    const dir = await fresh();
    const file = join(dir, 'config.json');
    await writeFile(
      file,
      JSON.stringify({
        hooks: {
          enabled: true,
          token: 'tok-0123456789abcdef',
          gmail: {
            account: ACCOUNT,
            hookToken: 'gmail-only-0123456789',
            pushToken: 'push-secret',
            serve: { bind: '0.0.0.0', port: 8788, path: '/gmail-pubsub', other: true },
          },
        },
      }),
    );
    const loaded = await loadConfig(file, {});
    assert.ok(loaded.ok);
    const built = companionArgs(loaded.config);
    assert.ok(built.ok);
    assert.deepEqual(built.args, [
      'gmail',
      'watch',
      'serve',
      '--account',
      ACCOUNT,
      '--bind',
      '0.0.0.0',
      '--port',
      '8788',
      '--path',
      '/gmail-pubsub',
      '--token',
      'push-secret',
      '--hook-url',
      'http://127.0.0.1:8789/hooks/gmail',
      '--hook-token',
      'gmail-only-0123456789',
      '--include-body',
      '--max-bytes',
      '20000',
    ]);
    const shown = companionArgs(loaded.config, true);
    assert.ok(shown.ok);
    assert.deepEqual(shown.args.filter((a) => a.startsWith('<')), [
      '<hooks.gmail.pushToken>',
      '<hooks.gmail.hookToken>',
    ]);
    assert.ok(!shown.args.includes('push-secret') && !shown.args.includes('gmail-only-0123456789'));
  });

  test('companionArgs() never hands gog the hook token: without hooks.gmail.hookToken it names the fix', async () => {
    const dir = await fresh();
    const file = join(dir, 'config.json');
    await writeFile(
      file,
      JSON.stringify({ hooks: { enabled: true, token: 'tok-0123456789abcdef', gmail: { account: ACCOUNT } } }),
    );
    const loaded = await loadConfig(file, {});
    assert.ok(loaded.ok);
    assert.deepEqual(companionArgs(loaded.config), {
      ok: false,
      problem:
        'hooks.gmail.hookToken is not set: run "hooks-ingress gmail setup --account <address>" again to create it',
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
    assert.deepEqual(await serveCompanion(config, capture({ PATH: join(dir, 'empty') }).io), {
      skip: `gog is not on PATH (${INSTALL_HINT})`,
    });
    assert.deepEqual(await serveCompanion(config, capture({ PATH: bin, HOOKS_INGRESS_SKIP_GMAIL_WATCHER: '1' }).io), {
      skip: 'HOOKS_INGRESS_SKIP_GMAIL_WATCHER=1',
    });

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
});
