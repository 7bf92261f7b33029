import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { formatPreview } from '../lib/cli/preview-text.ts';
import { createCommit } from '../lib/edge/commit.ts';
import type { IdempotencyKey } from '../lib/edge/idempotency.ts';
import { createPlanner, type HookRequest, plan } from '../lib/edge/plan.ts';
import { previewOf } from '../lib/edge/preview.ts';
import { silentLogger, specConfig } from './_app.ts';
import { defer } from './_cleanup.ts';
import { Store } from '../lib/store/journal/store.ts';
import type { RunRecord } from '../lib/model/records.ts';
import { tempDir } from './_dir.ts';
import type { AlertNote } from '../lib/model/alerts.ts';
import { HttpError } from '../lib/errors.ts';

async function setup(t: TestContext, raw: Record<string, unknown> = {}, depth = 0, failing = false) {
  const dir = await tempDir(t, 'dispatch-');
  // A transform module for the mappings that name one; the spec's fake runner never loads it.
  await mkdir(join(dir, 'hooks', 'transforms'), { recursive: true });
  await writeFile(join(dir, 'hooks', 'transforms', 'skip.js'), 'export default () => null;');
  const config = await specConfig({ hooks: { enabled: true, token: 'dispatch-token-0123456789', ...raw } }, dir);
  const { store: opened } = await Store.open(join(dir, 'state'), { idempotencyTtlMs: 60_000 });
  defer(t, () => opened.close());
  // A journal that refuses every line, as a full disk does.
  const full = async () => {
    throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
  };
  const store = failing
    ? { commit: full, backlog: () => opened.backlog(), lastRoute: () => opened.lastRoute() } as unknown as Store
    : opened;
  const noted: AlertNote[] = [];
  const beats: string[] = [];
  const queued: RunRecord[] = [];
  let ids = 0;
  const newId = () => `00000000-0000-4000-8000-${String(++ids).padStart(12, '0')}`;
  const planner = createPlanner({
    config,
    transforms: async () => ({ ok: true, value: null }),
    lastRoute: () => store.lastRoute(),
    newId,
    clock: Date.now,
  });
  const commit = createCommit({
    config,
    store,
    heartbeat: { request: (reason: string) => void beats.push(reason) },
    log: silentLogger,
    newId,
    auth: { refuse: (_client, reason) => new HttpError(401, 'ERR_UNAUTHORIZED', reason) },
    alerts: { note: (note) => void noted.push(note) },
    runs: {
      enqueue: (run: RunRecord) => void queued.push(run),
      get depth() {
        return depth + queued.length;
      },
    },
  });
  // Plan and commit, the answer without its trace.
  const dispatch = async (request: HookRequest, idem: IdempotencyKey | null) => {
    const { trace: _trace, ...answer } = await commit(await plan(planner, request), request, idem);
    return answer;
  };
  return { dispatch, planner, store, beats, queued, noted };
}

const call = (name: string, body: Record<string, unknown>): HookRequest => ({
  id: 'req-1',
  name,
  headers: {},
  query: new URLSearchParams(),
  rawQuery: '',
  bytes: Buffer.from(JSON.stringify(body)),
  client: { address: '127.0.0.1', key: '127.0.0.1' },
  trace: { hook: name, auth: 'token' },
  judged: { fresh: true, keyed: false, counted: true },
});

test('commit() records a wake and asks for a heartbeat only when its mode is now', async (t) => {
  const { dispatch, store, beats } = await setup(t);
  assert.deepEqual(await dispatch(call('wake', { text: ' Disk full ' }), null), {
    status: 200,
    body: { ok: true, mode: 'now', eventOutcome: 'queued' },
  });
  assert.deepEqual(await dispatch(call('wake', { text: 'later', mode: 'next-heartbeat' }), null), {
    status: 200,
    body: { ok: true, mode: 'next-heartbeat', eventOutcome: 'queued' },
  });
  assert.deepEqual(store.events().map((e) => [e.text, e.mode]), [['Disk full', 'now'], ['later', 'next-heartbeat']]);
  assert.deepEqual(beats, ['wake']);
});

test('commit() hands an accepted run to the runtime with the request id on it', async (t) => {
  const { dispatch, queued } = await setup(t);
  const answer = await dispatch(call('agent', { message: 'Summarise' }), { scope: 'agent', key: 'k' });
  assert.equal(answer.status, 202);
  assert.equal(queued.length, 1);
  assert.equal(queued[0]!.requestId, 'req-1');
  assert.equal(queued[0]!.runId, answer.body['runId']);
});

test('commit() refuses a run with 503 and Retry-After when the queue is full, recording nothing', async (t) => {
  const { dispatch, store } = await setup(t, { maxQueuedRuns: 2 }, 2);
  const answer = await dispatch(call('agent', { message: 'one too many' }), null);
  assert.deepEqual([answer.status, answer.body['code'], answer.headers?.['retry-after']], [
    503,
    'ERR_UNAVAILABLE',
    '30',
  ]);
  assert.deepEqual(store.runs(), []);
});

test('commit() answers 404 for a name no mapping matches, and 204 when a transform skips', async (t) => {
  const { dispatch, store } = await setup(t, {
    mappings: [{ match: { path: 'skipper' }, action: 'wake', transform: { module: 'skip.js' } }],
  });
  assert.equal((await dispatch(call('nobody', {}), null)).status, 404);
  assert.deepEqual(await dispatch(call('skipper', { text: 'x' }), null), { status: 204, body: {} });
  assert.deepEqual(store.events(), []);
});

test("plan() alone (a dry run) shows a wake's agent and session, records nothing, and try prints them", async (t) => {
  const { planner, store } = await setup(t, { allowRequestSessionKey: true }, 0);
  const planned = await plan(planner, {
    ...call('wake', { text: 'Deploy failed', sessionKey: 'agent:main:hook:ci' }),
    judged: { fresh: false, keyed: false, counted: false, whole: true },
  });
  const preview = previewOf('wake', planned);
  assert.equal(preview.status, 200);
  assert.deepEqual(preview.actions, [{
    kind: 'wake',
    text: 'Deploy failed',
    unresolved: [],
    mode: 'now',
    target: { sessionKey: 'hook:ci' },
  }]);
  assert.equal(store.events().length, 0);
  const printed = formatPreview(preview);
  assert.match(printed, /\n  mode        now\n  session key hook:ci\n/);
});

test('commit() tells the alerts of a counted signature refusal, a request refused at a bound and a journal that cannot be written; nothing else', async (t) => {
  const signed = await setup(t, {
    mappings: [{
      match: { path: 'gh' },
      signature: { scheme: 'github', secret: 'the-secret' },
      action: 'wake',
      textTemplate: 'x',
    }],
  });
  const refused = await signed.dispatch({ ...call('gh', {}), headers: { 'x-hub-signature-256': 'sha256=00' } }, null);
  assert.equal(refused.status, 401);
  await signed.dispatch({ ...call('gh', {}), judged: { fresh: false, keyed: false, counted: false } }, null);
  assert.deepEqual(
    signed.noted,
    [{ kind: 'signature-failures', hook: 'gh', code: 'bad-signature' }],
    'a replay (not counted) is not trouble',
  );
  await signed.dispatch(call('wake', { text: 'fine' }), null);
  assert.equal(signed.noted.length, 1);

  const full = await setup(t, { maxQueuedRuns: 1 }, 1);
  assert.equal((await full.dispatch(call('agent', { message: 'm' }), null)).status, 503);
  const backlog = await setup(t, { maxBacklogEvents: 1 });
  await backlog.dispatch(call('wake', { text: 'one' }), null);
  assert.equal((await backlog.dispatch(call('wake', { text: 'two' }), null)).status, 503);
  const tooLarge = await setup(t, { maxEventBytes: 2 });
  assert.equal((await tooLarge.dispatch(call('wake', { text: 'three' }), null)).status, 413);
  assert.deepEqual([...full.noted, ...backlog.noted, ...tooLarge.noted], [
    { kind: 'backlog', hook: 'agent', code: 'hooks.maxQueuedRuns' },
    { kind: 'backlog', hook: 'wake', code: 'hooks.maxBacklogEvents' },
  ]);

  const broken = await setup(t, {}, 0, true);
  await assert.rejects(broken.dispatch(call('wake', { text: 'lost' }), null), /no space left/);
  assert.deepEqual(broken.noted, [{ kind: 'storage', hook: 'wake', code: 'journal ENOSPC' }]);
});
