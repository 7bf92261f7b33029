// Lanes per hook on a real server with a fake model: a hook with `concurrency: 1` and a slow model
// holds only its own runs, `maxQueued` refuses only its own hook's requests, and with no lane set
// the runs share the global slots as before.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test, type TestContext } from 'node:test';
import type { RunRecord } from '../../lib/model/records.ts';
import { configFile, runCli, serveState } from '../_cli.ts';
import { fake } from '../_fake-server.ts';
import { post, send } from '../_http.ts';
import { parseExposition, valueOf } from '../_exposition.ts';
import { until } from '../_until.ts';

const TOKEN = 'lanes-hook-token-0123456789abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const GATEWAY_TOKEN = 'lanes-gateway-token-fedcba9876543210';

interface Model {
  url: string;
  /** The prompts asked, in order. */
  asked: string[];
  /** The most calls of a SLOW prompt in flight at once. */
  maxSlow: number;
  /** Answers the SLOW calls held, and every later one at once. */
  release(): void;
}

// An OpenAI-compatible model that answers at once, except prompts with SLOW in them: those wait for release().
async function slowModel(t: TestContext): Promise<Model> {
  const held: ServerResponse[] = [];
  let released = false;
  let slowNow = 0;
  const model: Model = {
    url: '',
    asked: [],
    maxSlow: 0,
    release() {
      released = true;
      for (const res of held.splice(0)) _complete(res);
    },
  };
  const server = await fake(t, (req, res) => {
    const prompt = (JSON.parse(req.body) as { messages: { content: string }[] }).messages.at(-1)?.content ?? '';
    model.asked.push(prompt);
    if (!prompt.includes('SLOW') || released) return _complete(res);
    model.maxSlow = Math.max(model.maxSlow, ++slowNow);
    res.on('close', () => slowNow--);
    held.push(res);
  });
  model.url = `${server.url}/v1`;
  return model;
}

function _complete(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({
    id: 'chatcmpl-lanes',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'done', refusal: null }, finish_reason: 'stop' }],
  }));
}

function config(model: Model, lanes: { slow?: Record<string, number>; agent?: Record<string, number> }) {
  return {
    hooks: {
      enabled: true,
      token: TOKEN,
      ...(lanes.agent === undefined ? {} : { agent: lanes.agent }),
      mappings: [
        { id: 'slow', match: { path: 'slow' }, messageTemplate: 'SLOW {{n}}', deliver: false, ...lanes.slow },
        { id: 'fast', match: { path: 'fast' }, messageTemplate: 'FAST {{n}}', deliver: false },
      ],
    },
    gateway: { auth: { token: GATEWAY_TOKEN } },
    agents: { defaults: { model: 'fake/m', maxConcurrent: 2, timeoutSeconds: 120 } },
    models: { providers: { fake: { api: 'openai-completions', baseUrl: model.url } } },
  };
}

async function runs(state: string): Promise<RunRecord[]> {
  const { code, stdout, stderr } = await runCli(['runs', '--json', '--state-dir', state]);
  assert.equal(code, 0, stderr);
  return stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as RunRecord);
}

const asked = (model: Model, word: string) => model.asked.filter((p) => p.includes(word)).length;

test(
  'a hook with concurrency 1 and a slow model does not delay another hook, and its maxQueued answers 503 for it alone',
  { timeout: 120_000 },
  async (t) => {
    const model = await slowModel(t);
    const files = await configFile(t, config(model, { slow: { concurrency: 1, maxQueued: 3 } }), 'lanes-');
    const server = await serveState(t, files);
    for (let n = 1; n <= 3; n++) {
      const accepted = await post(server.url, '/hooks/slow', { headers: AUTH, body: { n } });
      assert.equal(accepted.status, 202, accepted.text);
    }
    await until('the first slow run at the model', () => asked(model, 'SLOW') === 1);
    // Its lane holds 1 running and 2 waiting: the fourth is refused, for this hook only.
    const refused = await post(server.url, '/hooks/slow', { headers: AUTH, body: { n: 4 } });
    assert.equal(refused.status, 503, refused.text);
    assert.equal(refused.body['code'], 'ERR_HOOK_BACKLOG');
    assert.equal(refused.headers['retry-after'], '30');
    // status and /metrics show the lane: one running, two waiting.
    const status = await runCli(['status', '--json', '--state-dir', files.state]);
    const hooks = (JSON.parse(status.stdout) as { hooks: { hook: string }[] }).hooks;
    assert.deepEqual(hooks.find((h) => h.hook === 'slow'), {
      hook: 'slow',
      running: 1,
      queued: 2,
      concurrency: 1,
      maxQueued: 3,
      coalescing: 0,
      coalesce: null,
    });
    assert.match(
      (await runCli(['status', '--state-dir', files.state])).stdout,
      /\nhooks: {7}slow: 1 running, 2 queued \(concurrency 1, maxQueued 3\)\n {13}3 other hooks idle, no control set\n$/,
    );
    const metrics = parseExposition(
      (await send(server.url, '/metrics', { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } })).text,
    );
    assert.equal(valueOf(metrics, 'hooks_hook_runs_running', { hook: 'slow' }), 1);
    assert.equal(valueOf(metrics, 'hooks_hook_runs_queued', { hook: 'slow' }), 2);
    // The fast hook's runs, queued behind the waiting slow ones, all run while the slow lane is held.
    for (let n = 1; n <= 4; n++) {
      const accepted = await post(server.url, '/hooks/fast', { headers: AUTH, body: { n } });
      assert.equal(accepted.status, 202, accepted.text);
    }
    await until(
      'the fast runs to finish',
      async () => (await runs(files.state)).filter((r) => r.mapping === 'fast' && r.status === 'ok').length === 4,
    );
    assert.equal(asked(model, 'SLOW'), 1, 'the slow lane still runs one run');
    const agent = await post(server.url, '/hooks/agent', { headers: AUTH, body: { message: 'AGENT', deliver: false } });
    assert.equal(agent.status, 202, agent.text);
    await until('the /agent run to be asked', () => asked(model, 'AGENT') === 1);
    model.release();
    await until('every run to finish', async () => (await runs(files.state)).every((r) => r.status === 'ok'));
    const all = await runs(files.state);
    assert.equal(all.length, 8);
    assert.deepEqual(all.filter((r) => r.mapping === 'slow').length, 3);
    assert.equal(all.find((r) => r.hook === 'agent')?.mapping, undefined, '/agent runs carry no mapping');
    assert.equal(model.maxSlow, 1, 'never two slow runs at once');
  },
);

test(
  'with no lane set, a slow hook takes the global slots as before and the other hook waits',
  { timeout: 120_000 },
  async (t) => {
    const model = await slowModel(t);
    const files = await configFile(t, config(model, {}), 'lanes-');
    const server = await serveState(t, files);
    for (let n = 1; n <= 3; n++) {
      assert.equal((await post(server.url, '/hooks/slow', { headers: AUTH, body: { n } })).status, 202);
    }
    await until('two slow runs at the model (agents.defaults.maxConcurrent)', () => asked(model, 'SLOW') === 2);
    assert.equal((await post(server.url, '/hooks/fast', { headers: AUTH, body: { n: 1 } })).status, 202);
    assert.equal((await post(server.url, '/hooks/slow', { headers: AUTH, body: { n: 9 } })).status, 202);
    // Nothing frees a slot while the model holds the slow runs: the fast run waits its turn.
    await until('the fast run queued', async () => (await runs(files.state)).some((r) => r.mapping === 'fast'));
    assert.equal(asked(model, 'FAST'), 0);
    model.release();
    await until('every run to finish', async () => (await runs(files.state)).every((r) => r.status === 'ok'));
    assert.equal(asked(model, 'FAST'), 1);
  },
);
