// The state directory's guarantees, tried on real processes, real files and kill -9.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdir, readFile, rename, rm, utimes, writeFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { defer } from '../_cleanup.ts';
import { assertCleanStop, configFile, runCli, type Spawned, spawnServer, stopAfter } from '../_cli.ts';
import { fake } from '../_fake-server.ts';
import { post, send } from '../_http.ts';
import { fileDir } from '../_dir.ts';

const TOKEN = 'durability-token-0123456789abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };

const tmp = await fileDir('hooks-durability-');
const config = join(tmp, 'config.json');
await writeFile(config, JSON.stringify({ hooks: { enabled: true, token: TOKEN } }));

// A server that is killed when its test ends, whatever happened in it.
async function started(t: TestContext, args: readonly string[]): Promise<Spawned> {
  const server = await spawnServer(args);
  stopAfter(t, server, 'SIGKILL');
  return server;
}

// What serve printed besides its readiness warnings (no model, no channel in these configs).
function problemLines(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l !== '' && !/^hooks-ingress( serve)?: warning: /.test(l));
}

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
  test(
    'a second serve on a held state directory exits 1 naming it and the holder; events reads it meanwhile; kill -9 leaves no blocking lock',
    { timeout: 60_000 },
    async (t) => {
      const state = join(tmp, 'shared');
      const args = ['--config', config, '--port', '0', '--state-dir', state];
      const first = await started(t, args);
      assert.equal((await wake(first.url, 'from the first')).status, 200);

      const second = await runCli(['serve', ...args]);
      assert.equal(second.code, 1);
      const lines = problemLines(second.stderr);
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
      const third = await started(t, args);
      assert.equal((await wake(third.url, 'after the crash')).status, 200);
      third.child.kill('SIGTERM');
      await assertCleanStop(third);
      await assert.rejects(readFile(join(state, 'hooks-ingress.pid')), { code: 'ENOENT' });
      assert.deepEqual(await eventTexts(state), ['from the first', 'still the first', 'after the crash']);
    },
  );

  test('a lock naming a live pid that started after the lock was written (a reused pid) does not block the start', {
    timeout: 60_000,
  }, async (t) => {
    if (process.platform !== 'linux') return t.skip('telling a reused pid apart needs /proc (Linux)');
    const state = join(tmp, 'reused');
    await mkdir(state, { recursive: true });
    const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
    defer(t, () => void sleeper.kill());
    const lock = join(state, 'hooks-ingress.pid');
    await writeFile(lock, `${sleeper.pid}\n`);
    const hourAgo = new Date(Date.now() - 3_600_000);
    await utimes(lock, hourAgo, hourAgo);
    const server = await started(t, ['--config', config, '--port', '0', '--state-dir', state]);
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
    assert.equal(problemLines(stderr).length, 1, stderr);
    assert.match(stderr, new RegExp(`cannot use state directory ${state}: ENOTDIR`));
    assert.doesNotMatch(stderr, /\n\s+at /);
  });

  test('a state directory without write permission ends serve with exit 1 and one line', async (t) => {
    if (process.getuid?.() === 0) {
      return t.skip('root writes through any permission bits, so this cannot be shown as root');
    }
    const state = join(tmp, 'read-only');
    await mkdir(state, { mode: 0o500 });
    defer(t, () => chmod(state, 0o700));
    const { code, stderr } = await runCli(['serve', '--config', config, '--port', '0', '--state-dir', state]);
    assert.equal(code, 1);
    assert.equal(problemLines(stderr).length, 1, stderr);
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
  test(
    'lines and entries of the wrong shape are skipped with their line numbers; serve, events and runs go on with sane sequence numbers',
    { timeout: 60_000 },
    async (t) => {
      const state = join(tmp, 'shapes');
      await mkdir(state);
      const time = '2026-01-01T00:00:00.000Z';
      const event = (seq: number, text: string) => ({
        seq,
        time,
        kind: 'system',
        text,
        source: 'wake',
        mode: 'next-heartbeat',
      });
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
      await writeFile(
        join(state, 'journal.jsonl'),
        `${lines.map((l) => JSON.stringify(l)).join('\n')}\n{not json\n${
          JSON.stringify({ t: 'commit', seq: 5, time })
        }\n`,
      );

      const events = await runCli(['events', '--json', '--state-dir', state]);
      assert.equal(events.code, 0, events.stderr);
      assert.deepEqual(events.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { text: string }).text), [
        'good one',
        'good two',
      ]);
      const skipped = [...events.stderr.matchAll(/journal line (\d+) skipped/g)].map((m) => Number(m[1]));
      assert.deepEqual(skipped, [2, 3, 4, 5, 6, 7, 8, 9, 10]);
      const runs = await runCli(['runs', '--json', '--state-dir', state]);
      assert.equal(runs.code, 0, runs.stderr);
      assert.equal(runs.stdout, '');

      const server = await started(t, ['--config', config, '--port', '0', '--state-dir', state]);
      assert.equal((await wake(server.url, 'after the damage')).status, 200);
      server.child.kill('SIGTERM');
      await assertCleanStop(server);
      const logged = server.stderr().split('\n').filter((l) => l.includes('"msg":"journal line skipped"'));
      assert.equal(logged.length, 9, server.stderr());
      const after = await runCli(['events', '--json', '--state-dir', state]);
      const last = JSON.parse(after.stdout.trim().split('\n').at(-1)!) as { seq: number; text: string };
      assert.deepEqual([last.text, last.seq], ['after the damage', 6]);
    },
  );
});

// A model API that takes every request and never answers it.
async function silentModel(t: TestContext): Promise<string> {
  const held: ServerResponse[] = [];
  const server = await fake(t, (_req, res) => void held.push(res));
  return `${server.url}/v1`;
}

async function runCount(state: string): Promise<number> {
  const { code, stdout, stderr } = await runCli(['runs', '--json', '--state-dir', state]);
  assert.equal(code, 0, stderr);
  return stdout.split('\n').filter((l) => l !== '').length;
}

describe('the queue bound under concurrency', () => {
  test(
    '50 concurrent /hooks/agent requests against a model that never answers get exactly hooks.maxQueuedRuns accepted; the rest 503 with Retry-After and nothing recorded',
    { timeout: 60_000 },
    async (t) => {
      const model = await silentModel(t);
      const { config: path, state } = await configFile(t, {
        hooks: {
          enabled: true,
          token: TOKEN,
          maxQueuedRuns: 3,
          mappings: [{ match: { path: 'batch' }, messageTemplate: '{{items[0]}}', forEach: 'items' }],
        },
        agents: { defaults: { model: 'silent/m', maxConcurrent: 2 } },
        models: { providers: { silent: { api: 'openai-completions', baseUrl: model } } },
      });
      const server = await started(t, ['--config', path, '--port', '0', '--state-dir', state]);
      const replies = await Promise.all(
        Array.from(
          { length: 50 },
          (_, i) => post(server.url, '/hooks/agent', { headers: AUTH, body: { message: `run ${i}`, deliver: false } }),
        ),
      );
      const statuses = replies.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 202).length, 3, statuses.join(','));
      assert.equal(statuses.filter((s) => s === 503).length, 47, statuses.join(','));
      assert.ok(replies.filter((r) => r.status === 503).every((r) => r.headers['retry-after'] === '30'));
      // A forEach batch counts each of its runs: two more do not fit a full queue, nor would one.
      const batch = await post(server.url, '/hooks/batch', { headers: AUTH, body: { items: ['a', 'b'] } });
      assert.equal(batch.status, 503, batch.text);
      assert.equal(await runCount(state), 3);
      server.child.kill('SIGTERM');
      await assertCleanStop(server);
      assert.equal(await runCount(state), 3);
    },
  );
});

describe('a journal that is gone or replaced', () => {
  test(
    'after rm or replacement of the journal, a wake is answered 503 with Retry-After, the journal is rewritten with everything retained, and all acknowledged wakes survive kill -9',
    { timeout: 60_000 },
    async (t) => {
      const state = join(tmp, 'removed');
      const args = ['--config', config, '--port', '0', '--state-dir', state];
      const server = await started(t, args);
      const journal = join(state, 'journal.jsonl');
      const first = await post(server.url, '/hooks/wake', {
        headers: { ...AUTH, 'idempotency-key': 'before' },
        body: { text: 'before', mode: 'next-heartbeat' },
      });
      assert.equal(first.status, 200);
      const acknowledged = ['before'];
      for (const damage of ['rm', 'replace'] as const) {
        if (damage === 'rm') await rm(journal);
        else {
          await writeFile(`${journal}.other`, '');
          await rename(`${journal}.other`, journal);
        }
        const refused = await wake(server.url, `refused after ${damage}`);
        assert.equal(refused.status, 503, refused.text);
        assert.equal(refused.headers['retry-after'], '1');
        // The server rewrites the journal by itself; /healthz says when it is done.
        for (let i = 0; (await send(server.url, '/healthz')).status !== 200; i++) {
          assert.ok(i < 500, 'the journal was not rewritten');
          await new Promise((r) => setTimeout(r, 10));
        }
        const text = `after ${damage}`;
        assert.equal((await wake(server.url, text)).status, 200);
        acknowledged.push(text);
      }
      server.child.kill('SIGKILL');
      await server.exited;

      assert.deepEqual(await eventTexts(state), acknowledged);
      const again = await started(t, args);
      const replayed = await post(again.url, '/hooks/wake', {
        headers: { ...AUTH, 'idempotency-key': 'before' },
        body: { text: 'before', mode: 'next-heartbeat' },
      });
      assert.equal(replayed.headers['idempotent-replayed'], 'true');
      again.child.kill('SIGTERM');
      await assertCleanStop(again);
      assert.deepEqual(await eventTexts(state), acknowledged);
    },
  );

  test(
    '/healthz answers 503 as soon as the journal is gone, and 200 once it is rewritten',
    { timeout: 60_000 },
    async (t) => {
      const state = join(tmp, 'health');
      const server = await started(t, ['--config', config, '--port', '0', '--state-dir', state]);
      assert.equal((await wake(server.url, 'kept')).status, 200);
      await rm(join(state, 'journal.jsonl'));
      assert.equal((await send(server.url, '/healthz')).status, 503);
      for (let i = 0; (await send(server.url, '/healthz')).status !== 200; i++) {
        assert.ok(i < 500, 'the journal was not rewritten');
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.deepEqual(await eventTexts(state), ['kept']);
      server.child.kill('SIGTERM');
      await assertCleanStop(server);
    },
  );
});

describe('compaction and the backlog', () => {
  test('compaction keeps every unconsumed event: 40 MB of wakes nobody has read all survive a restart', {
    timeout: 120_000,
  }, async (t) => {
    const state = join(tmp, 'flood');
    const args = ['--config', config, '--port', '0', '--state-dir', state];
    const server = await started(t, args);
    const texts: string[] = [];
    for (let i = 0; i < 200; i++) {
      const text = `${String(i).padStart(3, '0')} ${'x'.repeat(200_000)}`;
      assert.equal((await wake(server.url, text)).status, 200);
      texts.push(text.slice(0, 3));
    }
    server.child.kill('SIGKILL');
    await server.exited;
    const journalBytes = (await readFile(join(state, 'journal.jsonl'))).length;
    assert.ok(journalBytes < 200 * 200_000 * 1.5, 'the journal was compacted at least once');
    assert.deepEqual((await eventTexts(state)).map((t) => t.slice(0, 3)), texts);
  });

  test('a wake text past hooks.maxEventBytes is answered 413 naming the field, from /wake and from a transform', {
    timeout: 60_000,
  }, async (t) => {
    const { dir, config: path, state } = await configFile(t, {
      hooks: {
        enabled: true,
        token: TOKEN,
        maxBodyBytes: 1_000_000,
        maxEventBytes: 1_000,
        mappings: [{ match: { path: 'big' }, action: 'wake', transform: { module: 'big.js' } }],
      },
    });
    await mkdir(join(dir, 'hooks', 'transforms'), { recursive: true });
    await writeFile(
      join(dir, 'hooks', 'transforms', 'big.js'),
      "export default () => ({ kind: 'wake', text: 'y'.repeat(5000) });\n",
    );
    const server = await started(t, ['--config', path, '--port', '0', '--state-dir', state]);
    const direct = await wake(server.url, 'x'.repeat(1_001));
    assert.equal(direct.status, 413, direct.text);
    assert.deepEqual([direct.body['code'], direct.body['error']], [
      'ERR_FIELD_TOO_LARGE',
      'text: is 1001 bytes; the limit is 1000 (hooks.maxEventBytes)',
    ]);
    const mapped = await post(server.url, '/hooks/big', { headers: AUTH, body: {} });
    assert.equal(mapped.status, 413, mapped.text);
    assert.match(
      String(mapped.body['error']),
      /^mapping mapping-1: wake text: is \d+ bytes; the limit is 1000 \(hooks\.maxEventBytes\)$/,
    );
    assert.equal((await wake(server.url, 'x'.repeat(1_000))).status, 200);
    server.child.kill('SIGTERM');
    await assertCleanStop(server);
    assert.deepEqual((await eventTexts(state)).map((t) => t.length), [1_000]);
  });

  test('at hooks.maxBacklogEvents unconsumed events a new wake gets 503 with Retry-After and nothing is recorded', {
    timeout: 60_000,
  }, async (t) => {
    const { config: path, state } = await configFile(t, {
      hooks: { enabled: true, token: TOKEN, maxBacklogEvents: 5 },
    });
    const server = await started(t, ['--config', path, '--port', '0', '--state-dir', state]);
    const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => wake(server.url, `w${i}`)));
    assert.deepEqual(replies.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 503, 503, 503]);
    assert.ok(replies.filter((r) => r.status === 503).every((r) => r.headers['retry-after'] === '30'));
    server.child.kill('SIGTERM');
    await assertCleanStop(server);
    assert.equal((await eventTexts(state)).length, 5);
  });
});
