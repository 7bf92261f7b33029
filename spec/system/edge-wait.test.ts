import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { request, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { buildConfig } from '../../lib/config/load.ts';
import { CLIENT_GONE, type Completions, createWaiter, type Gone } from '../../lib/edge/wait.ts';
import { defer } from '../_cleanup.ts';
import { type Spawned, spawnServer } from '../_cli.ts';
import { json, listenJson } from '../_fake-server.ts';
import { post, send } from '../_http.ts';
import { until } from '../_until.ts';
import { tempDir } from '../_dir.ts';

// waitForCompletion end to end: a spawned server, a local OpenAI-compatible model that answers
// when the spec says so (issue #14, part 2).

const TOKEN = 'wait-hook-token-0123456789abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };

interface Model {
  url: string;
  calls: number;
  /** Answers every held call and all later ones with `text`. */
  answer(text: string): void;
}

async function model(t: TestContext): Promise<Model> {
  const held: ServerResponse[] = [];
  let reply: string | null = null;
  const send = (res: ServerResponse, text: string) =>
    json(res, 200, {
      id: 'c',
      object: 'chat.completion',
      created: 1,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    });
  const server = await listenJson((_seen, res) => {
    state.calls++;
    if (reply === null) held.push(res);
    else send(res, reply);
  });
  const state: Model = {
    url: `${server.url}/v1`,
    calls: 0,
    answer: (text) => {
      reply = text;
      for (const res of held.splice(0)) send(res, text);
    },
  };
  defer(t, () => server.close());
  return state;
}

async function serve(
  t: TestContext,
  hooks: Record<string, unknown>,
  m: Model,
  dir?: string,
  extra: Record<string, unknown> = {},
): Promise<{ server: Spawned; dir: string; args: string[] }> {
  const base = dir ?? (await tempDir(t, 'wait-spec-'));
  const config = join(base, 'config.json');
  await writeFile(
    config,
    JSON.stringify({
      hooks: { enabled: true, token: TOKEN, ...hooks },
      agents: { defaults: { model: 'fake/m', timeoutSeconds: 60 } },
      models: { providers: { fake: { api: 'openai-completions', baseUrl: m.url } } },
      ...extra,
    }),
  );
  const args = ['--config', config, '--port', '0', '--state-dir', join(base, 'state')];
  const server = await spawnServer(args);
  defer(t, async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await server.exited;
  });
  return { server, dir: base, args };
}

const COMPLETION_OK = { status: 'ok', replyDisposition: 'visible', delivered: false, deliveryAttempted: false };

test(
  '/agent with waitForCompletion holds the answer until the run finished and answers its completion, without the reply text',
  { timeout: 60_000 },
  async (t) => {
    const m = await model(t);
    const { server } = await serve(t, {}, m);
    let answered = false;
    const pending = post(server.url, '/hooks/agent', {
      headers: AUTH,
      body: { message: 'Summarise', deliver: false, waitForCompletion: true },
    }).finally(() => {
      answered = true;
    });
    await until('the model call', () => m.calls === 1);
    assert.equal(answered, false, 'answered before the run finished');
    m.answer('All quiet.');
    const reply = await pending;
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(Object.keys(reply.body).sort(), ['agentId', 'channel', 'completion', 'ok', 'runId', 'sessionKey']);
    assert.deepEqual(reply.body['completion'], COMPLETION_OK);
  },
);

test('hooks.allowCompletionReply adds the reply; an acknowledgment is silent', { timeout: 60_000 }, async (t) => {
  const m = await model(t);
  m.answer('HEARTBEAT_OK');
  const { server } = await serve(t, { allowCompletionReply: true }, m);
  const reply = await post(server.url, '/hooks/agent', {
    headers: AUTH,
    body: { message: 'x', deliver: false, waitForCompletion: true },
  });
  assert.equal(reply.status, 200, reply.text);
  assert.deepEqual(reply.body['completion'], { ...COMPLETION_OK, replyDisposition: 'silent', reply: 'HEARTBEAT_OK' });
});

test(
  'a retry while the run goes on waits for the same run; a client that left cancels nothing; after a restart the retry is answered at once',
  { timeout: 90_000 },
  async (t) => {
    const m = await model(t);
    const first = await serve(t, {}, m);
    const headers = { ...AUTH, 'idempotency-key': 'wait-1', 'content-type': 'application/json' };
    // next-heartbeat: the run's summary asks for no heartbeat, whose model call (250 ms after the run,
    // or at the restart as one owed) would race the counts of model calls below.
    const body = JSON.stringify({
      message: 'Long job',
      deliver: false,
      waitForCompletion: true,
      wakeMode: 'next-heartbeat',
    });
    // A client that sends, waits until the run is under way, and goes away before any answer.
    let responded = false;
    const leaving = request(new URL('/hooks/agent', first.server.url), { method: 'POST', headers, agent: false });
    leaving.on('error', () => undefined);
    leaving.on('response', () => {
      responded = true;
    });
    leaving.end(body);
    await until('the model call', () => m.calls === 1);
    assert.equal(responded, false, 'answered before the run finished');
    leaving.destroy();
    let answered = false;
    const retry = post(first.server.url, '/hooks/agent', { headers, body }).finally(() => {
      answered = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(answered, false, 'the retry did not wait for the run');
    m.answer('Done.');
    const waited = await retry;
    assert.equal(waited.status, 200, waited.text);
    assert.deepEqual(waited.body['completion'], COMPLETION_OK);
    assert.equal(m.calls, 1, 'one run only');

    first.server.child.kill('SIGTERM');
    await first.server.exited;
    const second = await serve(t, {}, m, first.dir);
    const again = await post(second.server.url, '/hooks/agent', { headers, body });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.body, waited.body);
    assert.equal(m.calls, 1, 'the retry after the restart ran nothing');
  },
);

test('a full run queue answers 503 before any waiting', { timeout: 60_000 }, async (t) => {
  const m = await model(t);
  const { server } = await serve(t, { maxQueuedRuns: 1 }, m);
  const holding = post(server.url, '/hooks/agent', {
    headers: AUTH,
    body: { message: 'a', deliver: false, waitForCompletion: true },
  });
  await until('the model call', () => m.calls === 1);
  const refused = await post(server.url, '/hooks/agent', {
    headers: AUTH,
    body: { message: 'b', deliver: false, waitForCompletion: true },
  });
  assert.equal(refused.status, 503, refused.text);
  assert.equal(refused.headers['retry-after'], '30');
  m.answer('ok');
  assert.equal((await holding).status, 200);
});

test(
  "a mapped forEach hook with waitForCompletion answers every run's completion in completions",
  { timeout: 60_000 },
  async (t) => {
    const m = await model(t);
    m.answer('Noted.');
    const mappings = [{
      match: { path: 'batch' },
      action: 'agent',
      messageTemplate: 'Item {{items[0].n}}',
      forEach: 'items',
      deliver: false,
      waitForCompletion: true,
    }];
    const { server } = await serve(t, { mappings }, m);
    const reply = await post(server.url, '/hooks/batch', { headers: AUTH, body: { items: [{ n: 1 }, { n: 2 }] } });
    assert.equal(reply.status, 200, reply.text);
    const runIds = reply.body['runIds'] as string[];
    assert.equal(runIds.length, 2);
    assert.deepEqual(reply.body['completions'], runIds.map((runId) => ({ runId, ...COMPLETION_OK })));
  },
);

test(
  'clients that hang up while they wait are let go at once (hooks_held_requests falls back, each counted in the log as 499); the runs go on',
  { timeout: 90_000 },
  async (t) => {
    const m = await model(t);
    const METRICS = 'wait-metrics-token-0123456789abcdef';
    const { server } = await serve(t, {}, m, undefined, { gateway: { auth: { token: METRICS } } });
    const held = async () => {
      const page = await send(server.url, '/metrics', { headers: { authorization: `Bearer ${METRICS}` } });
      return Number(/^hooks_held_requests (\d+)$/m.exec(page.text)?.[1] ?? Number.NaN);
    };
    const heldReaches = (what: string, n: number) => until(`${what} (${n} held)`, async () => (await held()) === n);
    const body = JSON.stringify({ message: 'Long job', deliver: false, waitForCompletion: true });
    const open = (key?: string) => {
      const headers = {
        ...AUTH,
        'content-type': 'application/json',
        ...(key === undefined ? {} : { 'idempotency-key': key }),
      };
      const req = request(new URL('/hooks/agent', server.url), { method: 'POST', headers, agent: false });
      req.on('error', () => undefined);
      req.end(body);
      return req;
    };
    // One client that stays: its key's later copies wait behind it; the others each wait for a run of their own.
    const staying = open('flood-1');
    const answered = new Promise<number>((resolve) =>
      staying.on('response', (res) => (res.resume(), resolve(res.statusCode ?? 0)))
    );
    await until('the model call', () => m.calls === 1);
    const leaving = [...Array.from({ length: 20 }, () => open('flood-1')), ...Array.from({ length: 20 }, () => open())];
    await heldReaches('every client is held while the runs go on', 41);
    for (const client of leaving) client.destroy();
    await heldReaches('nothing is held for a client that is gone', 1);
    // The log reaches this process through a pipe: its lines may come a moment after the gauge. The
    // 499s of one address are alike: a line, then their count at the end of the log's 10 s window.
    const left = () => {
      const records = server.stderr().split('\n').filter((line) => line.includes('"status":499')).map((line) =>
        JSON.parse(line) as Record<string, unknown>
      );
      return records.reduce(
        (sum, r) => sum + (r['msg'] === 'request' ? 1 : r['msg'] === 'refused alike' ? Number(r['count']) : 0),
        0,
      );
    };
    await until('each client that left logged with 499 (its line or a count)', () => left() === 40);
    m.answer('Done.');
    assert.equal(await answered, 200, 'the client that stayed is answered');
    await heldReaches('nothing held once the run settled', 0);
    // Every call after the first is a run whose client left: leaving cancelled none of them.
    await until('a run whose client left to reach the model', () => m.calls >= 2);
  },
);

test('createWaiter() answers 499 (never sent) when the client left, and the completion when the runs settled', async () => {
  const built = await buildConfig({ hooks: { enabled: true, token: TOKEN } }, { file: null, env: {}, dir: tmpdir() });
  assert.ok(built.ok);
  const asked: (Gone | undefined)[] = [];
  const completions: Completions = {
    // Settles when its client leaves, as the runtime's does; answers a timeout for the run then.
    wait: (_ids, _ms, _options, gone) =>
      new Promise((resolve) => {
        asked.push(gone);
        if (gone === undefined) resolve([{ status: 'ok' }]);
        else gone(() => resolve([{ status: 'timeout' }]));
      }),
    held: () => 0,
  };
  const waiter = createWaiter(built.config, { run: () => null }, completions);
  const reply = { status: 202, body: { ok: true, runId: 'r1' }, waitFor: ['r1'] };
  assert.deepEqual(await waiter(reply), { status: 200, body: { ok: true, runId: 'r1', completion: { status: 'ok' } } });
  let leave = () => {};
  const waiting = waiter(reply, (listener) => ((leave = listener), () => {}));
  leave();
  assert.deepEqual(await waiting, {
    status: CLIENT_GONE,
    body: { ok: false, error: 'the client went away before the runs settled' },
  });
  assert.equal(CLIENT_GONE, 499);
});
