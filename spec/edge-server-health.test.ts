// GET /healthz: what a supervisor or load balancer asks, answered from the store's own verdict.
import assert from 'node:assert/strict';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { Store } from '../lib/store/journal/store.ts';
import { JOURNAL_FILE } from '../lib/store/journal/lines.ts';
import { JSON_TYPE, post, send } from './_http.ts';
import { type AppHarness, startApp } from './_app.ts';

const TOKEN = 'health-hook-token-0123456789abcdef';

// `store` replaces the real one (a stub); without it a real store is opened in the temp dir.
function start(t: TestContext, store?: Store): Promise<AppHarness> {
  return startApp(t, { token: TOKEN, idempotencyTtlMs: 60_000, ...(store === undefined ? {} : { store }) });
}

/** A store that answers only what /healthz asks, with a verdict the test controls. */
function stubStore(writable: () => boolean): Store {
  return { writable: async () => writable() } as unknown as Store;
}

test('GET /healthz answers 200 {ok:true} while the journal is writable, without a token', async (t) => {
  const h = await start(t);
  const reply = await send(h.url, '/healthz');
  assert.equal(reply.status, 200);
  assert.deepEqual(reply.body, { ok: true });
  assert.equal(reply.headers['content-type'], JSON_TYPE);
  assert.equal(reply.headers['cache-control'], 'no-store');
});

test('HEAD /healthz answers the status with no body; other methods get 405 with Allow', async (t) => {
  const h = await start(t);
  const head = await send(h.url, '/healthz', { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.text, '');
  const posted = await post(h.url, '/healthz', { body: {} });
  assert.equal(posted.status, 405);
  assert.equal(posted.headers['allow'], 'GET, HEAD');
});

test('GET /healthz answers 503 {ok:false} when the store reports the journal not writable', async (t) => {
  const h = await start(t, stubStore(() => false));
  const reply = await send(h.url, '/healthz');
  assert.equal(reply.status, 503);
  assert.equal(reply.body['ok'], false);
  assert.match(String(reply.body['error']), /journal is not writable/);
  assert.equal(reply.headers['content-type'], JSON_TYPE);
  const head = await send(h.url, '/healthz', { method: 'HEAD' });
  assert.equal(head.status, 503);
});

test('GET /healthz asks the store on every request, so it recovers as soon as the store does', async (t) => {
  let writable = false;
  const h = await start(t, stubStore(() => writable));
  assert.equal((await send(h.url, '/healthz')).status, 503);
  writable = true;
  assert.equal((await send(h.url, '/healthz')).status, 200);
  writable = false;
  assert.equal((await send(h.url, '/healthz')).status, 503);
});

test('GET /healthz answers 503 after a journal append failed (the journal was closed under the server)', async (t) => {
  const h = await start(t);
  assert.equal((await send(h.url, '/healthz')).status, 200);
  await h.store.close();
  // The append fails, so the wake is refused with a bare 500 (never acknowledged) and logged.
  const wake = await post(h.url, '/hooks/wake', {
    headers: { authorization: `Bearer ${TOKEN}` },
    body: { text: 'lost?' },
  });
  assert.equal(wake.status, 500);
  assert.deepEqual(wake.body, { ok: false, error: 'internal error', code: 'ERR_INTERNAL' });
  assert.ok(h.lines.some((l) => l['msg'] === 'unexpected error' && l['id'] === wake.headers['x-request-id']));
  const health = await send(h.url, '/healthz');
  assert.equal(health.status, 503);
  assert.equal(health.body['ok'], false);
});

test('GET /healthz answers 503 when the journal file has been removed from the state directory', async (t) => {
  const h = await start(t);
  assert.equal(
    (await post(h.url, '/hooks/wake', {
      headers: { authorization: `Bearer ${TOKEN}` },
      body: { text: 'x', mode: 'next-heartbeat' },
    })).status,
    200,
  );
  await unlink(join(h.state, JOURNAL_FILE));
  const reply = await send(h.url, '/healthz');
  assert.equal(reply.status, 503);
  assert.equal(reply.body['ok'], false);
});
