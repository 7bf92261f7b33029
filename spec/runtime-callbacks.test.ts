import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { test, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import type { Config } from '../lib/config/types.ts';
import { CallbackSender } from '../lib/runtime/callbacks.ts';
import type { NewCallback } from '../lib/store/journal/callbacks.ts';
import { Store } from '../lib/store/journal/store.ts';
import { defer } from './_cleanup.ts';
import { captureLog } from './_app.ts';
import { tempDir } from './_dir.ts';
import { fake, type FakeServer, json } from './_fake-server.ts';
import { until } from './_until.ts';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const T0 = Date.parse('2026-11-27T12:00:00Z');

// Only what the sender reads of a config: the secrets of hooks.onComplete and of the mappings.
function config(secret: string | null = SECRET): Config {
  const onComplete = secret === null
    ? null
    : { url: 'http://x', secrets: [secret], includeReply: false, maxAgeSeconds: 60 };
  return { hooks: { onComplete, mappings: [] } } as unknown as Config;
}

interface Harness {
  store: Store;
  sender: CallbackSender;
  clock: { now: number };
  lines: Record<string, unknown>[];
}

async function harness(
  t: TestContext,
  options: { random?: number; config?: Config } = {},
): Promise<Harness> {
  const dir = await tempDir(t, 'callbacks-');
  const { store } = await Store.open(dir, { idempotencyTtlMs: 60_000, now: () => clock.now });
  const clock = { now: T0 };
  const { log, lines } = captureLog();
  const sender = new CallbackSender({
    store,
    config: options.config ?? config(),
    log,
    now: () => clock.now,
    random: () => options.random ?? 1,
    baseDelayMs: 1000,
    maxDelayMs: 8000,
  });
  defer(t, async () => {
    await sender.stop();
    await store.close();
  });
  return { store, sender, clock, lines };
}

function callback(id: string, url: string, maxAgeSeconds = 60): NewCallback {
  return {
    id,
    runId: id.replace('msg_', ''),
    hook: 'agent',
    url,
    origin: new URL(url).origin,
    maxAgeSeconds,
    body: { type: 'run.completed', version: 1, timestamp: '2026-11-27T12:00:00.000Z', data: { runId: id } },
  };
}

test('CallbackSender sends each origin in the order its runs settled, one POST at a time per origin, signed', async (t) => {
  const a = await fake(t, (_req, res) => json(res, 200, {}));
  const b = await fake(t, (_req, res) => json(res, 204, {}));
  const h = await harness(t);
  h.clock.now = Date.now(); // the receiver's check of the signed timestamp reads the real clock
  await h.store.commit({
    callbacks: [
      callback('msg_a1', `${a.url}/one`),
      callback('msg_b1', `${b.url}/x`),
      callback('msg_a2', `${a.url}/two`),
      callback('msg_a3', `${a.url}/three`),
    ],
  });
  h.sender.kick();
  await until('all sent', () => h.store.callbacks().every((e) => e.state === 'sent') || undefined);
  assert.deepEqual(a.seen.map((r) => r.headers['webhook-id']), ['msg_a1', 'msg_a2', 'msg_a3']);
  assert.deepEqual(a.seen.map((r) => r.url), ['/one', '/two', '/three']);
  assert.deepEqual(b.seen.map((r) => r.headers['webhook-id']), ['msg_b1']);
  for (const r of [...a.seen, ...b.seen]) {
    const headers = r.headers as Record<string, string>;
    assert.equal((new Webhook(SECRET).verify(r.body, headers) as { type: string }).type, 'run.completed');
  }
  assert.deepEqual(h.store.callback('msg_b1')?.status, 204);
  assert.equal(h.store.callback('msg_a1')?.attempts, 1);
});

test('CallbackSender backs off exponentially (with jitter) after a failure, and the origin waits behind its head', async (t) => {
  let answer = 500;
  const a = await fake(t, (_req, res) => json(res, answer, { error: 'down for maintenance' }));
  const h = await harness(t, { random: 0.5 });
  await h.store.commit({ callbacks: [callback('msg_1', a.url), callback('msg_2', a.url)] });
  const expected = [500, 1000, 2000, 4000, 4000];
  for (const [i, wait] of expected.entries()) {
    h.sender.kick();
    await until(`attempt ${i + 1}`, () => (h.store.callback('msg_1')?.attempts === i + 1 ? true : undefined));
    const head = h.store.callback('msg_1')!;
    assert.equal(Date.parse(head.nextAttemptAt!) - h.clock.now, wait, `backoff after attempt ${i + 1}`);
    assert.equal(head.lastError, 'receiver answered 500: {"error":"down for maintenance"}');
    assert.equal(head.status, 500);
    h.clock.now = Date.parse(head.nextAttemptAt!);
  }
  assert.equal(
    a.seen.filter((r) => r.headers['webhook-id'] === 'msg_2').length,
    0,
    'the second waited behind the first',
  );
  assert.ok(a.seen.every((r) => r.headers['webhook-id'] === 'msg_1'));
  answer = 200;
  h.sender.kick();
  await until('both sent', () => h.store.callbacks().every((e) => e.state === 'sent') || undefined);
  assert.deepEqual(a.seen.slice(-2).map((r) => r.headers['webhook-id']), ['msg_1', 'msg_2']);
  assert.equal(h.store.callback('msg_1')?.lastError, undefined, 'a sent entry carries no error');
});

test("CallbackSender honours the receiver's Retry-After, up to the entry's maximum age, then gives it up as dead", async (t) => {
  const a = await fake(t, (_req, res) => json(res, 429, {}, { 'retry-after': '20' }));
  const h = await harness(t);
  await h.store.commit({ callbacks: [callback('msg_1', a.url, 30)] });
  h.sender.kick();
  await until('attempt 1', () => (h.store.callback('msg_1')?.attempts === 1 ? true : undefined));
  assert.equal(h.store.callback('msg_1')!.nextAttemptAt, new Date(T0 + 20_000).toISOString());
  h.clock.now = T0 + 20_000;
  h.sender.kick();
  await until('attempt 2', () => (h.store.callback('msg_1')?.attempts === 2 ? true : undefined));
  // 20 s more would be past the 30 s age: the next try is at the age, where it is given up on.
  assert.equal(h.store.callback('msg_1')!.nextAttemptAt, new Date(T0 + 30_000).toISOString());
  h.clock.now = T0 + 30_000;
  h.sender.kick();
  await until('dead', () => (h.store.callback('msg_1')?.state === 'dead' ? true : undefined));
  assert.equal(h.store.callback('msg_1')!.lastError, 'not accepted within 30 s (last: receiver answered 429: {})');
  assert.equal(a.seen.length, 2);
  const logged = await until('the log line', () => h.lines.find((l) => l['msg'] === 'callback dead'));
  assert.equal(logged['origin'], a.url);
  assert.equal('url' in logged, false, 'the URL (its query may hold a token) is not logged');
});

test('CallbackSender: a dead origin never holds up another; with no secret configured any more, an entry is dead', async (t) => {
  const held: ServerResponse[] = [];
  const stuck: FakeServer = await fake(t, (_req, res) => void held.push(res));
  defer(t, () => held.forEach((res) => res.destroy()));
  const fine = await fake(t, (_req, res) => json(res, 200, {}));
  const h = await harness(t);
  await h.store.commit({ callbacks: [callback('msg_s', stuck.url), callback('msg_f', fine.url)] });
  h.sender.kick();
  await until('the other origin sent', () => (h.store.callback('msg_f')?.state === 'sent' ? true : undefined));
  assert.equal(stuck.seen.length, 1);
  assert.equal(h.store.callback('msg_s')?.state, 'pending');
  h.sender.kick(); // its head in flight: not sent twice
  assert.equal(stuck.seen.length, 1);

  const gone = await harness(t, { config: config(null) });
  await gone.store.commit({ callbacks: [callback('msg_x', fine.url)] });
  gone.sender.kick();
  await until('dead', () => (gone.store.callback('msg_x')?.state === 'dead' ? true : undefined));
  assert.equal(
    gone.store.callback('msg_x')?.lastError,
    'nothing to sign it with: hooks.onComplete is no longer configured',
  );
});

test('CallbackSender holds an origin back when the outcome of its attempt cannot be written, rather than POSTing again at once', async (t) => {
  const dir = await tempDir(t, 'callbacks-');
  const { store } = await Store.open(dir, { idempotencyTtlMs: 60_000 });
  defer(t, () => store.close());
  await store.commit({ callbacks: [callback('msg_1', 'http://127.0.0.1:9/cb')] });
  const clock = { now: T0 };
  const { log, lines } = captureLog();
  let posts = 0;
  const sender = new CallbackSender({
    // Every outcome fails to be written, as on a full disk.
    store: { callbackHeads: () => store.callbackHeads(), commit: () => Promise.reject(new Error('ENOSPC')) },
    config: config(),
    log,
    now: () => clock.now,
    fetch: () => (posts++, Promise.resolve(new Response('', { status: 500 }))),
  });
  sender.kick();
  await until('the failure logged', () => lines.find((l) => l['msg'] === 'callback failed unexpectedly'));
  sender.kick();
  clock.now += 5_000;
  sender.kick();
  await until('the second attempt', () => (posts >= 2 ? true : undefined));
  await sender.stop();
  assert.equal(posts, 2);
});

test("CallbackSender never records or logs the URL a fetch error quotes (Deno's name it whole, query and all)", async (t) => {
  const dir = await tempDir(t, 'callbacks-');
  const { store } = await Store.open(dir, { idempotencyTtlMs: 60_000 });
  defer(t, () => store.close());
  const url = 'http://127.0.0.1:9/hooks/T0KEN-IN-PATH?token=QUERY-TOKEN';
  await store.commit({ callbacks: [callback('msg_1', url)] });
  const { log, lines } = captureLog();
  // What Deno's fetch throws for a receiver that refuses the connection.
  const denoError = new TypeError('fetch failed', {
    cause: new Error(`error sending request for url (${url}): client error (Connect): tcp connect error`),
  });
  const sender = new CallbackSender({ store, config: config(), log, fetch: () => Promise.reject(denoError) });
  defer(t, () => sender.stop());
  sender.kick();
  const entry = await until(
    'the attempt',
    () => (store.callback('msg_1')?.attempts === 1 ? store.callback('msg_1') : undefined),
  );
  assert.equal(
    entry.lastError,
    'no answer: TypeError: fetch failed: error sending request for url (http://127.0.0.1:9): client error (Connect): tcp connect error',
  );
  await until('the log line', () => lines.find((l) => l['msg'] === 'callback will retry'));
  for (const text of [JSON.stringify(lines), JSON.stringify(store.callbacks().map(({ url: _, ...rest }) => rest))]) {
    assert.equal(text.includes('TOKEN'), false, `a token of the URL is quoted: ${text}`);
  }
});

test('CallbackSender names where a relative redirect pointed, read against the URL that answered it, without its query', async (t) => {
  const a = await fake(t, (_req, res) => void res.writeHead(302, { location: '/moved/here?token=abc' }).end());
  const h = await harness(t);
  await h.store.commit({ callbacks: [callback('msg_1', `${a.url}/cb`)] });
  h.sender.kick();
  const entry = await until(
    'the attempt',
    () => (h.store.callback('msg_1')?.attempts === 1 ? h.store.callback('msg_1') : undefined),
  );
  assert.equal(entry.lastError, `receiver answered 302, a redirect to ${a.url}/moved/here, which is not followed`);
  assert.equal(a.seen.length, 1, 'not followed');
});

test('CallbackSender signs each attempt afresh: its own timestamp, and the secrets of a reload since', async (t) => {
  let answer = 500;
  const a = await fake(t, (_req, res) => json(res, answer, {}));
  const h = await harness(t);
  const rotated = `whsec_${randomBytes(32).toString('base64')}`;
  // The first attempt is made ten minutes ago: a receiver would refuse its timestamp now.
  h.clock.now = Date.now() - 600_000;
  await h.store.commit({ callbacks: [callback('msg_1', a.url, 3600)] });
  h.sender.kick();
  await until('attempt 1', () => (h.store.callback('msg_1')?.attempts === 1 ? true : undefined));
  const first = a.seen[0]!;
  assert.throws(() => new Webhook(SECRET).verify(first.body, first.headers as Record<string, string>), /too old/i);
  h.sender.reconfigure(config(rotated));
  answer = 200;
  h.clock.now = Date.now();
  h.sender.kick();
  await until('sent', () => (h.store.callback('msg_1')?.state === 'sent' ? true : undefined));
  const second = a.seen[1]!;
  const headers = second.headers as Record<string, string>;
  assert.equal(headers['webhook-id'], first.headers['webhook-id'], 'the same id on every attempt');
  assert.equal(Number(headers['webhook-timestamp']), Math.floor(h.clock.now / 1000));
  assert.equal(second.body, first.body, 'the same bytes on every attempt');
  assert.deepEqual(new Webhook(rotated).verify(second.body, headers), JSON.parse(second.body));
  assert.throws(() => new Webhook(SECRET).verify(second.body, headers), /signature/i, 'the old secret is gone');
});
