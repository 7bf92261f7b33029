import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { createDispatch, type HookCall } from '../lib/edge/dispatch.ts';
import { formatPreview } from '../lib/cli/preview-text.ts';
import { HttpError } from '../lib/errors.ts';
import { silentLogger, specConfig } from './_app.ts';
import { defer } from './_cleanup.ts';
import { Store } from '../lib/store/store.ts';
import type { RunRecord } from '../lib/store/records.ts';
import { tempDir } from './_dir.ts';

async function setup(t: TestContext, raw: Record<string, unknown> = {}, depth = 0) {
  const dir = await tempDir(t, 'dispatch-');
  // A transform module for the mappings that name one; the spec's fake runner never loads it.
  await mkdir(join(dir, 'hooks', 'transforms'), { recursive: true });
  await writeFile(join(dir, 'hooks', 'transforms', 'skip.js'), 'export default () => null;');
  const config = await specConfig({ hooks: { enabled: true, token: 'dispatch-token-0123456789', ...raw } }, dir);
  const { store } = await Store.open(join(dir, 'state'), { idempotencyTtlMs: 60_000 });
  defer(t, () => store.close());
  const beats: string[] = [];
  const queued: RunRecord[] = [];
  let ids = 0;
  const dispatch = createDispatch({
    config,
    store,
    heartbeat: { request: (reason) => void beats.push(reason) },
    log: silentLogger,
    newId: () => `00000000-0000-4000-8000-${String(++ids).padStart(12, '0')}`,
    transforms: async () => ({ ok: true, value: null }),
    runs: { enqueue: (run) => void queued.push(run), get depth() { return depth + queued.length; } },
  });
  return { dispatch, store, beats, queued };
}

const call = (name: string, body: Record<string, unknown>): HookCall => ({ id: 'req-1', name, body, headers: {}, query: new URLSearchParams() });

test('createDispatch() records a wake and asks for a heartbeat only when its mode is now', async (t) => {
  const { dispatch, store, beats } = await setup(t);
  assert.deepEqual(await dispatch(call('wake', { text: ' Disk full ' }), null), { status: 200, body: { ok: true, mode: 'now', eventOutcome: 'queued' } });
  assert.deepEqual(await dispatch(call('wake', { text: 'later', mode: 'next-heartbeat' }), null), { status: 200, body: { ok: true, mode: 'next-heartbeat', eventOutcome: 'queued' } });
  assert.deepEqual(store.events().map((e) => [e.text, e.mode]), [['Disk full', 'now'], ['later', 'next-heartbeat']]);
  assert.deepEqual(beats, ['wake']);
});

test('createDispatch() hands an accepted run to the runtime with the request id on it', async (t) => {
  const { dispatch, queued } = await setup(t);
  const answer = await dispatch(call('agent', { message: 'Summarise' }), { scope: 'agent', key: 'k' });
  assert.equal(answer.status, 202);
  assert.equal(queued.length, 1);
  assert.equal(queued[0]!.requestId, 'req-1');
  assert.equal(queued[0]!.runId, answer.body['runId']);
});

test('createDispatch() refuses a run with 503 and Retry-After when the queue is full, recording nothing', async (t) => {
  const { dispatch, store } = await setup(t, { maxQueuedRuns: 2 }, 2);
  await assert.rejects(dispatch(call('agent', { message: 'one too many' }), null), (error: unknown) => {
    assert.ok(error instanceof HttpError);
    assert.deepEqual([error.status, error.code, error.headers['retry-after']], [503, 'ERR_UNAVAILABLE', '30']);
    return true;
  });
  assert.deepEqual(store.runs(), []);
});

test('createDispatch() answers 404 for a name no mapping matches, and 204 when a transform skips', async (t) => {
  const { dispatch, store } = await setup(t, { mappings: [{ match: { path: 'skipper' }, action: 'wake', transform: { module: 'skip.js' } }] });
  await assert.rejects(dispatch(call('nobody', {}), null), (error: unknown) => error instanceof HttpError && error.status === 404);
  assert.deepEqual(await dispatch(call('skipper', { text: 'x' }), null), { status: 204, body: {} });
  assert.deepEqual(store.events(), []);
});

test('createDispatch() in a dry run shows a wake\'s agent and session, records nothing, and try prints them', async (t) => {
  const { dispatch, store } = await setup(t, { allowRequestSessionKey: true }, 0);
  const preview = { transforms: [], actions: [], warnings: [] } as NonNullable<HookCall['preview']>;
  const answer = await dispatch({ ...call('wake', { text: 'Deploy failed', sessionKey: 'agent:main:hook:ci' }), preview }, null);
  assert.equal(answer.status, 200);
  assert.deepEqual(preview.actions, [{ kind: 'wake', text: 'Deploy failed', unresolved: [], mode: 'now', target: { sessionKey: 'hook:ci' } }]);
  assert.equal(store.events().length, 0);
  const printed = formatPreview({ hook: 'wake', status: 200, ...preview });
  assert.match(printed, /\n  mode        now\n  session key hook:ci\n/);
});
