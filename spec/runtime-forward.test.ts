import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { retryOutbox } from '../lib/store/outbox-retry.ts';
import { Forwarder } from '../lib/runtime/forward.ts';
import { createTelemetry } from '../lib/edge/telemetry.ts';
import { Store } from '../lib/store/store.ts';
import { defer } from './_cleanup.ts';
import { freePort, startFakeGateway, type FakeGateway } from './_fake-openclaw.ts';
import { post } from './_http.ts';
import { until } from './_until.ts';
import { startApp } from './_app.ts';

// Forward mode in one process: real sockets, a real journal, a fake OpenClaw gateway (issue #14, part 3).

const TOKEN = 'forward-spec-hook-token-0123456789';
const UPSTREAM_TOKEN = 'upstream-openclaw-token-abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };

interface Harness {
  url: string;
  store: Store;
  forwarder: Forwarder;
  lines: Record<string, unknown>[];
  dir: string;
}

async function start(t: TestContext, port: number, extra: { now?: () => number; hooks?: Record<string, unknown> } = {}): Promise<Harness> {
  let forwarder: Forwarder | undefined;
  const h = await startApp(t, {
    raw: { hooks: { forward: { url: `http://127.0.0.1:${port}/hooks/`, token: UPSTREAM_TOKEN }, ...extra.hooks } },
    token: TOKEN,
    idempotencyTtlMs: 60_000,
    ...(extra.now === undefined ? {} : { now: extra.now }),
    with: ({ config, store, log }) => {
      const started = new Forwarder({ store, target: config.hooks.forward!, log, baseDelayMs: 20, maxDelayMs: 200, random: () => 1, ...(extra.now === undefined ? {} : { now: extra.now }) });
      defer(t, () => started.stop());
      forwarder = started;
      return { heartbeat: { request: () => assert.fail('forward mode asks for no local heartbeat') }, forwarded: () => started.kick() };
    },
  });
  return { url: h.url, store: h.store, forwarder: forwarder!, lines: h.lines, dir: h.state };
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

  await until('failed attempts at the first entry', () => h.store.outbox().length === 2 && h.store.outbox()[0]!.attempts >= 2);
  const [failing, behind] = h.store.outbox();
  assert.equal(failing!.state, 'pending');
  assert.match(failing!.lastError ?? '', /^no answer: /);
  assert.equal(behind!.attempts, 0, 'the entry behind waits for the one ahead');
  const fake = await gateway(t, port);
  h.forwarder.kick();
  await until('every entry sent', () => h.store.outbox().every((e) => e.state === 'sent'));
  const [wakeEntry, agentEntry] = h.store.outbox();
  assert.deepEqual(fake.accepted.map((a) => a.key), [wakeEntry!.id, agentEntry!.id], 'in the order they were accepted');
  assert.equal(wakeEntry!.lastError, undefined, 'a sent entry shows no last error of the attempts before');
  assert.equal(wakeEntry!.nextAttemptAt, undefined);
  const byPath = (path: string) => fake.accepted.filter((a) => a.path === path);
  assert.deepEqual(byPath('wake')[0]!.body, { text: 'Deploy done', mode: 'next-heartbeat' });
  const sent = byPath('agent')[0]!.body;
  assert.deepEqual(Object.keys(sent).sort(), ['channel', 'deliver', 'message', 'name', 'to', 'wakeMode']);
  assert.equal(sent['channel'], 'msteams');
  assert.match(String(sent['message']), /EXTERNAL_UNTRUSTED_CONTENT[\s\S]*Summarise/);
  assert.equal(agentEntry!.runId, agent.body['runId'], 'the caller got our runId');
  assert.equal(agentEntry!.upstreamRunId, byPath('agent')[0]!.runId, 'the upstream\'s runId is on the entry');
  assert.ok(h.lines.every((l) => !JSON.stringify(l).includes(UPSTREAM_TOKEN)), 'the upstream token is never logged');
});

test('forward mode: an /agent run\'s sessionMode and accountId are forwarded as sent', async (t) => {
  const fake = await gateway(t);
  const h = await start(t, fake.port, { hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:'] } });
  const body = { message: 'x', sessionKey: 'hook:inbox', sessionMode: 'persistent', channel: 'telegram', to: '42', accountId: 'work' };
  assert.equal((await post(h.url, '/hooks/agent', { headers: AUTH, body })).status, 202);
  await until('the run forwarded', () => fake.accepted.length === 1);
  const sent = fake.accepted[0]!.body;
  assert.deepEqual([sent['sessionKey'], sent['sessionMode'], sent['channel'], sent['to'], sent['accountId']], ['hook:inbox', 'persistent', 'telegram', '42', 'work']);
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

test('forward mode: eight actions queued during an outage, /wake and /agent mixed, reach the upstream in acceptance order', async (t) => {
  const port = await freePort();
  const h = await start(t, port);
  const texts: string[] = [];
  for (let n = 1; n <= 8; n++) {
    const text = `event ${n}`;
    texts.push(text);
    const answer = n % 2 === 0
      ? await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: text } })
      : await post(h.url, '/hooks/wake', { headers: AUTH, body: { text, mode: 'next-heartbeat' } });
    assert.ok(answer.status === 200 || answer.status === 202, answer.text);
    // Accepted at different moments of the outage, so each would have its own backoff if it had one.
    await until(`a failed attempt after entry ${n}`, () => (h.store.outbox()[0]?.attempts ?? 0) >= n);
  }
  assert.deepEqual(h.store.outbox().map((e) => e.attempts).slice(1), [0, 0, 0, 0, 0, 0, 0], 'only the oldest entry is tried');
  const fake = await gateway(t, port);
  h.forwarder.kick();
  await until('every entry sent', () => h.store.outbox().every((e) => e.state === 'sent'));
  assert.deepEqual(fake.accepted.map((a) => String(a.body['text'] ?? a.body['message']).match(/event \d/)?.[0]), texts);
  assert.deepEqual(fake.accepted.map((a) => a.key), h.store.outbox().map((e) => e.id));
});

test('forward mode: an entry that keeps failing holds the ones behind it until it is dead (forward.maxAgeSeconds), then they go', async (t) => {
  const fake = await gateway(t);
  let skew = 0;
  const h = await start(t, fake.port, { now: () => Date.now() + skew, hooks: { forward: { url: fake.url, token: UPSTREAM_TOKEN, maxAgeSeconds: 60 } } });
  fake.override = (_path, body) => (body['text'] === 'stuck' ? { status: 503, body: { ok: false, error: 'busy' } } : null);
  assert.equal((await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'stuck' } })).status, 200);
  await until('a failed attempt', () => (h.store.outbox()[0]?.attempts ?? 0) >= 1);
  skew = 30_000;
  assert.equal((await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'behind' } })).status, 200);
  const attempts = h.store.outbox()[0]!.attempts;
  await until('more failed attempts', () => h.store.outbox()[0]!.attempts >= attempts + 2);
  assert.deepEqual(fake.received.map((r) => r.body['text']).filter((text) => text !== 'stuck'), [], 'the one behind has not gone');
  skew = 61_000;
  h.forwarder.kick();
  await until('the second entry to be sent', () => h.store.outbox()[1]?.state === 'sent');
  const [stuck] = h.store.outbox();
  assert.equal(stuck!.state, 'dead');
  assert.match(stuck!.lastError ?? '', /^not accepted upstream within 60 s \(last: upstream answered 503: busy\)$/);
  assert.deepEqual(fake.accepted.map((a) => a.body['text']), ['behind']);
});

test('forward mode: outbox retry of a pending entry sends it now, with the pending ones ahead of it, in order', async (t) => {
  const fake = await gateway(t);
  const h = await start(t, fake.port);
  // The upstream asks for an hour's wait: the queue would sleep that long.
  let busy = true;
  fake.override = () => (busy ? { status: 503, body: { ok: false, error: 'later' }, headers: { 'retry-after': '3600' } } : null);
  assert.equal((await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'first' } })).status, 200);
  assert.equal((await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'second' } })).status, 200);
  await until('the first attempt', () => h.store.outbox()[0]?.attempts === 1);
  assert.ok(Date.parse(h.store.outbox()[0]!.nextAttemptAt!) > Date.now() + 3_000_000);
  busy = false;
  const second = h.store.outbox()[1]!;
  // The one asked for is counted; the pending one ahead of it is made due with it.
  assert.deepEqual(await retryOutbox(h.store, { ids: [second.id] }), { retried: [second.id], notRetryable: [] });
  h.forwarder.kick();
  await until('both sent', () => h.store.outbox().every((e) => e.state === 'sent'));
  assert.deepEqual(fake.accepted.map((a) => a.body['text']), ['first', 'second']);
  assert.equal(h.store.outbox()[0]!.lastError, undefined, 'no stale last error once sent');
});

test('forward mode: a redirect from the upstream is not followed — the entry is dead, saying where it pointed, and the other address gets nothing', async (t) => {
  const elsewhere = await gateway(t);
  const fake = await gateway(t);
  const h = await start(t, fake.port);
  // 307 keeps the method and body: a client that follows it sends the message, and the token, there.
  fake.override = (path) => ({ status: 307, body: { moved: true }, headers: { location: `http://u:p@127.0.0.1:${elsewhere.port}/hooks/${path}?token=t` } });
  assert.equal((await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'private' } })).status, 200);
  await until('the entry to die', () => h.store.outbox()[0]?.state === 'dead');
  const [entry] = h.store.outbox();
  assert.equal(entry!.attempts, 1);
  assert.equal(entry!.lastError, `upstream answered 307, a redirect to http://127.0.0.1:${elsewhere.port}/hooks/wake, which is not followed: set hooks.forward.url to the address that answers`);
  assert.deepEqual(elsewhere.received, [], 'nothing reached the address the redirect named');
  assert.equal(fake.received.length, 1);
});
