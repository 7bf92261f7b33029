import assert from 'node:assert/strict';
import { chmod, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { main } from '../lib/cli/main.ts';
import { logWriter } from '../lib/cli/serve.ts';
import { until } from './_until.ts';
import { captureIo } from './_io.ts';
import { configFile } from './_cli.ts';
import { flood } from './_http.ts';

/** Starts `serve` in-process on a free port; resolves once it listens, with what it wrote so far and a stop. */
async function serveOnce(t: TestContext, args: string[], stderrIsTerminal: boolean) {
  const { dir, config: path } = await configFile(
    t,
    { hooks: { enabled: true, token: 'a-token-for-serve' } },
    'hooks-serve-',
  );
  const stop = new AbortController();
  const { io, out } = captureIo({ HOME: dir }, { signal: stop.signal, stderrIsTerminal });
  const running = main(['serve', '-c', path, '--port', '0', '--state-dir', join(dir, 'state'), ...args], io);
  await until('serve to start', () => out.stderr.includes('started'));
  stop.abort();
  assert.equal(await running, 0);
  return out;
}

test('serve on a terminal logs text lines and warns first that runs and heartbeats cannot work yet', async (t) => {
  const out = await serveOnce(t, [], true);
  const lines = out.stderr.trimEnd().split('\n');
  assert.deepEqual(lines.slice(0, 2), [
    'hooks-ingress serve: warning: agent "main" has no model and agents.defaults.model is not set: agent runs and heartbeats will fail',
    'hooks-ingress serve: warning: no channel is configured (channels): run replies (deliver defaults to true) and heartbeat replies will not be delivered',
  ]);
  assert.match(
    lines[2]!,
    /^\d{4}-\d\d-\d\dT[\d:.]+Z info  started {2}url=http:\/\/127\.0\.0\.1:\d+ stateDir=\S+ hooks=\/hooks activated=false$/,
  );
  assert.ok(lines.slice(2).every((line) => !line.startsWith('{')), out.stderr);
});

test('serve --log-format json logs JSON lines on a terminal too', async (t) => {
  const out = await serveOnce(t, ['--log-format', 'json'], true);
  const started = out.stderr.split('\n').find((line) => line.includes('"started"'));
  assert.ok(started !== undefined, out.stderr);
  assert.equal((JSON.parse(started) as { msg: string }).msg, 'started');
});

test('serve --log-format text logs text where stderr is not a terminal', async (t) => {
  const out = await serveOnce(t, ['--log-format', 'text'], false);
  assert.match(out.stderr, /^\S+Z info {2}started {2}url=/m);
});

test('logWriter() passes JSON through untouched, or rewrites it as text', () => {
  const line = '{"time":"t","level":"info","msg":"stopped"}\n';
  let written = '';
  logWriter('json', (s) => void (written += s))(line);
  assert.equal(written, line);
  written = '';
  logWriter('text', (s) => void (written += s))(line);
  assert.equal(written, 't info  stopped\n');
});

/** Runs `serve` in-process with `state` as its state directory until it started (then stops it) or ended. */
async function serveWithState(t: TestContext, prepare: (state: string, config: string) => Promise<void>) {
  const { dir, config: path } = await configFile(
    t,
    { hooks: { enabled: true, token: 'a-token-for-serve' } },
    'hooks-serve-state-',
  );
  const state = join(dir, 'state');
  await prepare(state, path);
  const stop = new AbortController();
  const { io, out } = captureIo({ HOME: dir }, { signal: stop.signal });
  let ended = false;
  const running = main(['serve', '-c', path, '--port', '0', '--state-dir', state], io).finally(() => (ended = true));
  await until('serve to start or end', () => ended || out.stderr.includes('"started"'));
  stop.abort();
  return { code: await running, state, mode: (await stat(state)).mode & 0o7777, ...out };
}

test('serve creates its state directory 0700', async (t) => {
  const run = await serveWithState(t, async () => {});
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.mode, 0o700);
});

test('serve takes write access from others on an existing state directory, and says so', async (t) => {
  const run = await serveWithState(t, async (state) => {
    await mkdir(state);
    await chmod(state, 0o777);
  });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.mode, 0o755);
  assert.match(
    run.stderr,
    new RegExp(`warning: state directory ${run.state} was writable by others \\(mode 0777\\): now 0755\\n`),
  );
});

test('serve refuses a shared state directory (sticky and writable by all, as /tmp)', async (t) => {
  const run = await serveWithState(t, async (state) => {
    await mkdir(state);
    await chmod(state, 0o1777);
  });
  assert.equal(run.code, 1);
  assert.equal(run.mode, 0o1777, 'left as it was');
  assert.match(
    run.stderr,
    new RegExp(
      `cannot use state directory ${run.state}: it is shared \\(mode 01777, the sticky bit\\): give the server a directory of its own\\n`,
    ),
  );
});

test('serve warns, as check does, about a world-readable config file that holds the hook token', async (t) => {
  const run = await serveWithState(t, (_state, config) => chmod(config, 0o644));
  assert.equal(run.code, 0, run.stderr);
  assert.match(
    run.stderr,
    /warning: \S+config\.json is world-readable \(mode 0644\) and holds a secret in hooks\.token: /,
  );
});

test('serve under a flood of 20,000 wakes past the backlog bound writes a few lines, and the counts of the 503s add up, the last written at the stop, before "stopped"', async (t) => {
  const token = 'a-token-for-serve-0123456789';
  const { dir, config: path } = await configFile(
    t,
    { hooks: { enabled: true, token, maxBacklogEvents: 100 } },
    'hooks-serve-',
  );
  const stop = new AbortController();
  const { io, out } = captureIo({ HOME: dir }, { signal: stop.signal });
  const running = main(['serve', '-c', path, '--port', '0', '--state-dir', join(dir, 'state')], io);
  const url = await until('serve to listen', () => /listening on (\S+)\n/.exec(out.stdout)?.[1]);
  // Each text its own: an equal one would coalesce into the newest unread event and add nothing to the backlog.
  const wake = (i: number) => {
    const body = `{"text":"soak ${i}","mode":"next-heartbeat"}`;
    return `POST /hooks/wake HTTP/1.1\r\nHost: spec\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  };
  const statuses = await flood(url, 20_000, wake);
  assert.deepEqual([...statuses].sort(), [
    [200, 100],
    [503, 19_900],
  ]);
  stop.abort();
  assert.equal(await running, 0);
  const records = out.stderr.trimEnd().split('\n').filter((line) => line.startsWith('{')).map((line) =>
    JSON.parse(line) as Record<string, unknown>
  );
  const requests = records.filter((r) => r['msg'] === 'request');
  // Every accepted wake keeps its line; the 503s are one line and one count, written at the stop.
  assert.equal(requests.filter((r) => r['status'] === 200).length, 100);
  assert.equal(requests.filter((r) => r['status'] === 503).length, 1);
  // One count per window (a slow machine may take more than one), the last written at the stop.
  const alike = records.filter((r) => r['msg'] === 'refused alike');
  assert.ok(
    alike.every((r) =>
      r['status'] === 503 && r['code'] === 'ERR_UNAVAILABLE' && r['hook'] === 'wake' && r['client'] === '127.0.0.1'
    ),
    JSON.stringify(alike),
  );
  assert.equal(alike.reduce((sum, r) => sum + Number(r['count']), 0), 19_899);
  assert.ok(records.lastIndexOf(alike.at(-1)!) < records.findIndex((r) => r['msg'] === 'stopped'));
  // One line a request would be some 4 MB; the whole log stays far below it.
  assert.ok(out.stderr.length < 100_000, `${out.stderr.length} characters of log`);
});
