// Rate limits per hook end to end: a real server process, a local OpenAI-compatible model, and
// the CLI's listings of what the server recorded (its runs, its ledger).
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test, type TestContext } from 'node:test';
import type { RunRecord } from '../../lib/model/records.ts';
import type { LedgerEntry } from '../../lib/model/ledger-entry.ts';
import { type ConfigFile, configFile, runCli, serveState, spawnServer, stopAfter } from '../_cli.ts';
import { defer } from '../_cleanup.ts';
import { fake } from '../_fake-server.ts';
import { post, send } from '../_http.ts';
import { parseExposition, valueOf } from '../_exposition.ts';
import { openAiCompletion } from '../_turn.ts';
import { until } from '../_until.ts';

const TOKEN = 'limits-e2e-token-0123456789abcdef';
const GATEWAY = 'limits-e2e-gateway-0123456789abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** A model that answers every call at once; `calls` counts them. */
async function model(t: TestContext): Promise<{ url: string; calls: () => number }> {
  let calls = 0;
  const server = await fake(t, (_req, res: ServerResponse) => {
    calls++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(openAiCompletion('done')));
  });
  return { url: `${server.url}/v1`, calls: () => calls };
}

async function setup(t: TestContext, hooks: Record<string, unknown>, modelUrl: string): Promise<ConfigFile> {
  return configFile(t, {
    hooks: { enabled: true, token: TOKEN, ...hooks },
    agents: { defaults: { model: 'fake/m', timeoutSeconds: 60 } },
    models: { providers: { fake: { api: 'openai-completions', baseUrl: modelUrl } } },
    gateway: { auth: { token: GATEWAY } },
  }, 'limits-e2e-');
}

async function listed<T>(command: string[], state: string): Promise<T[]> {
  const { code, stdout, stderr } = await runCli([...command, '--json', '--state-dir', state]);
  assert.equal(code, 0, stderr);
  return stdout.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as T);
}

async function metric(url: string, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const page = await send(url, '/metrics', { headers: { authorization: `Bearer ${GATEWAY}` } });
  return valueOf(parseExposition(page.text), name, labels);
}

const agent = (url: string, message: string) =>
  post(url, '/hooks/agent', { headers: AUTH, body: { message, deliver: false, wakeMode: 'next-heartbeat' } });

test('rateLimit reject: past max in the window, 429 ERR_RATE_LIMITED with Retry-After, never counted as an auth failure; other hooks unaffected', async (t) => {
  const m = await model(t);
  // One auth failure would lock a client out: the limited requests must not count as one.
  const s = await setup(t, {
    agent: { rateLimit: { max: 2, windowSeconds: 3600, over: 'reject' } },
    authRateLimit: { maxFailures: 1, windowSeconds: 60, lockoutSeconds: 60 },
  }, m.url);
  const server = await serveState(t, s);
  const answers = [];
  for (const n of [1, 2, 3, 4]) answers.push(await agent(server.url, `run ${n}`));
  assert.deepEqual(answers.map((a) => a.status), [202, 202, 429, 429]);
  for (const refused of answers.slice(2)) {
    assert.equal(refused.body['code'], 'ERR_RATE_LIMITED', refused.text);
    const retry = Number(refused.headers['retry-after']);
    assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 3600, String(refused.headers['retry-after']));
  }
  // A wake is another hook: it still gets through, and the client was never locked out.
  const wake = await post(server.url, '/hooks/wake', {
    headers: AUTH,
    body: { text: 'still here', mode: 'next-heartbeat' },
  });
  assert.equal(wake.status, 200, wake.text);
  assert.equal(await metric(server.url, 'hooks_auth_lockouts', {}), 0);
  assert.equal(await metric(server.url, 'hooks_rate_limited_total', { hook: 'agent', over: 'reject' }), 2);
  await until('both runs to finish', async () => {
    const runs = await listed<RunRecord>(['runs'], s.state);
    return runs.length === 2 && runs.every((r) => r.status === 'ok') ? runs : undefined;
  });
  assert.equal(m.calls(), 2, 'the refused requests made no model call');
  const entries = await listed<LedgerEntry>(['requests'], s.state);
  assert.deepEqual(entries.filter((e) => e.hook === 'agent').map((e) => [e.status, e.code ?? null]), [
    [202, null],
    [202, null],
    [429, 'ERR_RATE_LIMITED'],
    [429, 'ERR_RATE_LIMITED'],
  ]);
});

test('rateLimit ignore: past max, 200 with limited (not ignored), nothing done, and the ledger says limited', async (t) => {
  const m = await model(t);
  const s = await setup(t, {
    mappings: [{
      id: 'noisy',
      match: { path: 'noisy' },
      action: 'wake',
      wakeMode: 'next-heartbeat',
      textTemplate: 'noise {{n}}',
      rateLimit: { max: 1, windowSeconds: 3600, over: 'ignore' },
    }],
  }, m.url);
  const server = await serveState(t, s);
  const first = await post(server.url, '/hooks/noisy', { headers: AUTH, body: { n: 1 } });
  const second = await post(server.url, '/hooks/noisy', { headers: AUTH, body: { n: 2 } });
  assert.equal(first.status, 200, first.text);
  assert.deepEqual([second.status, second.body], [200, { ok: true, limited: true }]);
  const events = await listed<{ seq: number; text: string }>(['events'], s.state);
  const noise = events.filter((e) => e.text.includes('noise '));
  assert.equal(noise.length, 1, 'one event');
  assert.match(noise[0]!.text, /noise 1/);
  const entries = (await listed<LedgerEntry>(['requests'], s.state)).filter((e) => e.hook === 'noisy');
  assert.deepEqual(entries.map((e) => [e.status, e.became]), [
    [200, { events: [noise[0]!.seq] }],
    [200, { limited: true }],
  ]);
  assert.equal(await metric(server.url, 'hooks_rate_limited_total', { hook: 'noisy', over: 'ignore' }), 1);
});

test('rateLimit queue: runs past the window are acknowledged and held, start when it allows, and keep their time across kill -9', async (t) => {
  const m = await model(t);
  const s = await setup(t, { agent: { rateLimit: { max: 1, windowSeconds: 4, over: 'queue' } } }, m.url);
  const args = ['--config', s.config, '--port', '0', '--state-dir', s.state];
  const first = await spawnServer(args);
  defer(t, async () => {
    if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
    await first.exited;
  });
  const answers = [await agent(first.url, 'one'), await agent(first.url, 'two'), await agent(first.url, 'three')];
  assert.deepEqual(answers.map((a) => a.status), [202, 202, 202]);
  assert.equal(answers[0]!.body['heldUntil'], undefined, 'the first has room at once');
  const held = answers.slice(1).map((a) => Date.parse(a.body['heldUntil'] as string));
  assert.ok(held[1]! - held[0]! >= 4_000, 'each held run a window after the one before it');
  // The ledger (written beside the answers) says which were held, and until when.
  const entries = await until('the ledger to hold the three requests', async () => {
    const all = (await listed<LedgerEntry>(['requests'], s.state)).filter((e) => e.hook === 'agent');
    return all.length === 3 ? all : undefined;
  });
  assert.deepEqual(entries.map((e) => e.became?.heldUntil ?? null), [
    null,
    ...answers.slice(1).map((a) => a.body['heldUntil']),
  ]);
  // Killed before the held runs may start: they are in the journal with their time.
  first.child.kill('SIGKILL');
  await first.exited;
  const second = await spawnServer(args);
  stopAfter(t, second);
  const runs = await until('all three runs to finish after the restart', async () => {
    const all = await listed<RunRecord>(['runs'], s.state);
    return all.length === 3 && all.every((r) => r.status === 'ok') ? all : undefined;
  });
  const byId = new Map(runs.map((r) => [r.runId, r]));
  answers.slice(1).forEach((answer, i) => {
    const run = byId.get(answer.body['runId'] as string)!;
    assert.equal(run.notBefore, answer.body['heldUntil']);
    assert.ok(
      Date.parse(run.startedAt!) >= held[i]!,
      `run ${i + 2} started at ${run.startedAt}, held until ${run.notBefore}`,
    );
  });
  assert.equal(m.calls(), 3, 'each held run ran once');
});
