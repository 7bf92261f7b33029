import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import type { Io } from '../lib/cli/io.ts';
import { main } from '../lib/cli/main.ts';
import { logWriter } from '../lib/cli/serve.ts';

/** Starts `serve` in-process on a free port; resolves once it listens, with what it wrote so far and a stop. */
async function serveOnce(t: TestContext, args: string[], stderrIsTerminal: boolean) {
  const dir = await mkdtemp(join(tmpdir(), 'hooks-serve-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'config.json');
  await writeFile(path, JSON.stringify({ hooks: { enabled: true, token: 'a-token-for-serve' } }));
  const out = { stdout: '', stderr: '' };
  const stop = new AbortController();
  const io: Io = { stdout: (s) => void (out.stdout += s), stderr: (s) => void (out.stderr += s), env: { HOME: dir }, signal: stop.signal, stderrIsTerminal };
  const running = main(['serve', '-c', path, '--port', '0', '--state-dir', join(dir, 'state'), ...args], io);
  while (!out.stderr.includes('started')) await new Promise((resolve) => setTimeout(resolve, 10));
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
  assert.match(lines[2]!, /^\d{4}-\d\d-\d\dT[\d:.]+Z info  started {2}url=http:\/\/127\.0\.0\.1:\d+ stateDir=\S+ hooks=\/hooks activated=false$/);
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
