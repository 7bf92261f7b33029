import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { JOURNAL_FILE } from '../lib/store/journal/lines.ts';
import { readRoots } from '../lib/store/journal/read.ts';
import { Ledger } from '../lib/store/ledger/ledger.ts';
import { readLedger } from '../lib/store/ledger/read.ts';
import { Claims } from '../lib/server/claims.ts';
import { replayOperation } from '../lib/server/replay.ts';
import { resolveOperation, type ResolveResult } from '../lib/server/resolve.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { silentLogger, specConfig, startApp, withHooks } from './_app.ts';
import { post } from './_http.ts';

// requests resolve, the server's side: failures marked resolved by hand, in one journal line, and
// what is left alone (a success, a root resolved already, one a replay runs now).

const TOKEN = 'server-resolve-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

async function start(t: TestContext) {
  const dir = await tempDir(t, 'server-resolve-');
  const config = await specConfig(withHooks({}, TOKEN), dir);
  const ledger = await Ledger.open(join(dir, 'state'), { config: config.hooks.ledger });
  defer(t, () => ledger.close());
  const h = await startApp(t, { token: TOKEN, dir, with: () => ({ ledger }) });
  const claims = new Claims();
  const now = () => Date.parse('2026-05-01T12:00:00.000Z');
  const resolve = resolveOperation({ stateDir: h.state, ledger, store: h.store, claims, now });
  const replay = replayOperation({ stateDir: h.state, ledger, app: h.app, store: h.store, claims, log: silentLogger });
  const entry = async (requestId: string) => {
    await ledger.flush();
    return (await readLedger(h.state)).find((e) => e.requestId === requestId)!.id;
  };
  return { ...h, claims, entry, replay, resolve: async (ids: unknown) => (await resolve(ids)).results };
}

const said = (results: ResolveResult[]) =>
  results.map((r) => (r.ok ? `resolved ${r.root} at ${r.resolvedAt}` : r.error));

test('resolveOperation: failures (named by entry id, request id or a replay) are marked resolved by hand in one journal line; a replay then needs --force', async (t) => {
  const h = await start(t);
  for (const id of ['bad-1', 'bad-2']) {
    assert.equal(
      (await post(h.url, '/hooks/wake', { headers: { ...AUTH, 'x-request-id': id }, body: '{"text":' })).status,
      400,
    );
  }
  const one = await h.entry('bad-1');
  const two = await h.entry('bad-2');
  // A failed replay of bad-2 names its root.
  await h.replay({ ids: [two] });
  await h.entry('bad-2');
  const replayOfTwo = (await readLedger(h.state)).find((e) => e.replayOf === two)!.id;
  const before = (await readFile(join(h.state, JOURNAL_FILE), 'utf8')).split('\n').length;
  assert.deepEqual(said(await h.resolve({ ids: ['bad-1', replayOfTwo, two] })), [
    `resolved ${one} at 2026-05-01T12:00:00.000Z`,
    `resolved ${two} at 2026-05-01T12:00:00.000Z`,
    `resolved ${two} at 2026-05-01T12:00:00.000Z`,
  ]);
  assert.equal((await readFile(join(h.state, JOURNAL_FILE), 'utf8')).split('\n').length, before + 1, 'one line');
  const roots = await readRoots(h.state);
  assert.deepEqual([roots.get(one)?.state, roots.get(two)?.state, roots.get(two)?.replays.length], [
    'resolved',
    'resolved',
    1,
  ]);
  assert.deepEqual(said(await h.resolve({ ids: [one] })), [
    `entry ${one} was marked resolved already, at 2026-05-01T12:00:00.000Z`,
  ]);
  const refused = (await h.replay({ ids: [one] })).results[0]!;
  assert.equal(
    refused.ok ? '' : refused.error,
    `entry ${one} was marked resolved at 2026-05-01T12:00:00.000Z; replay it with --force`,
  );
});

test('resolveOperation: a success, a root a replay of which succeeded, one a replay runs now and an unknown id are left as they are, each saying why', async (t) => {
  const h = await start(t);
  assert.equal(
    (await post(h.url, '/hooks/wake', { headers: { ...AUTH, 'x-request-id': 'fine' }, body: { text: 'fine' } })).status,
    200,
  );
  assert.equal(
    (await post(h.url, '/hooks/wake', { headers: { ...AUTH, 'x-request-id': 'busy' }, body: '{"text":' })).status,
    400,
  );
  const fine = await h.entry('fine');
  const busy = await h.entry('busy');
  await h.replay({ ids: [fine], force: true });
  assert.ok(h.claims.take(busy));
  assert.deepEqual(said(await h.resolve({ ids: [fine, busy, 'nobody'] })), [
    `entry ${fine} is resolved already: a replay of it succeeded`,
    `a replay of entry ${busy} is running now`,
    'no request ledger entry has the id "nobody" (an entry id or a request id; it may have been trimmed)',
  ]);
  h.claims.release(busy);
  await assert.rejects(h.resolve({ ids: [] }), /ids: must be a non-empty list/);
  await assert.rejects(h.resolve({}), /ids: must be a non-empty list/);
});

test('resolveOperation: an entry that did not fail has nothing to resolve', async (t) => {
  const h = await start(t);
  assert.equal(
    (await post(h.url, '/hooks/wake', { headers: { ...AUTH, 'x-request-id': 'ok' }, body: { text: 'ok' } })).status,
    200,
  );
  const ok = await h.entry('ok');
  assert.deepEqual(said(await h.resolve({ ids: [ok] })), [`entry ${ok} did not fail: there is nothing to resolve`]);
  assert.equal((await readRoots(h.state)).size, 0);
});
