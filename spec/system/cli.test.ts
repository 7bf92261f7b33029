import assert from 'node:assert/strict';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { main, version } from '../../lib/cli/main.ts';
import { assertCleanStop, runCli, spawnServer } from '../_cli.ts';
import { captureIo } from '../_io.ts';
import { fileDir, tempDir } from '../_dir.ts';
import { until } from '../_until.ts';

const TOKEN = 'cli-test-token-0123456789abcdef';

const tmp = await fileDir('hooks-cli-');

/** An Io that collects output; `env` isolates config and state under a fresh directory. */
function capture(env: Record<string, string> = {}, signal?: AbortSignal) {
  return captureIo({ HOME: tmp, ...env }, signal === undefined ? {} : { signal });
}

async function writeConfig(name: string, value: unknown): Promise<string> {
  const path = join(tmp, name);
  await writeFile(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
}

function post(url: string, path: string, body: unknown, token = TOKEN): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
}

describe('main() in-process', () => {
  test('main() --version prints the package version', async () => {
    const { io, out } = capture();
    assert.equal(await main(['--version'], io), 0);
    assert.equal(out.stdout, `${version()}\n`);
    assert.match(version(), /^\d+\.\d+\.\d+/);
  });

  test('main() -V and -v print the version, as --version does', async () => {
    for (const flag of ['-V', '-v']) {
      const { io, out } = capture();
      assert.equal(await main([flag], io), 0);
      assert.equal(out.stdout, `${version()}\n`);
    }
  });

  test('main() help COMMAND prints what COMMAND --help prints, for groups and their commands too', async () => {
    for (const command of [['serve'], ['check'], ['events'], ['gmail'], ['gmail', 'run'], ['config']]) {
      const viaHelp = capture();
      assert.equal(await main(['help', ...command], viaHelp.io), 0, command.join(' '));
      const viaFlag = capture();
      assert.equal(await main([...command, '--help'], viaFlag.io), 0);
      assert.equal(viaHelp.out.stdout, viaFlag.out.stdout);
      assert.match(viaHelp.out.stdout, new RegExp(`^Usage: hooks-ingress ${command.join(' ')}`));
    }
    const bare = capture();
    assert.equal(await main(['help'], bare.io), 0);
    assert.match(bare.out.stdout, /^Usage: hooks-ingress \[command\]/);
  });

  test('main() --help lists every command, and each command has its own --help', async () => {
    const { io, out } = capture();
    assert.equal(await main(['--help'], io), 0);
    for (
      const command of [
        'serve',
        'check',
        'events',
        'runs',
        'requests',
        'try',
        'reload',
        'status',
        'send',
        'outbox',
        'inspect',
        'sign',
        'token',
      ]
    ) {
      assert.match(out.stdout, new RegExp(`^  ${command} `, 'm'));
      const one = capture();
      assert.equal(await main([command, '--help'], one.io), 0);
      assert.match(one.out.stdout, new RegExp(`Usage: hooks-ingress ${command}`));
    }
  });

  test('main() answers an unknown command or option with exit code 2', async () => {
    const a = capture();
    assert.equal(await main(['frobnicate'], a.io), 2);
    assert.match(a.out.stderr, /unknown command "frobnicate"/);
    const b = capture();
    assert.equal(await main(['check', '--nope'], b.io), 2);
    assert.match(b.out.stderr, /--nope/);
    const c = capture();
    assert.equal(await main(['serve', '--port', 'eighty'], c.io), 2);
    const d = capture();
    assert.equal(await main(['events', '--limit', '-3'], d.io), 2);
  });

  test('main() token prints a fresh URL-safe token with at least 32 bytes of entropy', async () => {
    const a = capture();
    const b = capture();
    await main(['token'], a.io);
    await main(['token'], b.io);
    const token = a.out.stdout.trim();
    assert.match(token, /^[A-Za-z0-9_-]{43,}$/);
    assert.ok(Buffer.from(token, 'base64url').length >= 32);
    assert.notEqual(token, b.out.stdout.trim());
  });

  test('main() check exits 0 for a valid config and 1 listing every problem of an invalid one', async () => {
    const good = await writeConfig(
      'good.json',
      `{ // a comment\n "hooks": { "enabled": true, "token": "${TOKEN}", } }`,
    );
    const ok = capture();
    assert.equal(await main(['check', '--config', good], ok.io), 0);
    assert.match(ok.out.stdout, /: ok/);

    const bad = await writeConfig('bad.json', {
      hooks: { enabled: true, path: '/', tokn: 'x' },
      gateway: { port: 99999 },
    });
    const ko = capture();
    assert.equal(await main(['check', '--config', bad], ko.io), 1);
    assert.match(ko.out.stderr, /hooks\.tokn: unknown key \(did you mean "token"\?\)/);
    assert.match(ko.out.stderr, /gateway\.port: must be at most 65535/);
  });

  test('main() check reports keys of a pasted OpenClaw hooks section it ignores', async () => {
    const path = await writeConfig('ignored.json', {
      hooks: { enabled: true, token: TOKEN, internal: { enabled: true } },
    });
    const { io, out } = capture();
    assert.equal(await main(['check', '--config', path], io), 0);
    assert.match(out.stderr, /hooks\.internal is not used by hooks-ingress \(ignored\)/);
  });

  test('main() check uses $HOOKS_INGRESS_CONFIG when --config is absent', async () => {
    const path = await writeConfig('env.json', { hooks: { enabled: false } });
    const { io, out } = capture({ HOOKS_INGRESS_CONFIG: path });
    assert.equal(await main(['check'], io), 0);
    assert.match(out.stdout, new RegExp(`${path}: ok`));
  });

  test('main() serve with no config writes a first config with a token, mode 0600, and names the file, not the token', async () => {
    const home = join(tmp, 'first-run');
    const controller = new AbortController();
    const { io, out } = capture(
      { XDG_CONFIG_HOME: join(home, 'config'), XDG_STATE_HOME: join(home, 'state') },
      controller.signal,
    );
    const done = main(['serve', '--port', '0'], io);
    await until('serve to listen', () => out.stdout.includes('listening on'));
    const file = join(home, 'config', 'hooks-ingress', 'config.json');
    const config = JSON.parse(await readFile(file, 'utf8')) as { hooks: { enabled: boolean; token: string } };
    assert.equal(config.hooks.enabled, true);
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.ok(out.stderr.includes(file));
    assert.ok(!out.stderr.includes(config.hooks.token) && !out.stdout.includes(config.hooks.token));

    const url = /listening on (\S+)/.exec(out.stdout)![1]!;
    assert.equal((await post(url, '/hooks/wake', { text: 'first run' }, config.hooks.token)).status, 200);
    controller.abort();
    assert.equal(await done, 0);
    assert.equal((await stat(join(home, 'state', 'hooks-ingress'))).mode & 0o777, 0o700);

    const events = capture({ XDG_CONFIG_HOME: join(home, 'config'), XDG_STATE_HOME: join(home, 'state') });
    assert.equal(await main(['events', '--json'], events.io), 0);
    const lines = events.out.stdout.trim().split('\n').map((l) =>
      JSON.parse(l) as { kind: string; text: string; time: string; source?: string }
    );
    // The wake and the heartbeat it asked for, kept in the default state directory. Whether the
    // heartbeat's turn ran before the stop depends on the machine's pace; with no model configured
    // it notes its failure (a system event from 'heartbeat'), which is the turn's, not the first run's.
    const turnNotes = lines.filter((e) => e.kind === 'system' && e.source === 'heartbeat');
    assert.ok(turnNotes.every((e) => e.text.startsWith('Heartbeat (')), JSON.stringify(turnNotes));
    assert.deepEqual(lines.filter((e) => !turnNotes.includes(e)).map((e) => [e.kind, e.text]), [
      ['system', 'first run'],
      ['heartbeat', 'Heartbeat requested (wake)'],
    ]);
    assert.ok(lines.every((e) => !Number.isNaN(Date.parse(e.time))));
  });

  test('main() serve refuses to start on an invalid config and lists the problems', async () => {
    const path = await writeConfig('invalid.json', { hooks: { enabled: true } });
    const { io, out } = capture();
    assert.equal(await main(['serve', '--config', path, '--port', '0'], io), 1);
    assert.match(out.stderr, /hooks\.token: is required when hooks\.enabled is true/);
  });

  test('main() serve exits 1 when the port is taken', async () => {
    const path = await writeConfig('busy.json', { hooks: { enabled: true, token: TOKEN } });
    const controller = new AbortController();
    const first = capture({}, controller.signal);
    const running = main(['serve', '--config', path, '--port', '0', '--state-dir', join(tmp, 'busy-a')], first.io);
    await until('the first serve to listen', () => first.out.stdout.includes('listening on'));
    const port = /:(\d+)\n/.exec(first.out.stdout)![1]!;
    const second = capture();
    assert.equal(
      await main(['serve', '--config', path, '--port', port, '--state-dir', join(tmp, 'busy-b')], second.io),
      1,
    );
    assert.match(second.out.stderr, /cannot listen/);
    controller.abort();
    assert.equal(await running, 0);
  });

  test('main() events --limit prints only the last N, and --follow prints new events until stopped', async () => {
    const path = await writeConfig('events.json', {
      hooks: { enabled: true, token: TOKEN },
      state: { dir: 'events-state' },
    });
    const controller = new AbortController();
    const server = capture({}, controller.signal);
    const running = main(['serve', '--config', path, '--port', '0'], server.io);
    await until('serve to listen', () => server.out.stdout.includes('listening on'));
    const url = /listening on (\S+)/.exec(server.out.stdout)![1]!;
    for (const text of ['one', 'two', 'three']) await post(url, '/hooks/wake', { text, mode: 'next-heartbeat' });

    const limited = capture();
    assert.equal(await main(['events', '--config', path, '--limit', '2'], limited.io), 0);
    assert.deepEqual(limited.out.stdout.trim().split('\n').map((l) => l.split('  ').at(-1)), ['two', 'three']);

    const stopFollow = new AbortController();
    const follower = capture({}, stopFollow.signal);
    const following = main(['events', '--config', path, '--follow', '--limit', '1'], follower.io);
    // Its first page is printed once it has read the journal; only then is "four" new to it.
    await until('the first page of events --follow', () => follower.out.stdout.includes('three'));
    await post(url, '/hooks/wake', { text: 'four', mode: 'next-heartbeat' });
    await until('events --follow to print the new event', () => follower.out.stdout.includes('four'));
    stopFollow.abort();
    assert.equal(await following, 0);
    assert.deepEqual(follower.out.stdout.trim().split('\n').map((l) => l.split('  ').at(-1)), ['three', 'four']);
    controller.abort();
    assert.equal(await running, 0);
  });
});

describe('hooks-ingress as a process', () => {
  test('the executable prints its version and exits 0', async () => {
    const { code, stdout } = await runCli(['--version']);
    assert.equal(code, 0);
    assert.equal(stdout.trim(), version());
  });

  test('SIGTERM stops the server with exit code 0 after answering the request in flight', async () => {
    const config = await writeConfig('term.json', { hooks: { enabled: true, token: TOKEN } });
    const server = await spawnServer(['--config', config, '--port', '0', '--state-dir', join(tmp, 'term-state')]);
    const pending = post(server.url, '/hooks/wake', { text: 'in flight' });
    const answered = await pending;
    server.child.kill('SIGTERM');
    assert.equal(answered.status, 200);
    await assertCleanStop(server);
  });

  test('an acknowledged wake survives kill -9 exactly once, and a torn last line does not stop the restart', async () => {
    const config = await writeConfig('crash.json', { hooks: { enabled: true, token: TOKEN } });
    const state = join(tmp, 'crash-state');
    const server = await spawnServer(['--config', config, '--port', '0', '--state-dir', state]);
    const acknowledged: string[] = [];
    let stop = false;
    // Four senders keep wakes in flight; the kill lands in the middle of that stream.
    const senders = Array.from({ length: 4 }, async (_, s) => {
      for (let i = 0; !stop; i++) {
        const text = `crash ${s}-${i}`;
        try {
          const res = await post(server.url, '/hooks/wake', { text, mode: 'next-heartbeat' });
          if (res.status === 200) acknowledged.push(text);
        } catch {
          return; // the connection died with the server: not acknowledged
        }
      }
    });
    await until('40 acknowledged wakes', () => acknowledged.length >= 40);
    server.child.kill('SIGKILL');
    await server.exited;
    stop = true;
    await Promise.all(senders);
    // A crash can also leave half a line behind.
    await writeFile(join(state, 'journal.jsonl'), '{"t":"event","seq":999999,"te', { flag: 'a' });

    const again = await spawnServer(['--config', config, '--port', '0', '--state-dir', state]);
    assert.equal((await post(again.url, '/hooks/wake', { text: 'after restart', mode: 'next-heartbeat' })).status, 200);
    again.child.kill('SIGTERM');
    await assertCleanStop(again);

    const { code, stdout } = await runCli(['events', '--json', '--state-dir', state]);
    assert.equal(code, 0);
    const texts = stdout.trim().split('\n').map((l) => (JSON.parse(l) as { text: string }).text);
    for (const text of acknowledged) {
      assert.equal(texts.filter((t) => t === text).length, 1, `${text} present exactly once`);
    }
    assert.equal(texts.at(-1), 'after restart');
  });
});

test('main(): a state directory that is a file is one line naming the path and why, not a stack trace, for every command that reads or takes it', async (t) => {
  const dir = await tempDir(t, 'cli-file-state-');
  const file = join(dir, 'not-a-dir');
  await writeFile(file, 'x');
  for (const argv of [['events'], ['runs'], ['outbox'], ['outbox', 'retry', '--dead'], ['requests']]) {
    const { io, out } = captureIo({});
    const code = await main([...argv, '--state-dir', file], io);
    assert.equal(code, 1, argv.join(' '));
    assert.equal(out.stderr.split('\n').length, 2, `${argv.join(' ')}: ${out.stderr}`);
    assert.match(out.stderr, new RegExp(`^hooks-ingress ${argv[0]}( retry)?: .*${file}`), argv.join(' '));
  }
});
