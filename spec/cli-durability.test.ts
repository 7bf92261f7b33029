// The state directory's guarantees, tried on real processes, real files and kill -9.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { assertCleanStop, runCli, spawnServer } from './_cli.ts';
import { post } from './_http.ts';

const TOKEN = 'durability-token-0123456789abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };

let tmp = '';
let config = '';
before(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'hooks-durability-'));
  config = join(tmp, 'config.json');
  await writeFile(config, JSON.stringify({ hooks: { enabled: true, token: TOKEN } }));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

function wake(url: string, text: string) {
  return post(url, '/hooks/wake', { headers: AUTH, body: { text, mode: 'next-heartbeat' } });
}

async function eventTexts(state: string): Promise<string[]> {
  const { code, stdout, stderr } = await runCli(['events', '--json', '--state-dir', state]);
  assert.equal(code, 0, stderr);
  return stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => (JSON.parse(l) as { text: string }).text);
}

describe('one state directory, one server', () => {
  test('a second serve on a held state directory exits 1 naming it and the holder; events reads it meanwhile; kill -9 leaves no blocking lock', { timeout: 60_000 }, async () => {
    const state = join(tmp, 'shared');
    const args = ['--config', config, '--port', '0', '--state-dir', state];
    const first = await spawnServer(args);
    assert.equal((await wake(first.url, 'from the first')).status, 200);

    const second = await runCli(['serve', ...args]);
    assert.equal(second.code, 1);
    const lines = second.stderr.trim().split('\n');
    assert.equal(lines.length, 1, second.stderr);
    assert.ok(lines[0]!.includes(state) && lines[0]!.includes(`pid ${first.child.pid}`), lines[0]);
    // The refused server touched nothing: the first one's lock and journal are intact.
    assert.equal((await readFile(join(state, 'hooks-ingress.pid'), 'utf8')).trim(), String(first.child.pid));
    assert.equal((await wake(first.url, 'still the first')).status, 200);
    assert.deepEqual(await eventTexts(state), ['from the first', 'still the first']);
    const runs = await runCli(['runs', '--state-dir', state]);
    assert.equal(runs.code, 0, runs.stderr);

    first.child.kill('SIGKILL');
    await first.exited;
    const third = await spawnServer(args);
    assert.equal((await wake(third.url, 'after the crash')).status, 200);
    third.child.kill('SIGTERM');
    await assertCleanStop(third);
    await assert.rejects(readFile(join(state, 'hooks-ingress.pid')), { code: 'ENOENT' });
    assert.deepEqual(await eventTexts(state), ['from the first', 'still the first', 'after the crash']);
  });

  test('a lock naming a live pid that started after the lock was written (a reused pid) does not block the start', { timeout: 60_000 }, async (t) => {
    if (process.platform !== 'linux') return t.skip('telling a reused pid apart needs /proc (Linux)');
    const state = join(tmp, 'reused');
    await mkdir(state, { recursive: true });
    const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
    t.after(() => void sleeper.kill());
    const lock = join(state, 'hooks-ingress.pid');
    await writeFile(lock, `${sleeper.pid}\n`);
    const hourAgo = new Date(Date.now() - 3_600_000);
    await utimes(lock, hourAgo, hourAgo);
    const server = await spawnServer(['--config', config, '--port', '0', '--state-dir', state]);
    assert.equal((await readFile(lock, 'utf8')).trim(), String(server.child.pid));
    server.child.kill('SIGTERM');
    await assertCleanStop(server);
  });
});

describe('the state directory at start', () => {
  test('a state directory that cannot be created ends serve with exit 1 and one line naming it and the reason', async () => {
    const file = join(tmp, 'plain-file');
    await writeFile(file, 'not a directory');
    const state = join(file, 'state');
    const { code, stderr } = await runCli(['serve', '--config', config, '--port', '0', '--state-dir', state]);
    assert.equal(code, 1);
    assert.equal(stderr.trim().split('\n').length, 1, stderr);
    assert.match(stderr, new RegExp(`cannot use state directory ${state}: ENOTDIR`));
    assert.doesNotMatch(stderr, /\n\s+at /);
  });

  test('a state directory without write permission ends serve with exit 1 and one line', async (t) => {
    if (process.getuid?.() === 0) return t.skip('root writes through any permission bits, so this cannot be shown as root');
    const state = join(tmp, 'read-only');
    await mkdir(state, { mode: 0o500 });
    t.after(() => chmod(state, 0o700));
    const { code, stderr } = await runCli(['serve', '--config', config, '--port', '0', '--state-dir', state]);
    assert.equal(code, 1);
    assert.equal(stderr.trim().split('\n').length, 1, stderr);
    assert.match(stderr, new RegExp(`cannot use state directory ${state}: EACCES`));
  });

  test('events and runs on a state directory that does not exist exit 1 saying so', async () => {
    const state = join(tmp, 'never-used');
    for (const command of ['events', 'runs']) {
      const { code, stdout, stderr } = await runCli([command, '--state-dir', state]);
      assert.equal(code, 1, command);
      assert.equal(stdout, '');
      assert.match(stderr, new RegExp(`state directory ${state} does not exist`));
    }
  });
});

describe('the journal reader', () => {
  test('lines and entries of the wrong shape are skipped with their line numbers; serve, events and runs go on with sane sequence numbers', { timeout: 60_000 }, async () => {
    const state = join(tmp, 'shapes');
    await mkdir(state);
    const time = '2026-01-01T00:00:00.000Z';
    const event = (seq: number, text: string) => ({ seq, time, kind: 'system', text, source: 'wake', mode: 'next-heartbeat' });
    const lines = [
      { t: 'commit', seq: 1, time, events: [event(1, 'good one')] },
      null,
      { events: 'x' },
      { t: 'commit', seq: 2, time, events: [null, event(2, 'good two')] },
      { runs: [null] },
      { t: 'commit', seq: 3, time, runs: [null] },
      { t: 'commit', seq: 1e308, time, events: [event(1e308, 'huge seq')] },
      { t: 'commit', seq: 4, time, events: [{ ...event(4, 'bad kind'), kind: 7 }] },
      { t: 'idem', seq: 0, scope: 'wake', key: 'k', status: 200, body: null, expiresAt: 1 },
    ];
    await writeFile(join(state, 'journal.jsonl'), `${lines.map((l) => JSON.stringify(l)).join('\n')}\n{not json\n${JSON.stringify({ t: 'commit', seq: 5, time })}\n`);

    const events = await runCli(['events', '--json', '--state-dir', state]);
    assert.equal(events.code, 0, events.stderr);
    assert.deepEqual(events.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { text: string }).text), ['good one', 'good two']);
    const skipped = [...events.stderr.matchAll(/journal line (\d+) skipped/g)].map((m) => Number(m[1]));
    assert.deepEqual(skipped, [2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const runs = await runCli(['runs', '--json', '--state-dir', state]);
    assert.equal(runs.code, 0, runs.stderr);
    assert.equal(runs.stdout, '');

    const server = await spawnServer(['--config', config, '--port', '0', '--state-dir', state]);
    assert.equal((await wake(server.url, 'after the damage')).status, 200);
    server.child.kill('SIGTERM');
    await assertCleanStop(server);
    const logged = server.stderr().split('\n').filter((l) => l.includes('"msg":"journal line skipped"'));
    assert.equal(logged.length, 9, server.stderr());
    const after = await runCli(['events', '--json', '--state-dir', state]);
    const last = JSON.parse(after.stdout.trim().split('\n').at(-1)!) as { seq: number; text: string };
    assert.deepEqual([last.text, last.seq], ['after the damage', 6]);
  });
});
