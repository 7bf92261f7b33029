// `runs retry` and `runs redeliver` against a real server (spawned) with a fake model and a fake
// Telegram: each failed run is retried once (the model sees one call each, a second bulk retry runs
// nothing), two retries of one run at once make one run, a retry and a forced replay of the same
// request make one run, and a redelivery sends the stored reply with no model call.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test, type TestContext } from 'node:test';
import type { RunRecord } from '../../lib/model/records.ts';
import { readLedger } from '../../lib/store/ledger/read.ts';
import { configFile, runCli, serveState, type Spawned } from '../_cli.ts';
import { fake, json } from '../_fake-server.ts';
import { post } from '../_http.ts';
import { until } from '../_until.ts';

const TOKEN = 'runs-retry-spec-token-0123456789ab';
const BOT_TOKEN = '616161:AARetry-bot_token0123456789abcdefgh';
const OWNER = '777001';

/** A model that answers 400 until `fix()` (after `release()` when it holds), then each call with a reply. */
async function flakyModel(t: TestContext) {
  let fixed = false;
  let held: (() => void)[] | null = null;
  const prompts: string[] = [];
  const server = await fake(t, async (req, res) => {
    const body = JSON.parse(req.body) as { messages: { role: string; content: string }[] };
    prompts.push(body.messages.at(-1)?.content ?? '');
    if (held !== null) await new Promise<void>((resolve) => held!.push(resolve));
    if (!fixed) return json(res, 400, { error: { message: 'model is down', type: 'invalid_request_error' } });
    json(res, 200, {
      id: 'c',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'the answer' }, finish_reason: 'stop' }],
    });
  });
  /** The calls whose prompt carries `text` (a run's message; a heartbeat's prompt carries none). */
  const asked = (text: string) => prompts.filter((p) => p.includes(`\n${text}\n`)).length;
  const hold = () => void (held = []);
  const release = () => {
    const waiting = held ?? [];
    held = null;
    waiting.forEach((go) => go());
  };
  return { url: `${server.url}/v1`, prompts, asked, hold, release, fix: () => void (fixed = true) };
}

async function telegramFake(t: TestContext) {
  const sent: { chat_id: unknown; text: string }[] = [];
  const server = await fake(t, (req, res) => {
    if (req.url !== `/bot${BOT_TOKEN}/sendMessage`) return json(res, 404, { ok: false, error_code: 404 });
    const body = JSON.parse(req.body) as { chat_id: unknown; text: string };
    sent.push(body);
    json(res, 200, {
      ok: true,
      result: { message_id: 500 + sent.length, date: 1_790_000_000, chat: { id: body.chat_id }, text: body.text },
    });
  });
  return { url: server.url, sent };
}

async function setUp(t: TestContext, prefix: string) {
  const model = await flakyModel(t);
  const telegram = await telegramFake(t);
  const s = await configFile(t, {
    hooks: {
      enabled: true,
      token: TOKEN,
      mappings: [
        {
          id: 'ci',
          match: { path: 'ci' },
          action: 'agent',
          messageTemplate: 'ci {{n}}',
          wakeMode: 'next-heartbeat',
          deliver: false,
        },
        {
          id: 'wait',
          match: { path: 'wait' },
          action: 'agent',
          messageTemplate: 'wait {{n}}',
          wakeMode: 'next-heartbeat',
          deliver: false,
          waitForCompletion: true,
        },
        {
          id: 'chat',
          match: { path: 'chat' },
          action: 'agent',
          messageTemplate: 'chat {{n}}',
          wakeMode: 'next-heartbeat',
          channel: 'telegram',
          to: OWNER,
        },
      ],
    },
    agents: { defaults: { model: 'fake/m', timeoutSeconds: 60 } },
    models: { providers: { fake: { api: 'openai-completions', baseUrl: model.url } } },
    channels: { telegram: { botToken: BOT_TOKEN, apiBase: telegram.url } },
  }, prefix);
  const server = await serveState(t, s);
  return { s, server, model, telegram };
}

async function send(server: Spawned, path: string, n: number): Promise<string> {
  const answer = await post(server.url, `/hooks/${path}`, {
    headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': `${path}-${n}` },
    body: { n },
  });
  assert.equal(answer.status, 202, answer.text);
  return answer.body['runId'] as string;
}

async function runsOf(state: string): Promise<RunRecord[]> {
  const { code, stdout, stderr } = await runCli(['runs', '--json', '--state-dir', state]);
  assert.equal(code, 0, stderr);
  return stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as RunRecord);
}

async function ended(state: string, ids: readonly string[]): Promise<RunRecord[]> {
  return until(`runs ${ids.join(', ')} to end`, async () => {
    const runs = (await runsOf(state)).filter((r) => ids.includes(r.runId));
    return runs.length === ids.length && runs.every((r) => r.status !== 'pending' && r.status !== 'running')
      ? runs
      : undefined;
  });
}

function retry(state: string, ...args: string[]) {
  return runCli(['runs', 'retry', ...args, '--state-dir', state]);
}

test('runs retry --failed plans, then with --yes re-runs each failed run once; a second pass runs nothing', {
  timeout: 180_000,
}, async (t) => {
  const { s, server, model } = await setUp(t, 'cli-runs-retry-bulk-');
  const failed = [await send(server, 'ci', 1), await send(server, 'ci', 2), await send(server, 'ci', 3)];
  assert.deepEqual((await ended(s.state, failed)).map((r) => r.status), ['error', 'error', 'error']);
  const callsBefore = model.prompts.length;
  model.fix();

  const plan = await retry(s.state, '--failed');
  assert.equal(plan.code, 0, plan.stderr);
  assert.match(plan.stdout, /^3 failed runs not yet retried match; will retry 3:\n/);
  assert.match(plan.stderr, /nothing retried; add --yes to retry these/);
  assert.equal(model.prompts.length, callsBefore, 'a plan runs nothing');

  const done = await retry(s.state, '--failed', '--yes');
  assert.equal(done.code, 0, done.stdout + done.stderr);
  const retried = [...done.stdout.matchAll(/^retried (\S+) as (\S+) \(hook=ci\)$/gm)];
  assert.deepEqual(retried.map((m) => m[1]).sort(), [...failed].sort());
  const fresh = retried.map((m) => m[2]!);
  const runs = await ended(s.state, fresh);
  assert.deepEqual(runs.map((r) => [r.status, r.retryOf !== undefined]), [
    [
      'ok',
      true,
    ],
    ['ok', true],
    ['ok', true],
  ]);
  assert.equal(model.prompts.length - callsBefore, 3, 'one model call per failed run');
  assert.deepEqual([model.asked('ci 1'), model.asked('ci 2'), model.asked('ci 3')], [2, 2, 2]);
  assert.deepEqual(model.prompts.slice(callsBefore).sort(), model.prompts.slice(0, 3).sort(), 'the same messages');

  const again = await retry(s.state, '--failed', '--yes');
  assert.equal(again.code, 0, again.stderr);
  assert.match(
    again.stdout,
    /^0 failed runs not yet retried match\n$/,
    'the retried runs are no longer failures to retry',
  );
  const named = await retry(s.state, failed[0]!, '--yes');
  assert.equal(named.code, 1);
  assert.match(named.stdout, new RegExp(`skipped ${failed[0]}: retried already, as ${fresh[0] ?? ''}`));
  assert.equal(model.prompts.length - callsBefore, 3, 'nothing more ran');

  // The request's ledger entry says its run was retried.
  const { stdout } = await runCli(['requests', '--state-dir', s.state]);
  assert.match(stdout, /resolved by retry: run \S+ retried as \S+/);
  const shown = await runCli(['requests', 'show', 'ci-1', '--state-dir', s.state]);
  assert.match(shown.stdout, /\nretried +run \S+ as \S+ at /);
  const failures = await runCli(['requests', '--failed', '--all', '--state-dir', s.state]);
  assert.equal(failures.stdout, '', 'the requests were accepted: not failures');
});

test('two retries of one run at once make one run', { timeout: 180_000 }, async (t) => {
  const { s, server, model } = await setUp(t, 'cli-runs-retry-race-');
  const [id] = [await send(server, 'ci', 7)];
  await ended(s.state, [id!]);
  model.fix();
  const both = await Promise.all([retry(s.state, id!, '--yes'), retry(s.state, id!, '--yes')]);
  const made = both.flatMap((r) => [...r.stdout.matchAll(/^retried \S+ as (\S+)/gm)].map((m) => m[1]!));
  assert.equal(made.length, 1, both.map((r) => r.stdout + r.stderr).join('\n---\n'));
  assert.deepEqual(both.map((r) => r.code).sort(), [0, 1]);
  await ended(s.state, made);
  assert.equal(
    model.asked('ci 7'),
    2,
    `the failed call and one retry; the model saw:\n${model.prompts.join('\n---\n')}`,
  );
  assert.equal((await runsOf(s.state)).filter((r) => r.retryOf === id).length, 1);
});

test('a retry and a requests replay --force of the same request make one run, in either order', {
  timeout: 180_000,
}, async (t) => {
  const { s, server, model } = await setUp(t, 'cli-runs-retry-replay-');
  const first = await send(server, 'ci', 1);
  const second = await send(server, 'ci', 2);
  await ended(s.state, [first, second]);
  model.fix();
  const entry = async (n: number) => (await readLedger(s.state)).find((e) => e.requestId === `ci-${n}`)!.id;

  // Retry first: the replay is refused, --force or not.
  const retried = await retry(s.state, first, '--yes');
  assert.equal(retried.code, 0, retried.stdout + retried.stderr);
  const replay = await runCli(['requests', 'replay', await entry(1), '--force', '--state-dir', s.state]);
  assert.equal(replay.code, 1, replay.stdout);
  assert.match(replay.stdout, /not replayed \S+: a run of entry \S+ was retried \(run \S+ as \S+\)/);

  // Replay first: the retry of the run it replaced is refused.
  const replayed = await runCli(['requests', 'replay', await entry(2), '--force', '--state-dir', s.state]);
  assert.equal(replayed.code, 0, replayed.stdout + replayed.stderr);
  const late = await retry(s.state, second, '--yes');
  assert.equal(late.code, 1, late.stdout);
  assert.match(
    late.stdout,
    new RegExp(`skipped ${second}: the request of run ${second} \\(entry \\S+\\) was replayed since`),
  );
  await until('the two runs to end', async () => {
    const runs = (await runsOf(s.state)).filter((r) => r.status === 'ok');
    return runs.length === 2 ? runs : undefined;
  });
  assert.deepEqual([model.asked('ci 1'), model.asked('ci 2')], [2, 2]);
});

test('runs redeliver sends the stored reply to Telegram again with no model call, and refuses a run with no reply', {
  timeout: 180_000,
}, async (t) => {
  const { s, server, model, telegram } = await setUp(t, 'cli-runs-redeliver-');
  model.fix();
  const id = await send(server, 'chat', 1);
  await until('the reply delivered', () => (telegram.sent.length === 1 ? true : undefined));
  const calls = model.prompts.length;

  const again = await runCli(['runs', 'redeliver', id, '--state-dir', s.state]);
  assert.equal(again.code, 0, again.stdout + again.stderr);
  assert.match(again.stdout, new RegExp(`^redelivered ${id} to telegram ${OWNER} \\(502\\)\\n$`));
  assert.deepEqual(telegram.sent.map((m) => m.text), ['the answer', 'the answer']);
  assert.equal(model.prompts.length, calls, 'no model call');
  const [run] = (await runsOf(s.state)).filter((r) => r.runId === id);
  assert.equal(run?.redeliveries?.length, 1);
  assert.equal(run?.delivery?.status, 'delivered');

  const quiet = await send(server, 'ci', 9);
  await ended(s.state, [quiet]);
  const refused = await runCli(['runs', 'redeliver', quiet, '--state-dir', s.state]);
  assert.equal(refused.code, 1);
  assert.match(refused.stdout, new RegExp(`^not redelivered ${quiet}: run ${quiet} has no channel`));
  assert.equal(telegram.sent.length, 2);
});

test('requests --failed stops listing a failure whose run a retry ran again', { timeout: 180_000 }, async (t) => {
  const { s, server, model } = await setUp(t, 'cli-runs-retry-failed-');
  // A request that waits for its run, whose client goes away first: the ledger keeps it as a failure (499) with its run.
  model.hold();
  const gone = request(`${server.url}/hooks/wait`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'x-request-id': 'wait-1' },
  });
  gone.on('error', () => {});
  gone.end(JSON.stringify({ n: 1 }));
  await until('the run at the model', () => (model.asked('wait 1') === 1 ? true : undefined), {
    detail: () => `${model.prompts.join('\n---\n')}\n${server.stderr()}`,
  });
  gone.destroy();
  const entry = await until(
    'the failure in the ledger',
    async () => (await readLedger(s.state)).find((e) => e.requestId === 'wait-1'),
  );
  assert.equal(entry.status, 499);
  model.release();
  const runId = entry.became!.runs![0]!;
  await ended(s.state, [runId]);
  const before = await runCli(['requests', '--failed', '--state-dir', s.state]);
  assert.match(before.stdout, new RegExp(entry.id), 'listed while its run is not retried');

  model.fix();
  const done = await retry(s.state, '--failed', '--hook', 'wait', '--yes');
  assert.equal(done.code, 0, done.stdout + done.stderr);
  assert.match(done.stdout, new RegExp(`^retried ${runId} as \\S+ \\(hook=wait\\)$`, 'm'));
  const after = await runCli(['requests', '--failed', '--state-dir', s.state]);
  assert.equal(after.stdout, '', 'resolved by the retry');
  const all = await runCli(['requests', '--failed', '--all', '--state-dir', s.state]);
  assert.match(all.stdout, /resolved by retry: run \S+ retried as \S+/);
});

test('in forward mode runs retry and runs redeliver say that the upstream gateway runs the runs', {
  timeout: 120_000,
}, async (t) => {
  const s = await configFile(t, {
    hooks: { enabled: true, token: TOKEN, forward: { url: 'http://127.0.0.1:9/hooks', token: 'upstream-token-x' } },
  }, 'cli-runs-retry-forward-');
  await serveState(t, s);
  for (const args of [['retry', '--failed'], ['retry', 'some-run', '--yes'], ['redeliver', 'some-run']]) {
    const out = await runCli(['runs', ...args, '--state-dir', s.state]);
    assert.equal(out.code, 1, args.join(' '));
    assert.match(
      out.stderr,
      /runs (retry|redeliver) needs local runs, and in forward mode \(hooks\.forward\) the upstream gateway runs them\n$/,
    );
  }
});
