// A delivery id is taken once whichever way the delivery arrives: live, or by a replay of its stored
// copy; and it stays taken past the idempotency window for as long as the ledger keeps entries.
// In process, with a real ledger and store; the store's clock is moved, nothing sleeps.
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { Ledger } from '../lib/store/ledger/ledger.ts';
import { readLedger } from '../lib/store/ledger/read.ts';
import type { LedgerEntry } from '../lib/model/ledger-entry.ts';
import type { CallTransform } from '../lib/hooks/mappings.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { type AppHarness, silentLogger, specConfig, startApp, withHooks } from './_app.ts';
import { Claims } from '../lib/server/claims.ts';
import { replayOperation } from '../lib/server/replay.ts';
import { post } from './_http.ts';
import { until } from './_until.ts';
import { githubExample, SIGNERS } from './_signers.ts';
import { type DeliveryTaken, takenCheck } from '../lib/edge/taken.ts';

const TOKEN = 'taken-hook-token-0123456789';
const T0 = Date.UTC(2026, 0, 1);
const RIGHT = 'the-right-github-secret';
const WRONG = 'a-wrong-github-secret';

interface Harness extends AppHarness {
  clock: { t: number };
  /** Every entry, once what is queued is written. */
  entries(): Promise<LedgerEntry[]>;
  /** Serves `secret` from now on. */
  fix(secret: string): Promise<void>;
  /** The wakes the GitHub mapping made. */
  pushes(): number;
}

const raw = (secret: string, extra: Record<string, unknown> = {}) => ({
  hooks: {
    idempotencyTtlSeconds: 60,
    ledger: { maxAgeSeconds: 3600 },
    mappings: [
      {
        match: { path: 'github' },
        signature: { scheme: 'github', secret },
        action: 'wake',
        wakeMode: 'next-heartbeat',
        textTemplate: 'push to {{repository.name}}',
      },
      {
        match: { path: 'held' },
        signature: { scheme: 'github', secret },
        action: 'wake',
        wakeMode: 'next-heartbeat',
        textTemplate: 'push to {{repository.name}}',
        transform: { module: 'hold.mjs' },
      },
      {
        match: { path: 'sms' },
        signature: { scheme: 'twilio', secret: 'twilio-auth-token-0123', url: 'https://hooks.example.test/hooks/sms' },
        action: 'wake',
        wakeMode: 'next-heartbeat',
        textTemplate: 'sms {{Body}}',
      },
    ],
    ...extra,
  },
});

async function start(t: TestContext, secret: string, transforms?: CallTransform): Promise<Harness> {
  const dir = await tempDir(t, 'edge-taken-spec-');
  // The module the `held` mapping names; its calls are answered by `transforms`.
  await mkdir(join(dir, 'hooks', 'transforms'), { recursive: true });
  await writeFile(join(dir, 'hooks', 'transforms', 'hold.mjs'), 'export default () => ({});\n');
  const config = await specConfig(withHooks(raw(secret), TOKEN), dir);
  const ledger = await Ledger.open(join(dir, 'state'), { config: config.hooks.ledger });
  defer(t, () => ledger.close());
  const clock = { t: T0 };
  const h = await startApp(t, {
    raw: raw(secret),
    token: TOKEN,
    dir,
    now: () => clock.t,
    with: () => ({ ledger, ...(transforms === undefined ? {} : { transforms }) }),
  });
  return {
    ...h,
    clock,
    entries: async () => {
      await ledger.flush();
      return readLedger(h.state);
    },
    fix: async (fixed) => h.app.reload(await specConfig(withHooks(raw(fixed), TOKEN), dir)),
    pushes: () => h.store.events().filter((e) => e.text.includes('push to')).length,
  };
}

const BODY = JSON.stringify(githubExample('push'));

// GitHub's delivery as its own library signs it; a redelivery sends the same X-GitHub-Delivery.
async function deliver(
  h: Harness,
  secret: string,
  requestId: string,
  id = 'delivery-1',
  path = '/hooks/github',
): Promise<Awaited<ReturnType<typeof post>>> {
  const headers = await SIGNERS['github']!({ secret, body: BODY, nowSeconds: 0, id });
  return post(h.url, path, {
    headers: { ...headers, 'content-type': 'application/json', 'x-request-id': requestId },
    body: BODY,
  });
}

async function entryOf(h: Harness, requestId: string): Promise<LedgerEntry> {
  const found = (await h.entries()).find((e) => e.requestId === requestId);
  assert.ok(found !== undefined, requestId);
  return found;
}

test('a delivery id stays taken past the idempotency window while the ledger keeps entries: a late redelivery is a duplicate naming the request that took it', async (t) => {
  const h = await start(t, RIGHT);
  assert.equal((await deliver(h, RIGHT, 'gh-1')).status, 200);
  h.clock.t = T0 + 61_000;
  const late = await deliver(h, RIGHT, 'gh-late');
  assert.equal(late.status, 200, late.text);
  assert.equal(late.headers['idempotent-replayed'], 'true');
  assert.deepEqual(late.body, { ok: true, duplicate: true, duplicateOf: 'gh-1' });
  assert.equal(h.pushes(), 1);
  assert.deepEqual((await entryOf(h, 'gh-late')).became, { duplicateOf: 'gh-1' });
  // Past the ledger's retention (hooks.ledger.maxAgeSeconds) the id is free again.
  h.clock.t = T0 + 3_601_000;
  assert.equal((await deliver(h, RIGHT, 'gh-much-later')).status, 200);
  assert.equal(h.pushes(), 2);
});

test("a replay that succeeds takes the delivery id in its commit: the provider's redelivery afterwards is a duplicate of the replay, also past the idempotency window", async (t) => {
  const h = await start(t, WRONG);
  assert.equal((await deliver(h, RIGHT, 'gh-refused')).status, 401);
  const refused = await entryOf(h, 'gh-refused');
  assert.deepEqual(await h.app.taken(refused), { scope: 'github', key: 'delivery-1', by: null });
  await h.fix(RIGHT);
  const replayed = await h.app.replay(refused);
  assert.equal(replayed.status, 200);
  assert.equal(h.pushes(), 1);
  assert.deepEqual(await h.app.taken(refused), {
    scope: 'github',
    key: 'delivery-1',
    by: { requestId: replayed.requestId },
  });
  const redelivered = await deliver(h, RIGHT, 'gh-redeliver');
  assert.equal(redelivered.status, 200);
  assert.equal(redelivered.headers['idempotent-replayed'], 'true');
  h.clock.t = T0 + 600_000;
  const late = await deliver(h, RIGHT, 'gh-redeliver-late');
  assert.deepEqual(late.body, { ok: true, duplicate: true, duplicateOf: replayed.requestId });
  assert.equal(h.pushes(), 1, 'one event');
  assert.deepEqual((await entryOf(h, 'gh-redeliver')).became, { duplicateOf: replayed.requestId });
});

test('a replay of a delivery already taken is a duplicate of the request that took it (nothing runs); forced, it runs and takes the id', async (t) => {
  const h = await start(t, RIGHT);
  assert.equal((await deliver(h, RIGHT, 'gh-live')).status, 200);
  const entry = await entryOf(h, 'gh-live');
  const again = await h.app.replay(entry);
  assert.deepEqual(again.became, { duplicateOf: 'gh-live' });
  assert.equal(h.pushes(), 1);
  const forced = await h.app.replay(entry, { force: true });
  assert.equal(forced.status, 200);
  assert.ok(forced.became?.events !== undefined, JSON.stringify(forced));
  assert.equal(h.pushes(), 2);
  assert.deepEqual((await h.app.taken(entry))?.by, { requestId: forced.requestId });
});

test("a replay that arrives while the provider's retry of the same delivery is being handled waits for it, and is then a duplicate: one event", async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let calls = 0;
  const h = await start(t, WRONG, async () => {
    calls++;
    await gate;
    return { ok: true, value: {} };
  });
  assert.equal((await deliver(h, RIGHT, 'held-refused', 'delivery-9', '/hooks/held')).status, 401);
  const refused = await entryOf(h, 'held-refused');
  await h.fix(RIGHT);
  const retry = deliver(h, RIGHT, 'held-retry', 'delivery-9', '/hooks/held');
  await until('the retry in its transform', () => calls === 1);
  const replay = h.app.replay(refused);
  // Behind the retry (or, were it not keyed, in a transform call of its own).
  await until('the replay waiting behind it', () => h.app.held() === 1 || calls === 2);
  release();
  assert.equal((await retry).status, 200);
  assert.deepEqual((await replay).became, { duplicateOf: 'held-retry' });
  assert.equal(calls, 1);
  assert.equal(h.pushes(), 1);
});

test("Twilio's delivery id (I-Twilio-Idempotency-Token) is redacted in the ledger, so a stored Twilio request names none", async (t) => {
  const h = await start(t, RIGHT);
  const body = 'Body=hello&From=%2B15550001';
  const headers = await SIGNERS['twilio']!({
    secret: 'twilio-auth-token-0123',
    body,
    nowSeconds: 0,
    id: 'tw-delivery-1',
    url: 'https://hooks.example.test/hooks/sms',
  });
  const sent = await post(h.url, '/hooks/sms', {
    headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded', 'x-request-id': 'sms-1' },
    body,
  });
  assert.equal(sent.status, 200, sent.text);
  const entry = await entryOf(h, 'sms-1');
  assert.equal(entry.headers['i-twilio-idempotency-token'], '[redacted]');
  assert.equal(await h.app.taken(entry), null);
});

test('X-OpenClaw-Idempotency-Key is kept in the ledger (it names a delivery, not a credential), so a stored /wake is known by it', async (t) => {
  const h = await start(t, RIGHT);
  const sent = await post(h.url, '/hooks/wake', {
    headers: { authorization: `Bearer ${TOKEN}`, 'x-openclaw-idempotency-key': 'oc-wake-1', 'x-request-id': 'wake-1' },
    body: { text: 'deployed', mode: 'next-heartbeat' },
  });
  assert.equal(sent.status, 200);
  const entry = await entryOf(h, 'wake-1');
  assert.equal(entry.headers['x-openclaw-idempotency-key'], 'oc-wake-1');
  assert.deepEqual(await h.app.taken(entry), { scope: 'wake', key: 'oc-wake-1', by: { requestId: 'wake-1' } });
});

test('takenCheck(): in a dry run, an entry whose delivery id an entry before it in the same call would take is named as skipped; one taken on record names the request', async () => {
  const keys: Record<string, DeliveryTaken | null> = {
    a: { scope: 'sw', key: 'msg-1', by: null },
    b: { scope: 'sw', key: 'msg-1', by: null },
    c: { scope: 'sw', key: 'msg-2', by: { requestId: 'req-9' } },
    d: { scope: 'sw', key: 'msg-3', by: {} },
    e: null,
  };
  const check = takenCheck(async (entry) => keys[entry.id]!);
  const entry = (id: string) => ({ id }) as LedgerEntry;
  assert.equal(await check.why(entry('a')), null);
  check.wouldTake(entry('a'));
  assert.equal(
    await check.why(entry('b')),
    "entry b's delivery id would already be accepted by the replay of entry a before it; replay it again with --force",
  );
  assert.equal(check.inRun(entry('b')), 'a', 'the entry before it in the call that takes its id');
  assert.equal(
    await check.why(entry('c')),
    "entry c's delivery id was already accepted as request req-9; replay it again with --force",
  );
  assert.equal(check.inRun(entry('c')), null, 'taken on record, not in the call');
  assert.equal(await check.why(entry('d')), "entry d's delivery id was already accepted; replay it again with --force");
  assert.equal(await check.why(entry('e')), null);
  check.wouldTake(entry('e'));
});

test('replayOperation check: a bulk plan learns, without running anything, which ids would be skipped for a taken delivery id, the second copy of one delivery included', async (t) => {
  const h = await start(t, WRONG);
  assert.equal((await deliver(h, RIGHT, 'copy-1', 'delivery-5')).status, 401);
  assert.equal((await deliver(h, RIGHT, 'copy-2', 'delivery-5')).status, 401);
  assert.equal((await deliver(h, RIGHT, 'other-1', 'delivery-6')).status, 401);
  await h.fix(RIGHT);
  assert.equal((await deliver(h, RIGHT, 'other-retry', 'delivery-6')).status, 200);
  const [one, two, other] = [await entryOf(h, 'copy-1'), await entryOf(h, 'copy-2'), await entryOf(h, 'other-1')];
  const op = replayOperation({
    stateDir: h.state,
    ledger: null,
    app: h.app,
    store: h.store,
    claims: new Claims(),
    log: silentLogger,
  });
  const answer = await op({ ids: [one.id, two.id, other.id, 'nope'], check: true });
  assert.deepEqual(answer.results, []);
  assert.deepEqual(answer.checks, [
    { id: one.id },
    {
      id: two.id,
      needsForce: 'taken',
      skip:
        `entry ${two.id}'s delivery id would already be accepted by the replay of entry ${one.id} before it; replay it again with --force`,
      takenInRun: one.id,
    },
    {
      id: other.id,
      needsForce: 'taken',
      skip: `entry ${other.id}'s delivery id was already accepted as request other-retry; replay it again with --force`,
      takenBy: 'other-retry',
    },
    {
      id: 'nope',
      error: 'no request ledger entry has the id "nope" (an entry id or a request id; it may have been trimmed)',
    },
  ]);
  assert.deepEqual((await op({ ids: [other.id], check: true, force: [other.id] })).checks, [{ id: other.id }]);
  assert.equal(h.pushes(), 1, 'nothing ran');
});
