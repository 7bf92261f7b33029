import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import type { Config } from '../lib/config/types.ts';
import type { RunRecord } from '../lib/model/records.ts';
import { readRoots } from '../lib/store/journal/read.ts';
import { Ledger } from '../lib/store/ledger/ledger.ts';
import { readLedger } from '../lib/store/ledger/read.ts';
import { Claims } from '../lib/server/claims.ts';
import { replayOperation } from '../lib/server/replay.ts';
import { resolveOperation } from '../lib/server/resolve.ts';
import { needLocalRuns, retryOperation, type RetryResult } from '../lib/server/retry.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { silentLogger, specConfig, startApp, withHooks } from './_app.ts';
import { post } from './_http.ts';

// runs retry, the server's side: a failed run run again once, as a new run admitted by the policy
// of now, its link to the failed run and the root's record in the line that adds it; what is
// refused (not failed, retried already, replayed since, resolved, held, past the queue's bound).

const TOKEN = 'server-retry-token-0123456789ab';
const AUTH = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
const NOW = Date.parse('2026-05-01T12:00:00.000Z');

async function start(t: TestContext, raw: Record<string, unknown> = {}) {
  const dir = await tempDir(t, 'server-retry-');
  let config = await specConfig(withHooks(raw, TOKEN), dir);
  const ledger = await Ledger.open(join(dir, 'state'), { config: config.hooks.ledger });
  defer(t, () => ledger.close());
  const queued: RunRecord[] = [];
  const runs = { enqueue: (run: RunRecord) => void queued.push(run), depth: 0, depthOf: (_hook: string) => 0 };
  const h = await startApp(t, { token: TOKEN, dir, raw, with: () => ({ ledger, runs }) });
  const claims = new Claims();
  let n = 0;
  const retry = retryOperation({
    stateDir: h.state,
    ledger,
    store: h.store,
    runs,
    config: () => config,
    claims,
    newId: () => `retry-${++n}`,
    now: () => NOW,
  });
  const replay = replayOperation({ stateDir: h.state, ledger, app: h.app, store: h.store, claims, log: silentLogger });
  const resolve = resolveOperation({ stateDir: h.state, ledger, store: h.store, claims });
  /** A run accepted for request `requestId` on /hooks/agent, then ended `status`. */
  const failed = async (requestId: string, status: 'error' | 'timeout' | 'ok' = 'error') => {
    const answer = await post(h.url, '/hooks/agent', {
      headers: { ...AUTH, 'x-request-id': requestId },
      body: { message: `do ${requestId}`, deliver: false },
    });
    assert.equal(answer.status, 202, answer.text);
    const runId = answer.body['runId'] as string;
    await end(runId, status);
    return runId;
  };
  const end = (runId: string, status: 'error' | 'timeout' | 'ok') =>
    h.store.commit({
      runUpdates: [{ runId, status, finishedAt: new Date(NOW).toISOString(), error: 'model down' }],
    });
  const entry = async (requestId: string) => {
    await ledger.flush();
    return (await readLedger(h.state)).find((e) => e.requestId === requestId)!.id;
  };
  return {
    ...h,
    claims,
    queued,
    runs,
    failed,
    end,
    entry,
    replay,
    resolve,
    reconfigure: (next: Config) => void (config = next),
    retry: async (ids: unknown, check = false) => (await retry(check ? { ids, check } : { ids })).results,
  };
}

const said = (results: RetryResult[]) =>
  results.map((r) => (!r.ok ? `${r.code} ${r.error}` : 'check' in r ? `would retry ${r.id}` : `${r.id} as ${r.run}`));

test('retryOperation: a failed run runs again once, as a new run with its message, linked both ways in one line', async (t) => {
  const h = await start(t);
  const id = await h.failed('req-1');
  const queuedBefore = h.queued.length;
  assert.deepEqual(said(await h.retry([id], true)), [`would retry ${id}`], 'a check runs nothing');
  assert.equal(h.queued.length, queuedBefore);

  assert.deepEqual(said(await h.retry([id])), [`${id} as retry-1`]);
  const fresh = h.store.run('retry-1')!;
  const old = h.store.run(id)!;
  assert.deepEqual(
    [fresh.status, fresh.message, fresh.retryOf, fresh.requestId, fresh.hook, fresh.sessionKey],
    ['pending', old.message, id, 'req-1', 'agent', old.sessionKey],
  );
  assert.equal(old.retriedBy, 'retry-1');
  assert.equal(h.queued.at(-1)?.runId, 'retry-1', 'queued');
  const root = await h.entry('req-1');
  assert.deepEqual((await readRoots(h.state)).get(root)?.retries, [{
    run: id,
    as: 'retry-1',
    time: new Date(NOW).toISOString(),
  }]);

  // Once: again, and twice in one call, it is refused; the retry that failed is retried by naming it.
  assert.deepEqual(said(await h.retry([id])), [
    `ERR_NOT_RETRYABLE run ${id} was retried already, as retry-1 (pending)`,
  ]);
  await h.end('retry-1', 'timeout');
  assert.deepEqual(said(await h.retry([id, 'retry-1', 'retry-1'])), [
    `ERR_NOT_RETRYABLE run ${id} was retried already, as retry-1 (timeout); retry retry-1, which failed too`,
    'retry-1 as retry-2',
    'ERR_NOT_RETRYABLE run retry-1 was retried already, as retry-2 (pending)',
  ]);
  assert.equal((await readRoots(h.state)).get(root)?.retries?.length, 2, 'the chain kept on its root');
  const [resolved] = (await h.resolve({ ids: [root] })).results;
  assert.equal(resolved?.ok ? '' : resolved?.error, `entry ${root} is resolved already: its run was retried`);
});

test('retryOperation: the retry of a coalesced run says what it said: how many requests, and the latest message; no window of its own', async (t) => {
  const mapping = {
    id: 'pushes',
    match: { path: 'github' },
    messageTemplate: 'Push {{n}}',
    deliver: false,
    coalesce: { key: 'one', windowSeconds: 60 },
  };
  const h = await start(t, { hooks: { mappings: [mapping] } });
  const answers = [];
  for (const n of [1, 2, 3]) answers.push(await post(h.url, '/hooks/github', { headers: AUTH, body: { n } }));
  const id = answers[0]!.body['runId'] as string;
  assert.deepEqual(answers.map((a) => a.body['runId']), [id, id, id]);
  await h.end(id, 'error');
  assert.deepEqual(said(await h.retry([id])), [`${id} as retry-1`]);
  const fresh = h.store.run('retry-1')!;
  assert.match(fresh.message, /^This run stands for 3 requests[^\n]*\n\n[^]*Push 3/);
  assert.equal(fresh.coalesce, undefined, 'the retry runs when its turn comes, held by no window');
});

test('retryOperation: a run not failed or not found is refused, saying why', async (t) => {
  const h = await start(t);
  const ok = await h.failed('ok-1', 'ok');
  const answer = await post(h.url, '/hooks/agent', { headers: AUTH, body: { message: 'wait', deliver: false } });
  const pending = answer.body['runId'] as string;
  assert.deepEqual(said(await h.retry([ok, pending, 'nobody'])), [
    `ERR_NOT_RETRYABLE run ${ok} succeeded: only a run that ended error or timeout is retried`,
    `ERR_NOT_RETRYABLE run ${pending} has not finished (pending): only a run that ended error or timeout is retried`,
    'ERR_NOT_FOUND no run has the id "nobody" (it may have been trimmed: the newest finished runs are kept)',
  ]);
  await assert.rejects(h.retry([]), /ids: must be a non-empty list of run ids/);
  assert.deepEqual(await h.retry([], true), [], 'a check of no run asks only whether runs are retried here');
  await assert.rejects(h.retry(['']), /ids: must be a non-empty list of run ids/);
});

test("retryOperation: the policy of now admits the retry: an agent no longer allowed is refused with the rule, and the queue's bound holds", async (t) => {
  const h = await start(t);
  const id = await h.failed('policy-1');
  h.reconfigure(await specConfig(withHooks({ hooks: { allowedAgentIds: ['other'] } }, TOKEN), h.dir));
  assert.deepEqual(said(await h.retry([id])), [
    `ERR_NOT_ALLOWED run ${id}: agentId: agent "main" is not in hooks.allowedAgentIds`,
  ]);
  h.reconfigure(await specConfig(withHooks({ hooks: { maxQueuedRuns: 1 } }, TOKEN), h.dir));
  h.runs.depth = 1;
  assert.deepEqual(said(await h.retry([id])), [
    'ERR_UNAVAILABLE too many runs queued (hooks.maxQueuedRuns); retry later',
  ]);
  h.runs.depth = 0;
  // The run's hook's own bound too (here /agent's, hooks.agent.maxQueued).
  h.reconfigure(await specConfig(withHooks({ hooks: { agent: { maxQueued: 1 } } }, TOKEN), h.dir));
  h.runs.depthOf = (hook) => (hook === 'agent' ? 1 : 0);
  assert.deepEqual(said(await h.retry([id])), [
    'ERR_HOOK_BACKLOG too many runs of hook "agent" queued (its maxQueued, 1); retry later',
  ]);
  h.runs.depthOf = () => 0;
  assert.deepEqual(said(await h.retry([id])), [`${id} as retry-3`]);
  assert.equal(h.store.run(id)?.retriedBy, 'retry-3', 'a refusal changed nothing');
});

test("retryOperation: the retry's completion callback is decided again: a request's callbackUrl whose origin is no longer allowed is refused", async (t) => {
  const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  const hooks = (origins: string[]) => ({
    hooks: { onComplete: { url: 'http://127.0.0.1:9/default', secret }, callbackOrigins: origins },
  });
  const h = await start(t, hooks(['http://127.0.0.1:9']));
  const answer = await post(h.url, '/hooks/agent', {
    headers: { ...AUTH, 'x-request-id': 'cb-1' },
    body: { message: 'do cb', deliver: false, callbackUrl: 'http://127.0.0.1:9/mine' },
  });
  assert.equal(answer.status, 202, answer.text);
  const id = answer.body['runId'] as string;
  await h.end(id, 'error');
  const plain = await h.failed('cb-2');
  h.reconfigure(await specConfig(withHooks(hooks([]), TOKEN), h.dir));
  assert.deepEqual(said(await h.retry([id])), [
    `ERR_CALLBACK_ORIGIN run ${id}: callbackUrl: its origin is not one of hooks.callbackOrigins`,
  ]);
  assert.deepEqual(said(await h.retry([plain])), [`${plain} as retry-1`]);
  assert.equal(h.store.run('retry-1')?.callback?.url, 'http://127.0.0.1:9/default', 'hooks.onComplete of now');
  h.reconfigure(await specConfig(withHooks(hooks(['http://127.0.0.1:9']), TOKEN), h.dir));
  assert.deepEqual(said(await h.retry([id])), [`${id} as retry-2`]);
  assert.equal(h.store.run('retry-2')?.callback?.url, 'http://127.0.0.1:9/mine');
});

test('retryOperation: a run that named no callbackUrl takes hooks.onComplete of now, after its URL changed or it was removed', async (t) => {
  const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  const h = await start(t, { hooks: { onComplete: { url: 'http://127.0.0.1:9/old', secret } } });
  const first = await h.failed('default-1');
  const second = await h.failed('default-2');
  assert.equal(h.store.run(first)?.callback?.url, 'http://127.0.0.1:9/old');
  h.reconfigure(
    await specConfig(withHooks({ hooks: { onComplete: { url: 'http://127.0.0.1:9/new', secret } } }, TOKEN), h.dir),
  );
  assert.deepEqual(said(await h.retry([first])), [`${first} as retry-1`]);
  assert.equal(h.store.run('retry-1')?.callback?.url, 'http://127.0.0.1:9/new');
  h.reconfigure(await specConfig(withHooks({}, TOKEN), h.dir));
  assert.deepEqual(said(await h.retry([second])), [`${second} as retry-2`]);
  assert.equal(h.store.run('retry-2')?.callback, undefined, 'no callback is configured any more');
});

test('retryOperation: a session key the request chose is judged again by hooks.allowRequestSessionKey of now', async (t) => {
  const h = await start(t, { hooks: { allowRequestSessionKey: true } });
  const answer = await post(h.url, '/hooks/agent', {
    headers: AUTH,
    body: { message: 'keyed', deliver: false, sessionKey: 'hook:chosen' },
  });
  const id = answer.body['runId'] as string;
  assert.equal(h.store.run(id)?.requestKey, true);
  await h.end(id, 'error');
  const configured = await h.failed('configured-1');
  assert.equal(h.store.run(configured)?.requestKey, undefined, 'a key the request did not choose');
  h.reconfigure(await specConfig(withHooks({}, TOKEN), h.dir));
  assert.deepEqual(said(await h.retry([id, configured])), [
    `ERR_NOT_ALLOWED run ${id}: sessionKey: may not be chosen by the request while hooks.allowRequestSessionKey is false`,
    `${configured} as retry-1`,
  ]);
});

test('retryOperation: a claim held on the request (a replay or a retry running) refuses it; a retried request is not replayed, even forced', async (t) => {
  const h = await start(t);
  const id = await h.failed('claim-1');
  const root = await h.entry('claim-1');
  assert.ok(h.claims.take(root));
  assert.deepEqual(said(await h.retry([id])), [`ERR_NOT_RETRYABLE a replay or retry of entry ${root} runs now`]);
  assert.deepEqual(said(await h.retry([id], true)), [`ERR_NOT_RETRYABLE a replay or retry of entry ${root} runs now`]);
  h.claims.release(root);
  assert.deepEqual(said(await h.retry([id])), [`${id} as retry-1`]);

  const refusal =
    `a run of entry ${root} was retried (run ${id} as retry-1): its work goes on by runs retry, not by a replay`;
  for (const args of [{ ids: [root], force: true }, { ids: [root], dryRun: true }]) {
    const [result] = (await h.replay(args)).results;
    assert.deepEqual(result, { id: root, ok: false, code: 'ERR_NOT_REPLAYABLE', error: refusal });
  }
});

test('retryOperation: a run whose request was replayed since, or resolved by hand, is not retried', async (t) => {
  const h = await start(t);
  const replayedRun = await h.failed('replayed-1');
  const replayedRoot = await h.entry('replayed-1');
  const [replayed] = (await h.replay({ ids: [replayedRoot], force: true })).results;
  assert.ok(replayed?.ok);
  const [refused] = said(await h.retry([replayedRun]));
  assert.match(
    refused!,
    new RegExp(
      `^ERR_NOT_RETRYABLE the request of run ${replayedRun} \\(entry ${replayedRoot}\\) was replayed since, as [0-9a-f]{24} \\(202\\): retry that replay's run instead$`,
    ),
  );
  // The replay's own run is retried, and its root's record keeps it.
  const replayRun = 'outcome' in replayed! ? replayed.outcome.became?.runs?.[0] : undefined;
  assert.ok(replayRun !== undefined);
  await h.end(replayRun, 'error');
  assert.deepEqual(said(await h.retry([replayRun])), [`${replayRun} as retry-1`]);
  assert.equal((await readRoots(h.state)).get(replayedRoot)?.retries?.[0]?.run, replayRun);

  const resolvedRun = await h.failed('resolved-1');
  const resolvedRoot = await h.entry('resolved-1');
  await h.store.commit({ roots: [{ root: resolvedRoot, state: 'resolved', resolvedAt: 'then', time: 'then' }] });
  assert.deepEqual(said(await h.retry([resolvedRun])), [
    `ERR_NOT_RETRYABLE the request of run ${resolvedRun} (entry ${resolvedRoot}) was marked resolved by hand`,
  ]);
});

test('retryOperation: with no ledger entry of its request, the run itself is what is claimed', async (t) => {
  const h = await start(t, { hooks: { ledger: { enabled: false } } });
  const id = await h.failed('off-1');
  assert.ok(h.claims.take(`run:${id}`));
  assert.deepEqual(said(await h.retry([id])), [`ERR_NOT_RETRYABLE a replay or retry of run ${id} runs now`]);
  h.claims.release(`run:${id}`);
  assert.deepEqual(said(await h.retry([id])), [`${id} as retry-1`]);
  await h.end('retry-1', 'error');
  // The chain's first run names the claim of every retry in it.
  assert.ok(h.claims.take(`run:${id}`));
  assert.deepEqual(said(await h.retry(['retry-1'])), [`ERR_NOT_RETRYABLE a replay or retry of run retry-1 runs now`]);
  h.claims.release(`run:${id}`);
  assert.equal((await readRoots(h.state)).size, 0, 'no root without an entry');
});

test('needLocalRuns: forward mode has no local runs to retry or redeliver', () => {
  const forward = { hooks: { forward: { url: 'http://127.0.0.1:1' } } } as unknown as Config;
  assert.throws(
    () => needLocalRuns(forward, 'runs retry'),
    /runs retry needs local runs, and in forward mode \(hooks.forward\) the upstream gateway runs them/,
  );
  assert.doesNotThrow(() => needLocalRuns({ hooks: { forward: null } } as unknown as Config, 'runs retry'));
});
