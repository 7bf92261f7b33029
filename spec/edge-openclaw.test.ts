import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { readRuns } from '../lib/store/read.ts';
import { post } from './_http.ts';
import { startApp, type AppHarness } from './_app.ts';

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
  const a = await post(h.url, '/hooks/wake', { headers: { ...AUTH, 'idempotency-key': 'k1', 'x-openclaw-idempotency-key': 'x1' }, body: { text: 'a' } });
  const b = await post(h.url, '/hooks/wake', { headers: { ...AUTH, 'idempotency-key': 'k1', 'x-openclaw-idempotency-key': 'x2' }, body: { text: 'b' } });
  assert.equal(b.headers['idempotent-replayed'], 'true');
  const c = await post(h.url, '/hooks/wake', { headers: { ...AUTH, 'x-openclaw-idempotency-key': 'x3', 'webhook-id': 'w1' }, body: { text: 'c' } });
  const d = await post(h.url, '/hooks/wake', { headers: { ...AUTH, 'x-openclaw-idempotency-key': 'x3', 'webhook-id': 'w2' }, body: { text: 'd' } });
  assert.equal(d.headers['idempotent-replayed'], 'true');
  assert.deepEqual([a.status, c.status], [200, 200]);
  assert.deepEqual(h.store.events().map((e) => e.text), ['a', 'c']);
});

test('OpenClaw channel aliases are accepted; the answer and the run record carry the canonical name', async (t) => {
  const h = await start(t);
  for (const [alias, canonical] of [['imsg', 'imessage'], ['teams', 'msteams'], ['Telegram', 'telegram']] as const) {
    const reply = await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'x', channel: alias, deliver: false } });
    assert.equal(reply.status, 202, reply.text);
    assert.equal(reply.body['channel'], canonical);
    assert.equal(h.store.run(reply.body['runId'] as string)?.channel, canonical);
  }
  const onDisk = await readRuns(h.state);
  assert.deepEqual(onDisk.map((r) => r.channel), ['imessage', 'msteams', 'telegram']);
});

test('an agent:<id>: session key is judged by the prefix rules as sent, then run without its agent:<id>: (OpenClaw\'s order)', async (t) => {
  const h = await start(t, {
    hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:', 'agent:'] },
    agents: { list: [{ id: 'hooks', default: true }, { id: 'ops' }] },
  });
  const own = await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'x', sessionKey: 'agent:hooks:slack:channel:c123' } });
  assert.equal(own.status, 202, own.text);
  assert.equal(own.body['sessionKey'], 'slack:channel:c123');
  assert.equal(own.body['agentId'], 'hooks');
  const slack = await start(t, { hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:', 'slack:'] } });
  const stripped = await post(slack.url, '/hooks/agent', { headers: AUTH, body: { message: 'x', sessionKey: 'agent:hooks:slack:channel:c123' } });
  assert.equal(stripped.status, 400);
  assert.match(String(stripped.body['error']), /sessionKey: must start with one of "hook:", "slack:"/);
});

test('an agent:main: key sent for agent hooks is judged again re-scoped, as the released gateway does: 400 with ["hook:", "agent:main:"]', async (t) => {
  const h = await start(t, {
    hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:', 'agent:main:'] },
    agents: { list: [{ id: 'main', default: true }, { id: 'hooks' }] },
  });
  for (const sessionKey of ['agent:main:slack:channel:c123', 'agent:main:main']) {
    const refused = await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'x', agentId: 'hooks', sessionKey } });
    assert.equal(refused.status, 400, `${sessionKey}: ${refused.text}`);
    assert.equal(refused.body['code'], 'ERR_NOT_ALLOWED');
    assert.match(String(refused.body['error']), /^sessionKey: must start with one of "hook:", "agent:main:" \(checked again as "agent:hooks:/);
    const forMain = await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'x', agentId: 'main', sessionKey } });
    assert.equal(forMain.status, 202, forMain.text);
  }
  assert.equal(h.store.runs().length, 2);
});

test('/agent takes the released gateway\'s sessionMode and accountId: recorded on the run, held to its rules', async (t) => {
  const h = await start(t, {
    hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:'] },
    channels: { telegram: { botToken: '123:spec', apiBase: 'http://127.0.0.1:9' } },
  });
  const isolated = await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'x', sessionKey: 'hook:inbox', sessionMode: 'isolated' } });
  assert.equal(isolated.status, 202, isolated.text);
  const persistent = await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'x', sessionKey: 'hook:inbox', sessionMode: 'persistent', channel: 'telegram', to: '42', deliver: false } });
  assert.equal(persistent.status, 202, persistent.text);
  const account = await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'x', channel: 'telegram', to: '42', accountId: 'work' } });
  assert.equal(account.status, 202, account.text);
  const runs = (await readRuns(h.state)).map((r) => [r.sessionMode, r.accountId]);
  assert.deepEqual(runs, [['isolated', undefined], ['persistent', undefined], [undefined, 'work']]);
  for (const [body, message] of [
    [{ message: 'x', sessionMode: 'persistent' }, 'sessionMode: "persistent" requires a sessionKey'],
    [{ message: 'x', accountId: 'work' }, 'accountId: requires channel and to'],
  ] as const) {
    const refused = await post(h.url, '/hooks/agent', { headers: AUTH, body });
    assert.deepEqual([refused.status, refused.body['code'], refused.body['error']], [400, 'ERR_INVALID_PAYLOAD', message]);
  }
});

test('an unknown /wake or /agent field is a 400 by default; with hooks.unknownPayloadFields "log" it is accepted and logged by name', async (t) => {
  const strict = await start(t);
  const refused = await post(strict.url, '/hooks/wake', { headers: AUTH, body: { text: 'x', source: 'ci' } });
  assert.equal(refused.status, 400);
  assert.match(String(refused.body['error']), /^source: unknown key/);

  const h = await start(t, { hooks: { unknownPayloadFields: 'log' } });
  const wake = await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'Deploy done', source: 'ci', 'bad\nname': 1 } });
  assert.equal(wake.status, 200, wake.text);
  assert.deepEqual(h.store.events().map((e) => e.text), ['Deploy done']);
  const agent = await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'Summarise', priority: 'high' } });
  assert.equal(agent.status, 202, agent.text);
  const logged = h.lines.filter((l) => l['msg'] === 'unknown payload fields ignored');
  assert.deepEqual(logged.map((l) => [l['hook'], l['fields']]), [['wake', 'source,["bad\\nname"]'], ['agent', 'priority']]);
  // A known field's rule still holds: only unknown names are let through.
  const mistyped = await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'x', mode: 'later' } });
  assert.equal(mistyped.status, 400);
});
