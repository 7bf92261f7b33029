// Pause, resume and drop on a real server, with real kills, over the control channel.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { RunRecord, SessionEvent } from '../../lib/model/records.ts';
import { type ConfigFile, configFile, runCli, type Spawned, spawnServer, stopAfter } from '../_cli.ts';
import { fake } from '../_fake-server.ts';
import { post } from '../_http.ts';
import { until } from '../_until.ts';

const TOKEN = 'pause-hook-token-0123456789abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** An OpenAI-compatible model that answers every call at once, keeping each prompt in the order it came. */
async function model(t: TestContext): Promise<{ url: string; prompts: string[] }> {
  const prompts: string[] = [];
  const server = await fake(t, (req, res) => {
    const body = JSON.parse(req.body) as { messages: { content: string }[] };
    prompts.push(body.messages.at(-1)?.content ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      id: 'chatcmpl-pause',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'HEARTBEAT_OK' }, finish_reason: 'stop' }],
    }));
  });
  return { url: `${server.url}/v1`, prompts };
}

const agentMapping = (id: string) => ({
  id,
  match: { path: id },
  action: 'agent',
  messageTemplate: `${id} number {{n}}`,
  wakeMode: 'next-heartbeat',
  deliver: false,
});

async function setup(t: TestContext, modelUrl: string): Promise<ConfigFile> {
  return await configFile(t, {
    hooks: {
      enabled: true,
      token: TOKEN,
      mappings: [
        agentMapping('noisy'),
        agentMapping('quiet'),
        { id: 'alerts', match: { path: 'alerts' }, action: 'wake', wakeMode: 'now', textTemplate: 'alert {{n}}' },
      ],
    },
    // One run at a time: the order the runs start in is the order the model sees them.
    agents: { defaults: { model: 'fake/m', timeoutSeconds: 60, maxConcurrent: 1 } },
    models: { providers: { fake: { api: 'openai-completions', baseUrl: modelUrl } } },
  }, 'cli-pause-');
}

async function serve(t: TestContext, s: ConfigFile): Promise<Spawned> {
  const server = await spawnServer(['--config', s.config, '--port', '0', '--state-dir', s.state]);
  stopAfter(t, server, 'SIGKILL');
  return server;
}

async function kill(server: Spawned): Promise<void> {
  server.child.kill('SIGKILL');
  await server.exited;
}

function cli(s: ConfigFile, ...args: string[]) {
  return runCli([...args, '--state-dir', s.state]);
}

async function listed<T>(s: ConfigFile, command: 'runs' | 'events'): Promise<T[]> {
  const { code, stdout, stderr } = await cli(s, command, '--json');
  assert.equal(code, 0, stderr);
  return stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as T);
}

async function hit(server: Spawned, hook: string, n: number): Promise<Record<string, unknown>> {
  const reply = await post(server.url, `/hooks/${hook}`, { headers: AUTH, body: { n } });
  assert.ok(reply.status === 200 || reply.status === 202, `${hook} ${n}: ${reply.status} ${reply.text}`);
  return reply.body;
}

const messagesOf = (runs: RunRecord[], hook: string) =>
  runs.filter((r) => r.mapping === hook).map((r) => r.message.match(/number (\d+)/)?.[1]);

test(
  '20 requests to a paused hook are acknowledged, none runs while another hook runs, they survive kill -9 and run in order after resume',
  {
    timeout: 180_000,
  },
  async (t) => {
    const m = await model(t);
    const s = await setup(t, m.url);
    const first = await serve(t, s);
    const paused = await cli(s, 'pause', 'noisy');
    assert.equal(paused.code, 0, paused.stderr);
    assert.match(paused.stdout, /^paused noisy since \S+, until resumed\n$/);

    const ids: string[] = [];
    for (let n = 1; n <= 20; n++) ids.push((await hit(first, 'noisy', n))['runId'] as string);
    await hit(first, 'quiet', 1);
    await until('the other hook to run', async () => {
      const runs = await listed<RunRecord>(s, 'runs');
      return runs.some((r) => r.mapping === 'quiet' && r.status === 'ok') ? true : undefined;
    });
    const list = await cli(s, 'pause');
    assert.equal(list.code, 0, list.stderr);
    assert.match(
      list.stdout,
      /^noisy: paused since \S+; 20 runs, 0 wakes, 0 outbox entries waiting, oldest waiting \d/,
    );
    const status = await cli(s, 'status', '--json');
    type Hook = { hook: string; queued: number; paused?: { wakes: number; oldest?: string } };
    const hooks = (JSON.parse(status.stdout) as { hooks: Hook[] }).hooks.filter((h) => h.paused !== undefined);
    assert.deepEqual(hooks.map((h) => [h.hook, h.queued, h.paused?.wakes, typeof h.paused?.oldest]), [[
      'noisy',
      20,
      0,
      'string',
    ]]);
    assert.match((await cli(s, 'status')).stdout, /noisy: paused since \S+, 20 queued, oldest waiting \d/);

    await kill(first);
    const second = await serve(t, s);
    // The queue runs in order: a run of another hook accepted after the restart finishing while the 20
    // are still pending shows that they wait, not that they were slow to start.
    await hit(second, 'quiet', 2);
    await until('the other hook to run after the restart', async () => {
      const runs = await listed<RunRecord>(s, 'runs');
      return runs.filter((r) => r.mapping === 'quiet' && r.status === 'ok').length === 2 ? true : undefined;
    });
    let runs = await listed<RunRecord>(s, 'runs');
    assert.deepEqual(runs.filter((r) => r.mapping === 'noisy').map((r) => r.status), Array(20).fill('pending'));
    assert.equal(m.prompts.filter((p) => p.includes('noisy number')).length, 0, 'no noisy run reached the model');

    const resumed = await cli(s, 'resume', 'noisy');
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(resumed.stdout, 'resumed noisy: 20 runs, 0 wakes, 0 outbox entries let go\n');
    runs = await until('the 20 runs to finish', async () => {
      const all = await listed<RunRecord>(s, 'runs');
      return all.filter((r) => r.mapping === 'noisy' && r.status === 'ok').length === 20 ? all : undefined;
    });
    const order = Array.from({ length: 20 }, (_, i) => String(i + 1));
    assert.deepEqual(messagesOf(runs, 'noisy'), order);
    const seen = m.prompts.flatMap((p) => p.match(/noisy number (\d+)/)?.[1] ?? []);
    assert.deepEqual(seen, order, 'the model saw them once each, in the order they were acknowledged');
    assert.deepEqual(runs.filter((r) => r.mapping === 'noisy').map((r) => r.runId), ids);
    assert.equal((await cli(s, 'pause')).stdout, 'no hook is paused\n');
  },
);

test(
  "a paused hook's wakes stay out of the main session (and its heartbeat) until resume, across kill -9, then join in order",
  {
    timeout: 180_000,
  },
  async (t) => {
    const m = await model(t);
    const s = await setup(t, m.url);
    const first = await serve(t, s);
    assert.equal((await cli(s, 'pause', 'alerts')).code, 0);
    for (let n = 1; n <= 3; n++) assert.equal((await hit(first, 'alerts', n))['eventOutcome'], 'held');
    // A wake of another hook asks for a heartbeat now: its turn reads the session, without the held ones.
    const other = await post(first.url, '/hooks/wake', { headers: AUTH, body: { text: 'unrelated', mode: 'now' } });
    assert.equal(other.body['eventOutcome'], 'queued');
    await until(
      'the heartbeat to read the other wake',
      () => m.prompts.some((p) => p.includes('unrelated')) || undefined,
    );
    assert.ok(
      !m.prompts.some((p) => p.includes('alert ')),
      'no turn read a held wake',
    );
    assert.ok(!(await listed<SessionEvent>(s, 'events')).some((e) => e.text.includes('alert ')));

    await kill(first);
    const second = await serve(t, s);
    assert.match(
      (await cli(s, 'pause')).stdout,
      /^alerts: paused since \S+; 0 runs, 3 wakes, 0 outbox entries waiting/,
    );
    assert.ok(!(await listed<SessionEvent>(s, 'events')).some((e) => e.text.includes('alert ')));

    const resumed = await cli(s, 'resume', '--all');
    assert.equal(resumed.stdout, 'resumed alerts: 0 runs, 3 wakes, 0 outbox entries let go\n', resumed.stderr);
    // A mapped wake's text is request text: it comes wrapped as untrusted content.
    const texts = (await listed<SessionEvent>(s, 'events')).flatMap((e) => e.text.match(/alert \d/g) ?? []);
    assert.deepEqual(texts, ['alert 1', 'alert 2', 'alert 3']);
    // They asked for a heartbeat now: the turn after the resume reads all three, oldest first.
    const prompt = await until(
      'a heartbeat to read the resumed wakes',
      () => m.prompts.find((p) => p.includes('alert 1')),
    );
    assert.ok(
      prompt.indexOf('alert 1') < prompt.indexOf('alert 2') && prompt.indexOf('alert 2') < prompt.indexOf('alert 3'),
    );
    assert.equal((await hit(second, 'alerts', 4))['eventOutcome'], 'queued', 'resumed: wakes go to the session again');
  },
);

test(
  'pause --for ends by itself, also when its end passes while the server is down',
  { timeout: 180_000 },
  async (t) => {
    const m = await model(t);
    const s = await setup(t, m.url);
    const first = await serve(t, s);
    const paused = await cli(s, 'pause', 'noisy', '--for', '2s');
    assert.match(paused.stdout, /^paused noisy since \S+, until \S+\n$/, paused.stderr);
    await hit(first, 'noisy', 1);
    await until('the pause to end and the run to finish', async () => {
      const runs = await listed<RunRecord>(s, 'runs');
      return runs.some((r) => r.mapping === 'noisy' && r.status === 'ok') ? true : undefined;
    });
    assert.equal((await cli(s, 'pause')).stdout, 'no hook is paused\n');

    assert.equal((await cli(s, 'pause', 'noisy', '--for', '1s')).code, 0);
    await hit(first, 'noisy', 2);
    await kill(first);
    await serve(t, s);
    await until('the stored end to resume the hook after the restart', async () => {
      const runs = await listed<RunRecord>(s, 'runs');
      return runs.filter((r) => r.mapping === 'noisy' && r.status === 'ok').length === 2 ? true : undefined;
    });
  },
);

test(
  'drop prints its plan, then with --yes discards what the paused hook holds, each request marked; refusals have codes',
  {
    timeout: 180_000,
  },
  async (t) => {
    const m = await model(t);
    const s = await setup(t, m.url);
    const server = await serve(t, s);
    const unknown = await cli(s, 'pause', 'nosuch');
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no hook named "nosuch".*\(ERR_UNKNOWN_HOOK\)/);
    const notPaused = await cli(s, 'drop', 'noisy', '--yes');
    assert.equal(notPaused.code, 1);
    assert.match(notPaused.stderr, /hook "noisy" is not paused \(ERR_NOT_PAUSED\)/);
    assert.match((await cli(s, 'resume', 'noisy')).stderr, /ERR_NOT_PAUSED/);

    assert.equal((await cli(s, 'pause', 'noisy')).code, 0);
    assert.equal((await cli(s, 'pause', 'alerts')).code, 0);
    for (let n = 1; n <= 3; n++) await hit(server, 'noisy', n);
    await hit(server, 'alerts', 1);
    const plan = await cli(s, 'drop', 'noisy');
    assert.equal(
      plan.stdout,
      'would drop from noisy: 3 runs, 0 held wakes, 0 outbox entries of 3 requests; run again with --yes to drop them\n',
    );
    assert.match((await cli(s, 'pause')).stdout, /noisy: .*3 runs/);

    const dropped = await cli(s, 'drop', 'noisy', '--yes');
    assert.equal(
      dropped.stdout,
      'dropped from noisy: 3 runs, 0 held wakes, 0 outbox entries of 3 requests (the hook stays paused)\n',
    );
    assert.equal((await cli(s, 'drop', 'alerts', '--yes')).code, 0);
    const runs = await listed<RunRecord>(s, 'runs');
    assert.deepEqual(runs.map((r) => r.status), ['dropped', 'dropped', 'dropped']);
    const listing = await cli(s, 'requests', '--json');
    const entries = listing.stdout.split('\n').filter((l) => l !== '').map((l) =>
      JSON.parse(l) as { mapping?: string; dropped?: { hook: string } }
    );
    assert.deepEqual(entries.map((e) => [e.mapping, e.dropped?.hook]), [
      ['noisy', 'noisy'],
      ['noisy', 'noisy'],
      ['noisy', 'noisy'],
      ['alerts', 'alerts'],
    ]);
    assert.match((await cli(s, 'requests')).stdout, /dropped \(noisy paused\)/);

    // Still paused, holding nothing; after a resume nothing dropped runs or joins.
    assert.match((await cli(s, 'pause')).stdout, /noisy: paused since \S+; 0 runs, 0 wakes/);
    assert.equal((await cli(s, 'resume', '--all')).code, 0);
    await hit(server, 'quiet', 1);
    await until('a later run to finish', async () => {
      const all = await listed<RunRecord>(s, 'runs');
      return all.some((r) => r.mapping === 'quiet' && r.status === 'ok') ? true : undefined;
    });
    assert.equal(m.prompts.filter((p) => p.includes('noisy number')).length, 0);
    assert.ok(!(await listed<SessionEvent>(s, 'events')).some((e) => e.text.includes('alert 1')));
  },
);
