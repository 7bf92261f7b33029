import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { buildConfig } from '../lib/config/load.ts';
import { Forwarder } from '../lib/delivery/forward.ts';
import { createApp, listen } from '../lib/edge/server.ts';
import { createTelemetry } from '../lib/edge/telemetry.ts';
import { createLogger } from '../lib/log.ts';
import { Store } from '../lib/store/store.ts';
import { defer } from './_cleanup.ts';
import { freePort, startFakeGateway, type FakeGateway } from './_fake-openclaw.ts';
import { post } from './_http.ts';

// Forward mode in one process: real sockets, a real journal, a fake OpenClaw gateway (issue #14, part 3).

const TOKEN = 'forward-spec-hook-token-0123456789';
const UPSTREAM_TOKEN = 'upstream-openclaw-token-abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };

interface Harness {
  url: string;
  store: Store;
  forwarder: Forwarder;
  lines: Record<string, unknown>[];
}

async function start(t: TestContext, port: number, extra: { now?: () => number; hooks?: Record<string, unknown> } = {}): Promise<Harness> {
  const dir = await mkdtemp(join(tmpdir(), 'forward-spec-'));
  defer(t, () => rm(dir, { recursive: true, force: true }));
  const raw = { hooks: { enabled: true, token: TOKEN, forward: { url: `http://127.0.0.1:${port}/hooks/`, token: UPSTREAM_TOKEN }, ...extra.hooks } };
  const built = await buildConfig(raw, { file: null, env: {}, dir });
  if (!built.ok) throw new Error(built.problems.join('; '));
  const { store } = await Store.open(join(dir, 'state'), { idempotencyTtlMs: 60_000 });
  defer(t, () => store.close());
  const lines: Record<string, unknown>[] = [];
  const log = createLogger((line) => void lines.push(JSON.parse(line) as Record<string, unknown>));
  const forwarder = new Forwarder({ store, target: built.config.hooks.forward!, log, baseDelayMs: 20, maxDelayMs: 200, random: () => 1, ...(extra.now === undefined ? {} : { now: extra.now }) });
  defer(t, () => forwarder.stop());
  const app = createApp({ config: built.config, store, heartbeat: { request: () => assert.fail('forward mode asks for no local heartbeat') }, log, forwarded: () => forwarder.kick() });
  const running = await listen(app, { host: '127.0.0.1', port: 0 });
  defer(t, () => running.close(200));
  return { url: running.url, store, forwarder, lines };
}

async function until(what: string, probe: () => boolean): Promise<void> {
  const giveUp = Date.now() + 30_000;
  while (!probe()) {
    if (Date.now() > giveUp) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function gateway(t: TestContext, port = 0): Promise<FakeGateway> {
  const fake = await startFakeGateway(UPSTREAM_TOKEN, port);
  defer(t, () => fake.close());
  return fake;
}

test('forward mode: actions accepted while the upstream is down are each delivered once when it comes up; the callers\' answers are unchanged', async (t) => {
  const port = await freePort();
  const h = await start(t, port);
  const wake = await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'Deploy done', mode: 'next-heartbeat' } });
  assert.equal(wake.status, 200, wake.text);
  assert.deepEqual(wake.body, { ok: true, mode: 'next-heartbeat' });
  const agent = await post(h.url, '/hooks/agent', { headers: { ...AUTH, 'idempotency-key': 'k1' }, body: { message: 'Summarise', channel: 'teams', to: 'conv-1' } });
  assert.equal(agent.status, 202, agent.text);
  const retried = await post(h.url, '/hooks/agent', { headers: { ...AUTH, 'idempotency-key': 'k1' }, body: { message: 'Summarise', channel: 'teams', to: 'conv-1' } });
  assert.deepEqual(retried.body, agent.body);
  assert.equal(h.store.events().length, 0, 'nothing is queued locally');
  assert.equal(h.store.runs().length, 0, 'nothing runs locally');

  await until('a failed attempt at each entry', () => h.store.outbox().length === 2 && h.store.outbox().every((e) => e.attempts >= 2));
  for (const entry of h.store.outbox()) {
    assert.equal(entry.state, 'pending');
    assert.match(entry.lastError ?? '', /^no answer: /);
  }
  const fake = await gateway(t, port);
  h.forwarder.kick();
  await until('every entry sent', () => h.store.outbox().every((e) => e.state === 'sent'));
  const [wakeEntry, agentEntry] = h.store.outbox();
  // Each entry goes when it is due, so the two may arrive in either order.
  const byPath = (path: string) => fake.accepted.filter((a) => a.path === path);
  assert.deepEqual(byPath('wake').map((a) => a.key), [wakeEntry!.id]);
  assert.deepEqual(byPath('agent').map((a) => a.key), [agentEntry!.id]);
  assert.equal(fake.accepted.length, 2);
  assert.deepEqual(byPath('wake')[0]!.body, { text: 'Deploy done', mode: 'next-heartbeat' });
  const sent = byPath('agent')[0]!.body;
  assert.deepEqual(Object.keys(sent).sort(), ['channel', 'deliver', 'message', 'name', 'to', 'wakeMode']);
  assert.equal(sent['channel'], 'msteams');
  assert.match(String(sent['message']), /EXTERNAL_UNTRUSTED_CONTENT[\s\S]*Summarise/);
  assert.equal(agentEntry!.runId, agent.body['runId'], 'the caller got our runId');
  assert.equal(agentEntry!.upstreamRunId, byPath('agent')[0]!.runId, 'the upstream\'s runId is on the entry');
  assert.ok(h.lines.every((l) => !JSON.stringify(l).includes(UPSTREAM_TOKEN)), 'the upstream token is never logged');
});

test('forward mode: a 400 from the upstream makes the entry dead at once, with its message, counted in /metrics', async (t) => {
  const fake = await gateway(t);
  const h = await start(t, fake.port);
  fake.override = () => ({ status: 400, body: { ok: false, error: 'channel must be last|telegram' } });
  assert.equal((await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'x' } })).status, 202);
  await until('the entry to die', () => h.store.outbox()[0]?.state === 'dead');
  const [entry] = h.store.outbox();
  assert.equal(entry!.attempts, 1);
  assert.equal(entry!.lastError, 'upstream answered 400: channel must be last|telegram');
  assert.deepEqual(h.store.outboxCounts(), { pending: 0, sent: 0, dead: 1 });
  const page = createTelemetry({ store: h.store, limiter: () => ({ keys: 0, locked: 0, lockouts: 0 }), queueDepth: () => 0 }).render();
  assert.match(page, /^hooks_outbox_entries\{state="dead"\} 1$/m);
});

test('forward mode: a wrong upstream token (401) is dead at once; 429 waits the upstream\'s Retry-After, then goes', async (t) => {
  const fake = await gateway(t);
  const h = await start(t, fake.port);
  let answers = [{ status: 429, body: { ok: false, error: 'slow down' }, headers: { 'retry-after': '1' } }];
  fake.override = () => answers.shift() ?? null;
  const asked = Date.now();
  assert.equal((await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'hello' } })).status, 200);
  await until('the entry to be sent', () => h.store.outbox()[0]?.state === 'sent');
  assert.ok(Date.now() - asked >= 1000, 'the second attempt waited for Retry-After');
  assert.equal(h.store.outbox()[0]!.attempts, 2);

  const wrong = await start(t, fake.port, { hooks: { forward: { url: fake.url, token: 'not-the-token' } } });
  answers = [];
  assert.equal((await post(wrong.url, '/hooks/wake', { headers: AUTH, body: { text: 'hello' } })).status, 200);
  await until('the entry to die', () => wrong.store.outbox()[0]?.state === 'dead');
  assert.equal(wrong.store.outbox()[0]!.lastError, 'upstream answered 401: Unauthorized');
});

test('forward mode: an entry the upstream has not taken within forward.maxAgeSeconds is dead', async (t) => {
  const port = await freePort();
  let skew = 0;
  const h = await start(t, port, { now: () => Date.now() + skew, hooks: { forward: { url: `http://127.0.0.1:${port}/hooks`, token: UPSTREAM_TOKEN, maxAgeSeconds: 60 } } });
  assert.equal((await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'late' } })).status, 200);
  await until('a failed attempt', () => (h.store.outbox()[0]?.attempts ?? 0) >= 1);
  skew = 61_000;
  h.forwarder.kick();
  await until('the entry to die', () => h.store.outbox()[0]?.state === 'dead');
  assert.match(h.store.outbox()[0]!.lastError ?? '', /^not accepted upstream within 60 s \(last: no answer: /);
});
