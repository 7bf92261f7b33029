import assert from 'node:assert/strict';
import { test } from 'node:test';
import { retryOutbox } from '../lib/store/journal/outbox-retry.ts';
import { createTelemetry } from '../lib/edge/telemetry.ts';
import { freePort } from './_fake-openclaw.ts';
import { AUTH, gateway, start, UPSTREAM_TOKEN } from './_forwarder.ts';
import { post } from './_http.ts';
import { until } from './_until.ts';
import { Forwarder } from '../lib/runtime/forward.ts';
import type { OutboxEntry } from '../lib/store/journal/outbox.ts';

// Forward mode in one process: real sockets, a real journal, a fake OpenClaw gateway (issue #14, part 3).

test("forward mode: actions accepted while the upstream is down are each delivered once when it comes up; the callers' answers are unchanged", async (t) => {
  const port = await freePort();
  const h = await start(t, port);
  const wake = await post(h.url, '/hooks/wake', {
    headers: AUTH,
    body: { text: 'Deploy done', mode: 'next-heartbeat' },
  });
  assert.equal(wake.status, 200, wake.text);
  assert.deepEqual(wake.body, { ok: true, mode: 'next-heartbeat', eventOutcome: 'queued' });
  const agent = await post(h.url, '/hooks/agent', {
    headers: { ...AUTH, 'idempotency-key': 'k1' },
    body: { message: 'Summarise', channel: 'teams', to: 'conv-1' },
  });
  assert.equal(agent.status, 202, agent.text);
  const retried = await post(h.url, '/hooks/agent', {
    headers: { ...AUTH, 'idempotency-key': 'k1' },
    body: { message: 'Summarise', channel: 'teams', to: 'conv-1' },
  });
  assert.deepEqual(retried.body, agent.body);
  assert.equal(h.store.events().length, 0, 'nothing is queued locally');
  assert.equal(h.store.runs().length, 0, 'nothing runs locally');

  await until(
    'failed attempts at the first entry',
    () => h.store.outbox().length === 2 && h.store.outbox()[0]!.attempts >= 2,
  );
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
  assert.equal(agentEntry!.upstreamRunId, byPath('agent')[0]!.runId, "the upstream's runId is on the entry");
  assert.ok(h.lines.every((l) => !JSON.stringify(l).includes(UPSTREAM_TOKEN)), 'the upstream token is never logged');
});

test("forward mode: an /agent run's sessionMode and accountId are forwarded as sent", async (t) => {
  const fake = await gateway(t);
  const h = await start(t, fake.port, {
    hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:'] },
  });
  const body = {
    message: 'x',
    sessionKey: 'hook:inbox',
    sessionMode: 'persistent',
    channel: 'telegram',
    to: '42',
    accountId: 'work',
  };
  assert.equal((await post(h.url, '/hooks/agent', { headers: AUTH, body })).status, 202);
  await until('the run forwarded', () => fake.accepted.length === 1);
  const sent = fake.accepted[0]!.body;
  assert.deepEqual([sent['sessionKey'], sent['sessionMode'], sent['channel'], sent['to'], sent['accountId']], [
    'hook:inbox',
    'persistent',
    'telegram',
    '42',
    'work',
  ]);
});

test("forward mode: a wake's agentId and sessionKey are forwarded as sent", async (t) => {
  const fake = await gateway(t);
  const h = await start(t, fake.port, {
    hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:', 'agent:'] },
  });
  const wake = await post(h.url, '/hooks/wake', {
    headers: AUTH,
    body: { text: 'Deploy failed', agentId: 'main', sessionKey: 'agent:main:hook:ci' },
  });
  assert.deepEqual(wake.body, { ok: true, mode: 'now', eventOutcome: 'queued' });
  await until('the wake forwarded', () => fake.accepted.length === 1);
  assert.deepEqual(fake.accepted[0]!.body, {
    text: 'Deploy failed',
    mode: 'now',
    agentId: 'main',
    sessionKey: 'agent:main:hook:ci',
  });
  // Without hooks.forward.agents the upstream's agents are its own to judge: an agent unknown here is forwarded as sent.
  const other = await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'For ops', agentId: 'ops' } });
  assert.equal(other.status, 200, other.text);
  assert.equal(h.store.outbox().at(-1)!.body['agentId'], 'ops');
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
  assert.equal(entry!.refusedField, 'channel', 'the field the upstream refused');
  assert.deepEqual(h.store.outboxCounts(), { pending: 0, sent: 0, dead: 1, dropped: 0 });
  const page = createTelemetry({
    store: h.store,
    limiter: () => ({ keys: 0, locked: 0, lockouts: 0 }),
    queueDepth: () => 0,
  }).render();
  assert.match(page, /^hooks_outbox_entries\{state="dead"\} 1$/m);
});

test("forward mode: a wrong upstream token (401) is dead at once; 429 waits the upstream's Retry-After, then goes", async (t) => {
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
  const h = await start(t, port, {
    now: () => Date.now() + skew,
    hooks: { forward: { url: `http://127.0.0.1:${port}/hooks`, token: UPSTREAM_TOKEN, maxAgeSeconds: 60 } },
  });
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
  assert.deepEqual(
    h.store.outbox().map((e) => e.attempts).slice(1),
    [0, 0, 0, 0, 0, 0, 0],
    'only the oldest entry is tried',
  );
  const fake = await gateway(t, port);
  h.forwarder.kick();
  await until('every entry sent', () => h.store.outbox().every((e) => e.state === 'sent'));
  assert.deepEqual(fake.accepted.map((a) => String(a.body['text'] ?? a.body['message']).match(/event \d/)?.[0]), texts);
  assert.deepEqual(fake.accepted.map((a) => a.key), h.store.outbox().map((e) => e.id));
});

test('forward mode: an entry that keeps failing holds the ones behind it until it is dead (forward.maxAgeSeconds), then they go', async (t) => {
  const fake = await gateway(t);
  let skew = 0;
  const h = await start(t, fake.port, {
    now: () => Date.now() + skew,
    hooks: { forward: { url: fake.url, token: UPSTREAM_TOKEN, maxAgeSeconds: 60 } },
  });
  fake.override = (
    _path,
    body,
  ) => (body['text'] === 'stuck' ? { status: 503, body: { ok: false, error: 'busy' } } : null);
  assert.equal((await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'stuck' } })).status, 200);
  await until('a failed attempt', () => (h.store.outbox()[0]?.attempts ?? 0) >= 1);
  skew = 30_000;
  assert.equal((await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'behind' } })).status, 200);
  const attempts = h.store.outbox()[0]!.attempts;
  await until('more failed attempts', () => h.store.outbox()[0]!.attempts >= attempts + 2);
  assert.deepEqual(
    fake.received.map((r) => r.body['text']).filter((text) => text !== 'stuck'),
    [],
    'the one behind has not gone',
  );
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
  fake.override =
    () => (busy ? { status: 503, body: { ok: false, error: 'later' }, headers: { 'retry-after': '3600' } } : null);
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
  fake.override = (path) => ({
    status: 307,
    body: { moved: true },
    headers: { location: `http://u:p@127.0.0.1:${elsewhere.port}/hooks/${path}?token=t` },
  });
  assert.equal((await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'private' } })).status, 200);
  await until('the entry to die', () => h.store.outbox()[0]?.state === 'dead');
  const [entry] = h.store.outbox();
  assert.equal(entry!.attempts, 1);
  assert.equal(
    entry!.lastError,
    `upstream answered 307, a redirect to http://127.0.0.1:${elsewhere.port}/hooks/wake, which is not followed: set hooks.forward.url to the address that answers`,
  );
  assert.deepEqual(elsewhere.received, [], 'nothing reached the address the redirect named');
  assert.equal(fake.received.length, 1);
});

test("forward mode: a default /agent is sent with no destination (the upstream's default) and accepted; deliver false goes as deliver false", async (t) => {
  const fake = await gateway(t);
  const h = await start(t, fake.port);
  assert.equal((await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'Nightly report' } })).status, 202);
  assert.equal(
    (await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'Quiet', deliver: false, channel: 'slack' } }))
      .status,
    202,
  );
  assert.equal(
    (await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'Explicit last', channel: 'last' } })).status,
    202,
  );
  await until(
    'every entry sent',
    () => h.store.outbox().length === 3 && h.store.outbox().every((e) => e.state === 'sent'),
  );
  const [plain, quiet, last] = fake.accepted.map((a) => a.body);
  assert.deepEqual(Object.keys(plain!).sort(), ['message', 'name', 'wakeMode'], 'no deliver, channel or to');
  assert.deepEqual(Object.keys(quiet!).sort(), ['deliver', 'message', 'name', 'wakeMode']);
  assert.equal(quiet!['deliver'], false);
  assert.deepEqual(Object.keys(last!).sort(), ['message', 'name', 'wakeMode']);
});

test('forward mode: a destination the upstream cannot express (last with to, a channel without to) is refused here with 400 naming the rule', async (t) => {
  const fake = await gateway(t);
  const h = await start(t, fake.port, {
    hooks: {
      mappings: [{
        match: { path: 'ci' },
        action: 'agent',
        messageTemplate: 'CI: {{payload.status}}',
        channel: 'telegram',
      }],
    },
  });
  const cases: [string, Record<string, unknown>, RegExp][] = [
    [
      '/hooks/agent',
      { message: 'x', to: '42' },
      /^to: needs a concrete channel in forward mode: the upstream gateway delivers only to a channel and a recipient named together/,
    ],
    ['/hooks/agent', { message: 'x', channel: 'last', to: '42' }, /^to: needs a concrete channel in forward mode/],
    ['/hooks/agent', { message: 'x', channel: 'slack' }, /^to: is required with channel slack in forward mode/],
    ['/hooks/ci', { status: 'green' }, /^mapping [^:]+: to: is required with channel telegram in forward mode/],
  ];
  for (const [path, body, rule] of cases) {
    const answer = await post(h.url, path, { headers: AUTH, body });
    assert.equal(answer.status, 400, `${path} ${JSON.stringify(body)}: ${answer.text}`);
    assert.match(String(answer.body['error']), rule);
  }
  assert.deepEqual(h.store.outbox(), [], 'nothing acknowledged, nothing queued');
  assert.equal(
    (await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'x', channel: 'slack', to: 'C123' } })).status,
    202,
  );
  await until('the entry sent', () => h.store.outbox()[0]?.state === 'sent');
  assert.deepEqual(fake.accepted.map((a) => [a.body['deliver'], a.body['channel'], a.body['to']]), [[
    true,
    'slack',
    'C123',
  ]]);
});

test('forward mode without hooks.forward.agents: an explicit agentId is answered and forwarded as sent, and hooks.allowedAgentIds judges it as requested', async (t) => {
  const fake = await gateway(t, 0, { agents: ['main', 'ops'], defaultAgent: 'main' });
  const h = await start(t, fake.port, { hooks: { allowedAgentIds: ['ops'] } });
  const ops = await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'x', agentId: 'ops' } });
  assert.equal(ops.status, 202, ops.text);
  assert.equal(ops.body['agentId'], 'ops');
  const other = await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'x', agentId: 'research' } });
  assert.equal(other.status, 400);
  assert.equal(other.body['error'], 'agentId: agent "research" is not in hooks.allowedAgentIds');
  await until('the entry sent', () => h.store.outbox()[0]?.state === 'sent');
  assert.equal(fake.accepted[0]!.body['agentId'], 'ops');
});

test("forward mode with hooks.forward.agents: a request's unknown agentId is refused here; a mapping's goes to the upstream's default, sent without one", async (t) => {
  const fake = await gateway(t, 0, { agents: ['main', 'ops'], defaultAgent: 'main' });
  const h = await start(t, fake.port, {
    forward: { agents: ['main', 'ops'], agentId: 'main' },
    hooks: { mappings: [{ match: { path: 'ci' }, action: 'agent', messageTemplate: 'CI', agentId: 'builder' }] },
  });
  const unknown = await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'x', agentId: 'nobody' } });
  assert.equal(unknown.status, 400);
  assert.equal(
    unknown.body['error'],
    'agentId: unknown agent "nobody" (the upstream gateway\'s agents are listed in hooks.forward.agents)',
  );
  const known = await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'x', agentId: 'OPS' } });
  assert.equal(known.body['agentId'], 'ops', 'the listed spelling');
  const mapped = await post(h.url, '/hooks/ci', { headers: AUTH, body: {} });
  assert.equal(mapped.status, 202, mapped.text);
  assert.equal(mapped.body['agentId'], 'main');
  await until('both sent', () => h.store.outbox().length === 2 && h.store.outbox().every((e) => e.state === 'sent'));
  assert.deepEqual(fake.accepted.map((a) => a.body['agentId']), ['ops', undefined]);
});

test("forward mode with hooks.forward.agents: a /wake naming an unlisted agent is refused here; a mapped wake's unlisted agent goes without one", async (t) => {
  const fake = await gateway(t, 0, { agents: ['main', 'ops'], defaultAgent: 'main' });
  const h = await start(t, fake.port, {
    forward: { agents: ['main', 'ops'], agentId: 'ops' },
    hooks: { mappings: [{ match: { path: 'ci' }, action: 'wake', textTemplate: 'CI', agentId: 'builder' }] },
  });
  const unknown = await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'x', agentId: 'nobody' } });
  assert.deepEqual([unknown.status, unknown.body['error']], [400, 'agentId: unknown agent "nobody"']);
  assert.equal(
    (await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'for main', agentId: 'main' } })).status,
    200,
  );
  assert.equal((await post(h.url, '/hooks/ci', { headers: AUTH, body: {} })).status, 200);
  assert.deepEqual(
    h.store.outbox().map((e) => e.body['agentId']),
    ['main', 'ops'],
    'named as sent; fallen back: hooks.forward.agentId',
  );
});

test('forward mode: hooks.forward.agentId names the upstream agent wakes go to; without it a gateway with several agents refuses them', async (t) => {
  const fake = await gateway(t, 0, { agents: ['main', 'ops'] });
  const named = await start(t, fake.port, { forward: { agentId: 'ops' } });
  assert.equal((await post(named.url, '/hooks/wake', { headers: AUTH, body: { text: 'Deploy done' } })).status, 200);
  await until('the wake sent', () => named.store.outbox()[0]?.state === 'sent');
  assert.equal(fake.accepted[0]!.body['agentId'], 'ops');

  const unnamed = await start(t, fake.port);
  assert.equal((await post(unnamed.url, '/hooks/wake', { headers: AUTH, body: { text: 'Deploy done' } })).status, 200);
  await until('the wake to die', () => unnamed.store.outbox()[0]?.state === 'dead');
  const [dead] = unnamed.store.outbox();
  assert.equal(dead!.lastError, 'upstream answered 400: agentId is required when multiple agents are configured');
  assert.equal(dead!.refusedField, 'agentId', 'the entry names the field the upstream refused');
});

test('forward mode: an attempt whose outcome the journal cannot take holds the queue, never sends the entry again in a loop', async () => {
  // The upstream takes the wake; writing that down fails (a full disk). The entry is still pending
  // on disk, so it must go again later, but not at once and again and again: the upstream does not
  // key /wake, and each POST would be one more event there.
  const entry: OutboxEntry = {
    id: 'o-1',
    target: 'wake',
    body: { text: 'once', mode: 'next-heartbeat' },
    hook: 'wake',
    requestId: 'r-1',
    state: 'pending',
    acceptedAt: new Date().toISOString(),
    attempts: 0,
  };
  let posts = 0;
  let failures = 0;
  const errors: string[] = [];
  const forwarder = new Forwarder({
    store: {
      outboxHead: () => entry,
      outbox: () => [entry],
      commit: () => {
        failures++;
        return Promise.reject(Object.assign(new Error('no space left on device'), { code: 'ENOSPC' }));
      },
    },
    target: { url: 'http://127.0.0.1:9/hooks/', token: 'upstream', maxAgeSeconds: 3600, maxPendingWakes: 100 },
    log: { info() {}, warn() {}, error: (message) => void errors.push(message) },
    fetch: () => {
      posts++;
      return Promise.resolve(
        new Response('{"ok":true}', { status: 200, headers: { 'content-type': 'application/json' } }),
      );
    },
    failureHoldMs: 3_600_000,
  });
  forwarder.kick();
  await until('the outcome failed to be written', () => failures === 1 && errors.length === 1);
  // The old queue rescheduled the head at once (a 0 ms timer): give it many turns to show itself.
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setTimeout(resolve, 0));
  forwarder.kick();
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(posts, 1, 'one POST, then the queue waits');
  assert.ok(forwarder.dueAt()! > Date.now() + 3_000_000, 'the head is due once the hold ends');
  await forwarder.stop();
});
