import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { readRuns } from '../lib/store/journal/read.ts';
import { post } from './_http.ts';
import { type AppHarness, startApp } from './_app.ts';

// What OpenClaw's own hook callers send, answered as they expect (issue #14, part 1).

const TOKEN = 'spec-openclaw-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };

function start(t: TestContext, raw: Record<string, Record<string, unknown>> = {}): Promise<AppHarness> {
  return startApp(t, { raw, token: TOKEN, idempotencyTtlMs: 60_000 });
}

test('X-OpenClaw-Idempotency-Key makes a retried /agent replay its first answer instead of starting a second run', async (t) => {
  const h = await start(t);
  const headers = { ...AUTH, 'x-openclaw-idempotency-key': 'oc-retry-1' };
  const first = await post(h.url, '/hooks/agent', { headers, body: { message: 'Summarise the inbox' } });
  const second = await post(h.url, '/hooks/agent', { headers, body: { message: 'Summarise the inbox' } });
  assert.equal(first.status, 202, first.text);
  assert.deepEqual(second.body, first.body);
  assert.equal(second.headers['idempotent-replayed'], 'true');
  assert.equal(h.store.runs().length, 1);
});

test('Idempotency-Key wins over X-OpenClaw-Idempotency-Key, which wins over webhook-id', async (t) => {
  const h = await start(t);
  const a = await post(h.url, '/hooks/wake', {
    headers: { ...AUTH, 'idempotency-key': 'k1', 'x-openclaw-idempotency-key': 'x1' },
    body: { text: 'a' },
  });
  const b = await post(h.url, '/hooks/wake', {
    headers: { ...AUTH, 'idempotency-key': 'k1', 'x-openclaw-idempotency-key': 'x2' },
    body: { text: 'b' },
  });
  assert.equal(b.headers['idempotent-replayed'], 'true');
  const c = await post(h.url, '/hooks/wake', {
    headers: { ...AUTH, 'x-openclaw-idempotency-key': 'x3', 'webhook-id': 'w1' },
    body: { text: 'c' },
  });
  const d = await post(h.url, '/hooks/wake', {
    headers: { ...AUTH, 'x-openclaw-idempotency-key': 'x3', 'webhook-id': 'w2' },
    body: { text: 'd' },
  });
  assert.equal(d.headers['idempotent-replayed'], 'true');
  assert.deepEqual([a.status, c.status], [200, 200]);
  assert.deepEqual(h.store.events().map((e) => e.text), ['a', 'c']);
});

test('OpenClaw channel aliases are accepted; the answer and the run record carry the canonical name', async (t) => {
  const h = await start(t);
  for (const [alias, canonical] of [['imsg', 'imessage'], ['teams', 'msteams'], ['Telegram', 'telegram']] as const) {
    const reply = await post(h.url, '/hooks/agent', {
      headers: AUTH,
      body: { message: 'x', channel: alias, deliver: false },
    });
    assert.equal(reply.status, 202, reply.text);
    assert.equal(reply.body['channel'], canonical);
    assert.equal(h.store.run(reply.body['runId'] as string)?.channel, canonical);
  }
  const onDisk = await readRuns(h.state);
  assert.deepEqual(onDisk.map((r) => r.channel), ['imessage', 'msteams', 'telegram']);
});

test("an agent:<id>: session key is judged by the prefix rules as sent, then run without its agent:<id>: (OpenClaw's order)", async (t) => {
  const h = await start(t, {
    hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:', 'agent:'] },
    agents: { list: [{ id: 'hooks', default: true }, { id: 'ops' }] },
  });
  const own = await post(h.url, '/hooks/agent', {
    headers: AUTH,
    body: { message: 'x', sessionKey: 'agent:hooks:slack:channel:c123' },
  });
  assert.equal(own.status, 202, own.text);
  assert.equal(own.body['sessionKey'], 'slack:channel:c123');
  assert.equal(own.body['agentId'], 'hooks');
  const slack = await start(t, {
    hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:', 'slack:'] },
  });
  const stripped = await post(slack.url, '/hooks/agent', {
    headers: AUTH,
    body: { message: 'x', sessionKey: 'agent:hooks:slack:channel:c123' },
  });
  assert.equal(stripped.status, 400);
  assert.match(String(stripped.body['error']), /sessionKey: must start with one of "hook:", "slack:"/);
});

test('an agent:main: key sent for agent hooks is judged again re-scoped, as the released gateway does: 400 with ["hook:", "agent:main:"]', async (t) => {
  const h = await start(t, {
    hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:', 'agent:main:'] },
    agents: { list: [{ id: 'main', default: true }, { id: 'hooks' }] },
  });
  for (const sessionKey of ['agent:main:slack:channel:c123', 'agent:main:main']) {
    const refused = await post(h.url, '/hooks/agent', {
      headers: AUTH,
      body: { message: 'x', agentId: 'hooks', sessionKey },
    });
    assert.equal(refused.status, 400, `${sessionKey}: ${refused.text}`);
    assert.equal(refused.body['code'], 'ERR_NOT_ALLOWED');
    assert.match(
      String(refused.body['error']),
      /^sessionKey: must start with one of "hook:", "agent:main:" \(checked again as "agent:hooks:/,
    );
    const forMain = await post(h.url, '/hooks/agent', {
      headers: AUTH,
      body: { message: 'x', agentId: 'main', sessionKey },
    });
    assert.equal(forMain.status, 202, forMain.text);
  }
  assert.equal(h.store.runs().length, 2);
});

test("/agent takes the released gateway's sessionMode and accountId: recorded on the run, held to its rules", async (t) => {
  const h = await start(t, {
    hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:'] },
    channels: { telegram: { botToken: '123:spec', apiBase: 'http://127.0.0.1:9' } },
  });
  const isolated = await post(h.url, '/hooks/agent', {
    headers: AUTH,
    body: { message: 'x', sessionKey: 'hook:inbox', sessionMode: 'isolated' },
  });
  assert.equal(isolated.status, 202, isolated.text);
  const persistent = await post(h.url, '/hooks/agent', {
    headers: AUTH,
    body: {
      message: 'x',
      sessionKey: 'hook:inbox',
      sessionMode: 'persistent',
      channel: 'telegram',
      to: '42',
      deliver: false,
    },
  });
  assert.equal(persistent.status, 202, persistent.text);
  const account = await post(h.url, '/hooks/agent', {
    headers: AUTH,
    body: { message: 'x', channel: 'telegram', to: '42', accountId: 'work' },
  });
  assert.equal(account.status, 202, account.text);
  const runs = (await readRuns(h.state)).map((r) => [r.sessionMode, r.accountId]);
  assert.deepEqual(runs, [['isolated', undefined], ['persistent', undefined], [undefined, 'work']]);
  for (
    const [body, message] of [
      [{ message: 'x', sessionMode: 'persistent' }, 'sessionMode: "persistent" requires a sessionKey'],
      [{ message: 'x', accountId: 'work' }, 'accountId: requires channel and to'],
    ] as const
  ) {
    const refused = await post(h.url, '/hooks/agent', { headers: AUTH, body });
    assert.deepEqual([refused.status, refused.body['code'], refused.body['error']], [
      400,
      'ERR_INVALID_PAYLOAD',
      message,
    ]);
  }
});

test('/wake answers eventOutcome: "queued", or "coalesced" when the same text is the session\'s newest unread event; two at once add one event', async (t) => {
  const h = await start(t);
  const first = await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'Deploy done' } });
  assert.deepEqual(first.body, { ok: true, mode: 'now', eventOutcome: 'queued' });
  const again = await post(h.url, '/hooks/wake', {
    headers: { ...AUTH, 'idempotency-key': 'w2' },
    body: { text: ' Deploy done ', mode: 'next-heartbeat' },
  });
  assert.deepEqual(again.body, { ok: true, mode: 'next-heartbeat', eventOutcome: 'coalesced' });
  const retried = await post(h.url, '/hooks/wake', {
    headers: { ...AUTH, 'idempotency-key': 'w2' },
    body: { text: 'Deploy done' },
  });
  assert.deepEqual(retried.body, again.body, 'a retry is told what the first request was');
  assert.deepEqual(h.store.events().map((e) => e.text), ['Deploy done']);
  const together = await Promise.all(
    [1, 2].map(() => post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'Build green' } })),
  );
  assert.deepEqual(together.map((r) => r.body['eventOutcome']).sort(), ['coalesced', 'queued']);
  assert.deepEqual(h.store.events().map((e) => e.text), ['Deploy done', 'Build green']);
  // A heartbeat is asked for by every `now` wake, coalesced or not, as the gateway does.
  assert.equal(h.beats.length, 3);
});

test("/wake takes agentId and sessionKey under the /agent rules and OpenClaw's wake rules; the event is that agent's and session's", async (t) => {
  const h = await start(t, {
    hooks: {
      allowRequestSessionKey: true,
      allowedSessionKeyPrefixes: ['hook:', 'agent:main:'],
      allowedAgentIds: ['main', 'ops'],
    },
    agents: { list: [{ id: 'main', default: true }, { id: 'ops' }, { id: 'research' }] },
  });
  const ok = await post(h.url, '/hooks/wake', {
    headers: AUTH,
    body: { text: 'Deploy failed', agentId: 'OPS', sessionKey: 'hook:ci' },
  });
  assert.deepEqual(ok.body, { ok: true, mode: 'now', eventOutcome: 'queued' });
  const main = await post(h.url, '/hooks/wake', {
    headers: AUTH,
    body: { text: 'Mail', agentId: 'main', sessionKey: 'agent:main:main' },
  });
  assert.equal(main.status, 200, main.text);
  assert.deepEqual(h.store.events().map((e) => [e.text, e.agentId, e.sessionKey]), [
    ['Deploy failed', 'ops', 'hook:ci'],
    ['Mail', undefined, undefined],
  ]);
  const refusals: [Record<string, unknown>, number, string][] = [
    [{ text: 'x', agentId: 'nobody' }, 400, 'agentId: unknown agent "nobody"'],
    [{ text: 'x', agentId: 'research' }, 400, 'agentId: agent "research" is not in hooks.allowedAgentIds'],
    [{ text: 'x', sessionKey: 'slack:c1' }, 400, 'sessionKey: must start with one of "hook:", "agent:main:"'],
    [
      { text: 'x', agentId: 'ops', sessionKey: 'agent:main:main' },
      400,
      'sessionKey: must start with one of "hook:", "agent:main:" (checked again as "agent:ops:main", the key re-scoped to agent "ops")',
    ],
    [{ text: 'x', sessionKey: 'hook:ci', mode: 'next-heartbeat' }, 400, 'sessionKey: requires mode "now"'],
  ];
  for (const [body, status, error] of refusals) {
    const refused = await post(h.url, '/hooks/wake', { headers: AUTH, body });
    assert.deepEqual([refused.status, refused.body['error']], [status, error], JSON.stringify(body));
  }
  const closed = await start(t);
  const key = await post(closed.url, '/hooks/wake', { headers: AUTH, body: { text: 'x', sessionKey: 'hook:ci' } });
  assert.deepEqual([key.status, key.body['code'], key.body['error']], [
    400,
    'ERR_NOT_ALLOWED',
    'sessionKey: may not be chosen by the request while hooks.allowRequestSessionKey is false',
  ]);
  assert.equal(closed.store.events().length, 0);
});

test("a mapped wake goes to the mapping's agent and session, an unknown mapped agent falling back to the default; its answer has eventOutcome", async (t) => {
  const h = await start(t, {
    hooks: {
      allowedSessionKeyPrefixes: ['hook:'],
      mappings: [
        {
          match: { path: 'ci' },
          action: 'wake',
          textTemplate: 'Build {{status}}',
          agentId: 'ops',
          sessionKey: 'hook:ci',
          allowUnsafeExternalContent: true,
        },
        { match: { path: 'wrapped' }, action: 'wake', textTemplate: 'Build {{status}}' },
        { match: { path: 'ghost' }, action: 'wake', textTemplate: 'x', agentId: 'nobody' },
      ],
    },
    agents: { list: [{ id: 'main', default: true }, { id: 'ops' }] },
  });
  const first = await post(h.url, '/hooks/ci', { headers: AUTH, body: { status: 'red' } });
  assert.deepEqual(first.body, { ok: true, mode: 'now', eventOutcome: 'queued' });
  const second = await post(h.url, '/hooks/ci', { headers: AUTH, body: { status: 'red' } });
  assert.equal(second.body['eventOutcome'], 'coalesced');
  const ghost = await post(h.url, '/hooks/ghost', { headers: AUTH, body: {} });
  assert.equal(ghost.status, 200, ghost.text);
  assert.deepEqual(h.store.events().map((e) => [e.agentId, e.sessionKey]), [['ops', 'hook:ci'], [
    undefined,
    undefined,
  ]]);
  // A wrapped text carries a fresh marker id each time, so it is never the same text twice.
  const wrapped = await Promise.all(
    [1, 2].map(() => post(h.url, '/hooks/wrapped', { headers: AUTH, body: { status: 'red' } })),
  );
  assert.deepEqual(wrapped.map((r) => r.body['eventOutcome']), ['queued', 'queued']);
});

test("/wake takes the body's idempotencyKey as /agent does, when no header gives one: a retry is answered its first answer", async (t) => {
  const h = await start(t);
  const first = await post(h.url, '/hooks/wake', {
    headers: AUTH,
    body: { text: 'Deploy 41 done', idempotencyKey: 'deploy-41' },
  });
  const retry = await post(h.url, '/hooks/wake', {
    headers: AUTH,
    body: { text: 'Deploy 41 done!', idempotencyKey: 'deploy-41' },
  });
  assert.equal(first.status, 200, first.text);
  assert.deepEqual(retry.body, first.body);
  assert.equal(retry.headers['idempotent-replayed'], 'true');
  assert.deepEqual(h.store.events().map((e) => e.text), ['Deploy 41 done']);
});

test('an unknown /wake or /agent field is a 400 by default; with hooks.unknownPayloadFields "log" it is accepted and logged by name', async (t) => {
  const strict = await start(t);
  const refused = await post(strict.url, '/hooks/wake', { headers: AUTH, body: { text: 'x', source: 'ci' } });
  assert.equal(refused.status, 400);
  assert.match(String(refused.body['error']), /^source: unknown key/);

  const h = await start(t, { hooks: { unknownPayloadFields: 'log' } });
  const wake = await post(h.url, '/hooks/wake', {
    headers: AUTH,
    body: { text: 'Deploy done', source: 'ci', 'bad\nname': 1 },
  });
  assert.equal(wake.status, 200, wake.text);
  assert.deepEqual(h.store.events().map((e) => e.text), ['Deploy done']);
  const agent = await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'Summarise', priority: 'high' } });
  assert.equal(agent.status, 202, agent.text);
  const logged = h.lines.filter((l) => l['msg'] === 'unknown payload fields ignored');
  assert.deepEqual(logged.map((l) => [l['hook'], l['fields']]), [['wake', 'source,["bad\\nname"]'], [
    'agent',
    'priority',
  ]]);
  // A known field's rule still holds: only unknown names are let through.
  const mistyped = await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'x', mode: 'later' } });
  assert.equal(mistyped.status, 400);
});
