import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { formatEntry } from '../../lib/cli/outbox.ts';
import type { OutboxEntry } from '../../lib/store/journal/outbox.ts';
import { defer } from '../_cleanup.ts';
import { configFile, runCli, type Spawned, spawnServer } from '../_cli.ts';
import { type FakeGateway, freePort, startFakeGateway, unframe } from '../_fake-openclaw.ts';
import { post } from '../_http.ts';
import { until } from '../_until.ts';
import { captureIo } from '../_io.ts';
import { main } from '../../lib/cli/main.ts';
import { tempDir } from '../_dir.ts';

// Forward mode as an operator runs it: spawned servers, kill -9, the outbox command (issue #14, part 3).

const TOKEN = 'outbox-spec-hook-token-0123456789';
const UPSTREAM_TOKEN = 'outbox-spec-upstream-token-abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };

async function setup(
  t: TestContext,
  fake: Pick<FakeGateway, 'url'>,
  forward: Record<string, unknown> = {},
): Promise<{ args: string[]; state: string }> {
  // Forward mode needs no model, heartbeat or channel section.
  const { config, state } = await configFile(t, {
    hooks: { enabled: true, token: TOKEN, forward: { url: fake.url, token: '${UPSTREAM}', ...forward } },
  }, 'outbox-spec-');
  return { args: ['--config', config, '--state-dir', state], state };
}

async function serve(t: TestContext, args: string[]): Promise<Spawned> {
  const server = await spawnServer([...args, '--port', '0'], { UPSTREAM: UPSTREAM_TOKEN });
  defer(t, async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await server.exited;
  });
  return server;
}

async function outbox(args: string[], ...more: string[]): Promise<OutboxEntry[]> {
  const { code, stdout, stderr } = await runCli(['outbox', '--json', ...more, ...args], { UPSTREAM: UPSTREAM_TOKEN });
  assert.equal(code, 0, stderr);
  return stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as OutboxEntry);
}

/**
 * Starts a server forwarding to a fake upstream that refuses with `status` and `error`, posts one
 * wake with `text`, and waits for its entry to die.
 */
async function serveWithDeadEntry(
  t: TestContext,
  status: number,
  error: string,
  text: string,
): Promise<{ fake: FakeGateway; args: string[]; server: Spawned; dead: OutboxEntry }> {
  const fake = await startFakeGateway(UPSTREAM_TOKEN);
  defer(t, () => fake.close());
  const { args } = await setup(t, fake);
  fake.override = () => ({ status, body: { ok: false, error } });
  const server = await serve(t, args);
  assert.equal((await post(server.url, '/hooks/wake', { headers: AUTH, body: { text } })).status, 200);
  const [dead] = await until('the entry to die', async () => {
    const entries = await outbox(args, '--state', 'dead');
    return entries.length === 1 ? entries : undefined;
  });
  return { fake, args, server, dead: dead! };
}

test(
  'kill -9 while an entry is being forwarded: after the restart it is delivered again with the same key and accepted once',
  { timeout: 90_000 },
  async (t) => {
    const fake = await startFakeGateway(UPSTREAM_TOKEN);
    defer(t, () => fake.close());
    const { args } = await setup(t, fake);
    let release = () => {};
    fake.beforeAnswer = () => new Promise<void>((resolve) => (release = resolve));
    const first = await serve(t, args);
    const accepted = await post(first.url, '/hooks/agent', { headers: AUTH, body: { message: 'Nightly report' } });
    assert.equal(accepted.status, 202, accepted.text);
    await until('the upstream to dispatch the run', async () => (fake.accepted.length === 1 ? true : undefined));
    first.child.kill('SIGKILL');
    await first.exited;
    release();
    fake.beforeAnswer = null;
    const [pending] = await outbox(args);
    assert.equal(pending?.state, 'pending', 'the kill left the entry pending');

    const second = await serve(t, args);
    const [sent] = await until('the entry to be sent', async () => {
      const entries = await outbox(args);
      return entries[0]?.state === 'sent' ? entries : undefined;
    });
    assert.equal(fake.accepted.length, 1, 'the upstream dispatched it once');
    assert.deepEqual(
      fake.received.map((r) => r.key),
      [sent!.id, sent!.id],
      'delivered twice with the same Idempotency-Key',
    );
    assert.equal(sent!.upstreamRunId, fake.accepted[0]!.runId);
    assert.equal(sent!.runId, accepted.body['runId']);
    second.child.kill('SIGTERM');
    await second.exited;
  },
);

test(
  'kill -9 while a merged wake is being forwarded: every wake it carried is still pending after the restart, and goes again merged; none is lost',
  { timeout: 90_000 },
  async (t) => {
    const port = await freePort();
    // One wake per window: every wake carries the ones queued behind it.
    const { args } = await setup(t, { url: `http://127.0.0.1:${port}/hooks` }, { maxPendingWakes: 1 });
    const first = await serve(t, args);
    const texts = ['disk 91 %', 'disk 95 %', 'disk 99 %', 'disk full'];
    for (const text of texts) {
      assert.equal(
        (await post(first.url, '/hooks/wake', { headers: AUTH, body: { text } })).status,
        200,
      );
    }
    const fake = await startFakeGateway(UPSTREAM_TOKEN, port);
    defer(t, () => fake.close());
    fake.beforeAnswer = () => new Promise<void>(() => {});
    await until('the merged wake to reach the upstream', () => (fake.accepted.length === 1 ? true : undefined), {
      timeoutMs: 60_000,
    });
    first.child.kill('SIGKILL');
    await first.exited;
    fake.beforeAnswer = null;
    const left = await outbox(args);
    assert.deepEqual(
      left.map((e) => e.state),
      ['pending', 'pending', 'pending', 'pending'],
      'nothing merged is marked sent before the upstream accepted it',
    );

    const second = await serve(t, args);
    const sent = await until('every entry sent', async () => {
      const entries = await outbox(args);
      return entries.every((e) => e.state === 'sent') ? entries : undefined;
    });
    assert.deepEqual(sent.map((e) => e.batch), Array(4).fill(sent[0]!.id), 'sent together, as one merged wake');
    assert.deepEqual(
      fake.received.map((r) => r.key),
      [sent[0]!.id, sent[0]!.id],
      "the same wake twice, with the head's key (at least once)",
    );
    for (const received of fake.received) assert.deepEqual(unframe(String(received.body['text'])), texts);
    second.child.kill('SIGTERM');
    await second.exited;
  },
);

test(
  "outbox lists dead entries with the upstream's message; outbox retry --dead sends them through the running server",
  { timeout: 90_000 },
  async (t) => {
    const { fake, args, server, dead } = await serveWithDeadEntry(t, 400, 'text required', 'Disk almost full');
    assert.equal(dead.lastError, 'upstream answered 400: text required');
    assert.deepEqual(await outbox(args, '--state', 'pending'), []);
    const human = await runCli(['outbox', ...args], { UPSTREAM: UPSTREAM_TOKEN });
    assert.match(human.stdout, new RegExp(`dead  ${dead.id}  /wake hook=wake attempts=1`));
    assert.match(
      human.stdout,
      /last error: upstream answered 400: text required\n    refused field: text \(accepted here, refused upstream\)\n/,
    );
    assert.equal(dead.refusedField, 'text');

    fake.override = null;
    const retry = await runCli(['outbox', 'retry', '--dead', ...args], { UPSTREAM: UPSTREAM_TOKEN });
    assert.equal(retry.code, 0, retry.stderr);
    assert.equal(retry.stdout, '1 entry pending again; the server is sending them\n');
    await until(
      'the entry to be sent',
      async () => ((await outbox(args, '--state', 'sent')).length === 1 ? true : undefined),
    );
    assert.equal(fake.accepted.length, 1);
    assert.equal(fake.accepted[0]!.key, dead.id);
    server.child.kill('SIGTERM');
    await server.exited;
  },
);

test('outbox retry of a pending entry sends it now instead of at its next attempt; once sent it shows no last error', {
  timeout: 90_000,
}, async (t) => {
  const fake = await startFakeGateway(UPSTREAM_TOKEN);
  defer(t, () => fake.close());
  const { args } = await setup(t, fake);
  // The upstream asks for an hour: without a retry the entry would wait that long.
  fake.override = () => ({
    status: 503,
    body: { ok: false, error: 'maintenance' },
    headers: { 'retry-after': '3600' },
  });
  const server = await serve(t, args);
  assert.equal(
    (await post(server.url, '/hooks/wake', { headers: AUTH, body: { text: 'Backup finished' } })).status,
    200,
  );
  const [pending] = await until('a failed attempt', async () => {
    const entries = await outbox(args);
    return entries[0]?.attempts === 1 ? entries : undefined;
  });
  assert.equal(pending!.state, 'pending');
  assert.equal(pending!.lastError, 'upstream answered 503: maintenance');
  fake.override = null;
  const retry = await runCli(['outbox', 'retry', pending!.id, ...args], { UPSTREAM: UPSTREAM_TOKEN });
  assert.equal(retry.code, 0, retry.stderr);
  const [sent] = await until('the entry to be sent', async () => {
    const entries = await outbox(args, '--state', 'sent');
    return entries.length === 1 ? entries : undefined;
  });
  assert.equal(sent!.lastError, undefined);
  const human = await runCli(['outbox', ...args], { UPSTREAM: UPSTREAM_TOKEN });
  assert.doesNotMatch(human.stdout, /last error/);
  assert.deepEqual(fake.accepted.map((a) => a.key), [pending!.id]);
  server.child.kill('SIGTERM');
  await server.exited;
});

test('outbox retry refuses an id that is not a dead or pending entry, and needs ids or --dead', async (t) => {
  const fake = await startFakeGateway(UPSTREAM_TOKEN);
  defer(t, () => fake.close());
  const { args, state } = await setup(t, fake);
  await mkdir(state, { mode: 0o700 }); // a state directory some server used, with no entry in it
  const unknown = await runCli(['outbox', 'retry', 'nope', ...args], { UPSTREAM: UPSTREAM_TOKEN });
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /not a dead or pending entry: nope/);
  const neither = await runCli(['outbox', 'retry', ...args], { UPSTREAM: UPSTREAM_TOKEN });
  assert.equal(neither.code, 2);
  const badState = await runCli(['outbox', '--state', 'lost', ...args], { UPSTREAM: UPSTREAM_TOKEN });
  assert.equal(badState.code, 2);
});

test(
  'outbox retry with no server running marks the entries pending; the next start sends them',
  { timeout: 90_000 },
  async (t) => {
    const { fake, args, server: first, dead } = await serveWithDeadEntry(t, 422, 'not now', 'x');
    first.child.kill('SIGTERM');
    await first.exited;
    fake.override = null;
    const retry = await runCli(['outbox', 'retry', dead.id, ...args], { UPSTREAM: UPSTREAM_TOKEN });
    assert.equal(retry.code, 0, retry.stderr);
    assert.match(retry.stdout, /sent when the server starts/);
    assert.equal((await outbox(args, '--state', 'pending')).length, 1);
    const second = await serve(t, args);
    await until(
      'the entry to be sent',
      async () => ((await outbox(args, '--state', 'sent')).length === 1 ? true : undefined),
    );
    assert.deepEqual(fake.accepted.map((a) => a.key), [dead.id]);
    second.child.kill('SIGTERM');
    await second.exited;
  },
);

test(
  'outbox retry asks the running server over its control channel: an id that is not dead is refused by the server, and a stale pid file is never signalled',
  { timeout: 90_000 },
  async (t) => {
    const { fake, args, server, dead } = await serveWithDeadEntry(t, 400, 'no', 'y');
    const state = args[args.indexOf('--state-dir') + 1]!;
    const refused = await runCli(['outbox', 'retry', 'nope', dead.id, ...args], { UPSTREAM: UPSTREAM_TOKEN });
    assert.equal(refused.code, 1);
    assert.equal(refused.stderr, 'hooks-ingress outbox retry: not a dead or pending entry: nope\n');
    assert.equal((await outbox(args, '--state', 'dead')).length, 1, 'nothing was retried');
    // The server is gone after a kill -9 and its pid file names an unrelated live process: the
    // command finds no server on the channel, takes the directory and retries in the journal itself.
    server.child.kill('SIGKILL');
    await server.exited;
    const bystander = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    defer(t, () => void (bystander.exitCode === null && bystander.signalCode === null && bystander.kill('SIGKILL')));
    await writeFile(join(state, 'hooks-ingress.pid'), `${bystander.pid}\n`);
    fake.override = null;
    const retry = await runCli(['outbox', 'retry', dead.id, ...args], { UPSTREAM: UPSTREAM_TOKEN });
    // The pid file names a live process, so the directory reads as held: the command says so and signals nothing.
    assert.equal(retry.code, 1);
    assert.equal(
      retry.stderr,
      `hooks-ingress outbox retry: the server with pid ${bystander.pid} holds ${state} but does not answer on its control channel\n`,
    );
    // Had it been sent SIGUSR2 (signal 12), that would end it before the SIGTERM sent now (15).
    const exited = once(bystander, 'exit') as Promise<[number | null, string | null]>;
    process.kill(bystander.pid!, 'SIGTERM');
    assert.equal((await exited)[1], 'SIGTERM');
  },
);

test('check names the keys forward mode leaves unused', async (t) => {
  const dir = await tempDir(t, 'outbox-check-');
  const config = join(dir, 'config.json');
  await writeFile(
    config,
    JSON.stringify({
      hooks: { enabled: true, token: TOKEN, forward: { url: 'http://127.0.0.1:18789/hooks', token: 'x' } },
      agents: { defaults: { model: 'local/m' } },
      models: { providers: { local: { api: 'openai-completions', baseUrl: 'http://127.0.0.1:1/v1' } } },
    }),
  );
  const { code, stderr } = await runCli(['check', '--config', config]);
  assert.equal(code, 0, stderr);
  assert.match(stderr, /models\.providers\.local: is not used in forward mode/);
  assert.match(stderr, /agents\.defaults\.model: is not used in forward mode/);
});

test('formatEntry() shows control characters in the hook name, the upstream run id, its error text and the refused field as escapes, one line each', () => {
  const entry: OutboxEntry = {
    id: 'e1',
    target: 'agent',
    body: {},
    hook: 'gh\x1b]0;owned\x07\nfake line',
    state: 'dead',
    acceptedAt: '2026-01-01T00:00:00.000Z',
    attempts: 3,
    upstreamRunId: 'run\u202Eevil',
    lastError: 'HTTP 500: \x1b[2J\rcleared\u2028next',
    refusedField: 'to\x1b[2J\nforged',
    batch: 'e0',
    deadAt: '2026-01-01T01:00:00.000Z',
  };
  assert.equal(
    formatEntry(entry),
    '2026-01-01T00:00:00.000Z  dead  e1  /agent hook=gh\\x1b]0;owned\\x07\\nfake line attempts=3 upstreamRunId=run\\u202eevil batch=e0 at=2026-01-01T01:00:00.000Z\n' +
      '    last error: HTTP 500: \\x1b[2J\\rcleared\\u2028next\n' +
      '    refused field: to\\x1b[2J\\nforged (accepted here, refused upstream)\n',
  );
});

test('outbox retry with no server and no state directory says so and leaves nothing behind (a mistyped --state-dir is not created)', async (t) => {
  const dir = await tempDir(t, 'outbox-none-');
  const missing = join(dir, 'typo');
  for (const args of [['--dead'], ['some-entry-id']]) {
    const { io, out } = captureIo({});
    assert.equal(await main(['outbox', 'retry', ...args, '--state-dir', missing], io), 1, args.join(' '));
    assert.equal(out.stdout, '');
    assert.equal(
      out.stderr,
      `hooks-ingress outbox retry: state directory ${missing} does not exist (no server has used it)\n`,
    );
    await assert.rejects(stat(missing), { code: 'ENOENT' });
  }
});

test('outbox with no state directory says so, as events and runs do, instead of listing nothing', async (t) => {
  const dir = await tempDir(t, 'outbox-none-');
  const missing = join(dir, 'typo');
  const { io, out } = captureIo({});
  assert.equal(await main(['outbox', '--state-dir', missing], io), 1);
  assert.deepEqual(out, {
    stdout: '',
    stderr: `hooks-ingress outbox: state directory ${missing} does not exist (no server has used it)\n`,
  });
});
