import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import type { RunRecord, SessionEvent } from '../../lib/model/records.ts';
import { assertCleanStop, runCli, type Spawned, spawnServer } from '../_cli.ts';
import { fake } from '../_fake-server.ts';
import { post } from '../_http.ts';
import { until } from '../_until.ts';
import { fileDir } from '../_dir.ts';

const TOKEN = 'e2e-hook-token-0123456789abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };

const tmp = await fileDir('runtime-e2e-');

interface Call {
  prompt: string;
  res: ServerResponse;
}

/** An OpenAI-compatible server that holds every request until `answer` switches answering on; it closes when `t` ends. */
async function fakeOpenAi(t: TestContext): Promise<{ url: string; calls: Call[]; answer: (text: string) => void }> {
  const calls: Call[] = [];
  let reply: string | null = null;
  const server = await fake(t, (req, res) => {
    const body = JSON.parse(req.body) as { messages: { content: string }[] };
    calls.push({ prompt: body.messages.at(-1)?.content ?? '', res });
    if (reply !== null) _complete(res, reply);
  });
  return {
    url: `${server.url}/v1`,
    calls,
    answer: (text) => {
      reply = text;
    },
  };
}

function _complete(res: ServerResponse, content: string): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: 'chatcmpl-e2e',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'e2e-model',
      choices: [{
        index: 0,
        message: { role: 'assistant', content, refusal: null },
        finish_reason: 'stop',
        logprobs: null,
      }],
    }),
  );
}

async function listed<T>(command: 'runs' | 'events', state: string): Promise<T[]> {
  const { code, stdout, stderr } = await runCli([command, '--json', '--state-dir', state]);
  assert.equal(code, 0, stderr);
  return stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as T);
}

test(
  'a run accepted before kill -9 runs again after the restart, once, marked retry',
  { timeout: 120_000 },
  async (t) => {
    const model = await fakeOpenAi(t);
    const servers: Spawned[] = [];
    try {
      const config = join(tmp, 'crash.json');
      await writeFile(
        config,
        JSON.stringify({
          hooks: { enabled: true, token: TOKEN, maxQueuedRuns: 1 },
          agents: { defaults: { model: 'fake/e2e-model', timeoutSeconds: 60 } },
          models: { providers: { fake: { api: 'openai-completions', baseUrl: model.url } } },
        }),
      );
      const state = join(tmp, 'crash-state');
      const args = ['--config', config, '--port', '0', '--state-dir', state];
      const first = await spawnServer(args);
      servers.push(first);

      const accepted = await post(first.url, '/hooks/agent', {
        headers: AUTH,
        body: { message: 'Summarise the crash drill', name: 'Drill', wakeMode: 'next-heartbeat', deliver: false },
      });
      assert.equal(accepted.status, 202, accepted.text);
      const runId = accepted.body['runId'] as string;
      await until('the provider to get the call', () => (model.calls.length === 1 ? true : undefined));

      // The one queued run fills hooks.maxQueuedRuns: the next is refused rather than accepted and dropped.
      const refused = await post(first.url, '/hooks/agent', {
        headers: AUTH,
        body: { message: 'one too many', deliver: false },
      });
      assert.equal(refused.status, 503, refused.text);
      assert.equal(refused.headers['retry-after'], '30');

      first.child.kill('SIGKILL');
      await first.exited;
      const [interrupted] = await listed<RunRecord>('runs', state);
      assert.deepEqual([interrupted?.runId, interrupted?.status, interrupted?.attempts], [runId, 'running', 1]);

      model.answer('Drill done: all systems nominal.');
      const second = await spawnServer(args);
      servers.push(second);
      const done = await until('the run to finish after the restart', async () => {
        const run = (await listed<RunRecord>('runs', state)).find((r) => r.runId === runId);
        return run !== undefined && run.status !== 'running' && run.status !== 'pending' ? run : undefined;
      });
      assert.deepEqual([done.status, done.reply, done.retry, done.attempts, done.calls], [
        'ok',
        'Drill done: all systems nominal.',
        true,
        2,
        1,
      ]);
      second.child.kill('SIGTERM');
      await assertCleanStop(second);

      const runs = await listed<RunRecord>('runs', state);
      assert.deepEqual(runs.map((r) => r.runId), [runId], 'the refused run was never recorded');
      const summaries = (await listed<SessionEvent>('events', state)).filter((e) => e.source === `run:${runId}`);
      assert.deepEqual(summaries.map((e) => [e.kind, e.text, e.mode]), [[
        'system',
        'Hook Drill: Drill done: all systems nominal.',
        'next-heartbeat',
      ]]);
      // One call cut off by the kill, one after the restart: the run was never executed a third time.
      assert.equal(model.calls.length, 2);
      assert.equal(model.calls[0]!.prompt, model.calls[1]!.prompt);
      assert.match(model.calls[1]!.prompt, /Summarise the crash drill/);
    } finally {
      for (const server of servers) {
        if (server.child.exitCode === null && server.child.signalCode === null) {
          server.child.kill('SIGKILL');
        }
      }
      await Promise.all(servers.map((s) => s.exited));
    }
  },
);
