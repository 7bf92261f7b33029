import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AUTH, gateway, start } from './_forwarder.ts';
import { post } from './_http.ts';
import { until } from './_until.ts';

// Forward mode's order rule, per hook: a paused hook's outbox entries wait without holding up other
// hooks' entries behind them, and go first, in their order, once it resumes.

test("forward mode: a paused hook's entries wait while other hooks' go; on resume they go in their order", async (t) => {
  const fake = await gateway(t);
  const h = await start(t, fake.port, {
    hooks: {
      mappings: [{
        id: 'ci',
        match: { path: 'ci' },
        action: 'wake',
        wakeMode: 'next-heartbeat',
        textTemplate: 'ci {{n}}',
      }],
    },
  });
  await h.store.commit({ pause: [{ hook: 'ci', since: new Date().toISOString() }] });
  const wake = (text: string) => post(h.url, '/hooks/wake', { headers: AUTH, body: { text, mode: 'next-heartbeat' } });
  for (const send of [() => post(h.url, '/hooks/ci', { headers: AUTH, body: { n: 1 } }), () => wake('a')]) {
    assert.equal((await send()).status, 200);
  }
  assert.equal((await post(h.url, '/hooks/ci', { headers: AUTH, body: { n: 2 } })).status, 200);
  assert.equal((await wake('b')).status, 200);
  await until("the other hook's wakes sent", () => h.store.outbox().filter((e) => e.state === 'sent').length === 2);
  const texts = () => fake.accepted.map((a) => String(a.body['text']).match(/ci \d|^[ab]$/)?.[0]);
  assert.deepEqual(texts(), ['a', 'b']);
  assert.deepEqual(h.store.outbox().map((e) => [e.mapping, e.state]), [
    ['ci', 'pending'],
    [undefined, 'sent'],
    ['ci', 'pending'],
    [undefined, 'sent'],
  ]);

  await h.store.commit({ resume: ['ci'] });
  h.forwarder.kick();
  await until("the resumed hook's wakes sent", () => h.store.outbox().every((e) => e.state === 'sent'));
  assert.deepEqual(texts(), ['a', 'b', 'ci 1', 'ci 2']);
});
