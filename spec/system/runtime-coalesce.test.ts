// A mapping's `coalesce` on a real server and a local OpenAI-compatible model: requests with one
// key within the window become one run, held in the journal across kill -9.
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import type { RunRecord, SessionEvent } from '../../lib/model/records.ts';
import type { LedgerEntry } from '../../lib/model/ledger-entry.ts';
import { configFile, runCli, type Spawned, spawnServer, stopAfter } from '../_cli.ts';
import { json, listenJson } from '../_fake-server.ts';
import { post, type Reply } from '../_http.ts';
import { until } from '../_until.ts';
import { defer } from '../_cleanup.ts';

const TOKEN = 'coalesce-hook-token-0123456789abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** A model that answers every call at once, keeping each call's prompt. */
async function model(t: TestContext): Promise<{ url: string; prompts: string[] }> {
  const prompts: string[] = [];
  const server = await listenJson<{ messages: { content: string }[] }>((seen, res) => {
    prompts.push(seen.body.messages.at(-1)?.content ?? '');
    json(res, 200, {
      id: 'c',
      object: 'chat.completion',
      created: 1,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Noted the pushes.' }, finish_reason: 'stop' }],
    });
  });
  defer(t, () => server.close());
  return { url: `${server.url}/v1`, prompts };
}

interface Setup {
  args: string[];
  state: string;
  prompts: string[];
  start(): Promise<Spawned>;
}

async function setup(
  t: TestContext,
  coalesce: Record<string, unknown>,
  mapping: Record<string, unknown> = {},
): Promise<Setup> {
  const m = await model(t);
  const file = await configFile(t, {
    hooks: {
      enabled: true,
      token: TOKEN,
      mappings: [{
        id: 'pushes',
        match: { path: 'github' },
        action: 'agent',
        name: 'Pushes',
        messageTemplate: 'Push {{n}} to {{repository.full_name}}',
        deliver: false,
        wakeMode: 'next-heartbeat',
        coalesce: { key: '{{repository.full_name}}', ...coalesce },
        ...mapping,
      }],
    },
    agents: { defaults: { model: 'fake/m', timeoutSeconds: 60 } },
    models: { providers: { fake: { api: 'openai-completions', baseUrl: m.url } } },
  }, 'coalesce-spec-');
  const args = ['--config', file.config, '--port', '0', '--state-dir', file.state];
  return {
    args,
    state: file.state,
    prompts: m.prompts,
    start: async () => {
      const server = await spawnServer(args);
      stopAfter(t, server, 'SIGKILL');
      return server;
    },
  };
}

function push(url: string, n: number, repo = 'acme/widgets', key?: string): Promise<Reply> {
  return post(url, '/hooks/github', {
    headers: { ...AUTH, ...(key === undefined ? {} : { 'idempotency-key': key }) },
    body: { n, repository: { full_name: repo } },
  });
}

async function listed<T>(command: string[], state: string): Promise<T[]> {
  const { code, stdout, stderr } = await runCli([...command, '--json', '--state-dir', state]);
  assert.equal(code, 0, stderr);
  return stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as T);
}

async function finished(state: string, count: number): Promise<RunRecord[]> {
  return await until(`${count} finished run(s)`, async () => {
    const runs = await listed<RunRecord>(['runs'], state);
    return runs.length === count && runs.every((r) => r.status === 'ok') ? runs : undefined;
  }, { timeoutMs: 180_000 });
}

// Each answer is 202 with the first one's run; all but the first say `coalesced: true`.
function assertJoined(answers: readonly Reply[]): string {
  const runId = answers[0]!.body['runId'] as string;
  answers.forEach((a, i) => {
    assert.equal(a.status, 202, a.text);
    assert.equal(a.body['runId'], runId, `answer ${i + 1}`);
    assert.equal(a.body['coalesced'], i === 0 ? undefined : true, `answer ${i + 1}`);
  });
  return runId;
}

describe('coalesce', () => {
  test('10 pushes with one key make one run whose message names 10; retries get their first answer', {
    timeout: 120_000,
  }, async (t) => {
    // The hook's own backlog bound counts runs: a request that joins adds none, so none is refused.
    const s = await setup(t, { windowSeconds: 3, maxWaitSeconds: 120 }, { maxQueued: 1 });
    const server = await s.start();
    const answers: Reply[] = [];
    for (let n = 1; n <= 10; n++) answers.push(await push(server.url, n, 'acme/widgets', `delivery-${n}`));
    const runId = assertJoined(answers);
    const retried = await push(server.url, 5, 'acme/widgets', 'delivery-5');
    assert.deepEqual([retried.status, retried.body], [answers[4]!.status, answers[4]!.body]);
    assert.equal(retried.headers['idempotent-replayed'], 'true');

    const [run] = await finished(s.state, 1);
    assert.equal(run!.runId, runId);
    assert.equal(run!.coalesce?.count, 10);
    assert.equal(s.prompts.length, 1, 'the model was called once');
    assert.match(s.prompts[0]!, /^This run stands for 10 requests/);
    assert.match(s.prompts[0]!, /Push 10 to acme\/widgets/);
    assert.doesNotMatch(s.prompts[0]!, /Push 9 /, 'messages: "latest" carries the latest message alone');
    const summaries = (await listed<SessionEvent>(['events'], s.state)).filter((e) => e.source === `run:${runId}`);
    assert.deepEqual(summaries.map((e) => e.text), ['Hook Pushes (10 requests): Noted the pushes.']);
    const entries = await listed<LedgerEntry>(['requests'], s.state);
    const joined = entries.filter((e) => e.became?.joined !== undefined);
    assert.equal(joined.length, 9);
    assert.ok(joined.every((e) => e.became!.joined![0] === runId && e.became!.runs === undefined));
  });

  test(
    'a kill -9 inside the window loses nothing: the run counts the requests before and after and runs once, when the stored window ends',
    {
      timeout: 300_000,
    },
    async (t) => {
      const s = await setup(t, { windowSeconds: 20, maxWaitSeconds: 600 });
      const first = await s.start();
      const answers: Reply[] = [];
      for (let n = 1; n <= 6; n++) answers.push(await push(first.url, n));
      first.child.kill('SIGKILL');
      await first.exited;
      const [held] = await listed<RunRecord>(['runs'], s.state);
      assert.deepEqual([held?.status, held?.coalesce?.count], ['pending', 6]);

      const second = await s.start();
      for (let n = 7; n <= 10; n++) answers.push(await push(second.url, n));
      const runId = assertJoined(answers);
      const [run] = await finished(s.state, 1);
      assert.equal(run!.runId, runId);
      assert.equal(run!.coalesce!.count, 10);
      assert.equal(run!.attempts, 1, 'it ran once');
      assert.ok(
        Date.parse(run!.startedAt!) >= Date.parse(run!.coalesce!.lastAt) + 20_000,
        'not before its window ended',
      );
      assert.equal(s.prompts.length, 1);
      assert.match(s.prompts[0]!, /^This run stands for 10 requests/);
      assert.match(s.prompts[0]!, /Push 10 to/);
    },
  );

  test('different keys make different runs', { timeout: 300_000 }, async (t) => {
    const s = await setup(t, { windowSeconds: 2 });
    const server = await s.start();
    const widgets = [await push(server.url, 1, 'acme/widgets'), await push(server.url, 2, 'acme/widgets')];
    const gadgets = [await push(server.url, 3, 'acme/gadgets'), await push(server.url, 4, 'acme/gadgets')];
    const ids = [assertJoined(widgets), assertJoined(gadgets)];
    assert.notEqual(ids[0], ids[1]);
    const runs = await finished(s.state, 2);
    assert.deepEqual(runs.map((r) => r.coalesce?.count), [2, 2]);
    assert.equal(s.prompts.length, 2);
  });

  test('maxWaitSeconds closes a window a steady stream keeps open; the stream goes on in a new window', {
    timeout: 120_000,
  }, async (t) => {
    const s = await setup(t, { windowSeconds: 30, maxWaitSeconds: 3 });
    const server = await s.start();
    const answers: Reply[] = [];
    // A request every 200 ms never leaves the window quiet for 30 s: only maxWaitSeconds closes it.
    for (let n = 1; s.prompts.length === 0; n++) {
      assert.ok(n < 2_000, 'the run never started');
      answers.push(await push(server.url, n));
      await new Promise((r) => setTimeout(r, 200));
    }
    const later = await push(server.url, 0);
    assert.equal(later.status, 202);
    assert.notEqual(later.body['runId'], answers[0]!.body['runId'], 'a request after the window closed is not in it');
    const runs = await listed<RunRecord>(['runs'], s.state);
    const first = runs.find((r) => r.runId === answers[0]!.body['runId'])!;
    const { firstAt, lastAt, count } = first.coalesce!;
    assert.ok(Date.parse(first.startedAt!) >= Date.parse(firstAt) + 3_000);
    assert.ok(Date.parse(lastAt) + 30_000 > Date.parse(firstAt) + 3_000, 'the window was never quiet');
    assert.equal(count, answers.filter((a) => a.body['runId'] === first.runId).length);
    assert.ok(count < answers.length + 1, 'the stream went on past the window');
  });

  test('messages "all" carries each message, each wrapped as untrusted content on its own', {
    timeout: 120_000,
  }, async (t) => {
    const s = await setup(t, { windowSeconds: 2, messages: 'all' });
    const server = await s.start();
    assertJoined([await push(server.url, 1), await push(server.url, 2), await push(server.url, 3)]);
    await finished(s.state, 1);
    const [prompt] = s.prompts;
    assert.match(prompt!, /^This run stands for 3 requests[^\n]*Their 3 messages follow, oldest first\./);
    const order = [1, 2, 3].map((n) => prompt!.indexOf(`Message ${n}:\n`));
    assert.ok(order.every((at, i) => at > 0 && (i === 0 || at > order[i - 1]!)), prompt);
    for (let n = 1; n <= 3; n++) assert.match(prompt!, new RegExp(`Push ${n} to acme/widgets`));
    assert.equal(prompt!.match(/<<<EXTERNAL_UNTRUSTED_CONTENT/g)?.length, 3, prompt);
  });
});
