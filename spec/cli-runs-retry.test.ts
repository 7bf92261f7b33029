import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { main } from '../lib/cli/main.ts';
import { describeRetryPlan, formatRetried, planRetry, withChecks } from '../lib/cli/runs-retry.ts';
import { formatRedelivered } from '../lib/cli/runs-redeliver.ts';
import { formatRun } from '../lib/cli/listing.ts';
import { REDELIVER_OP, RETRY_OP } from '../lib/control/operations.ts';
import type { RunSpec } from '../lib/model/actions.ts';
import type { RunRecord } from '../lib/model/records.ts';
import { Store } from '../lib/store/journal/store.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { startEcho } from './_control.ts';
import { captureIo } from './_io.ts';

// runs retry and runs redeliver, the commands: the plan read from the journal and judged by the
// server (here a control channel answering as the server would), --yes, and each result's line.

const spec = (runId: string, hook = 'ci'): RunSpec => ({
  runId,
  hook,
  name: hook,
  message: `do ${runId}`,
  sessionKey: 'hook:x',
  agentId: 'main',
  wakeMode: 'next-heartbeat',
  deliver: false,
  channel: 'last',
});

const record = (runId: string, status: RunRecord['status'], more: Partial<RunRecord> = {}): RunRecord => ({
  ...(spec(runId) as Omit<RunSpec, 'coalesce'>),
  status,
  acceptedAt: '2026-05-01T10:00:00.000Z',
  attempts: 1,
  ...more,
});

test('planRetry() names runs once, skips what is not a failure or was retried, and --failed keeps only failures not yet retried', () => {
  const runs = [
    record('a', 'error', { hook: 'ci', finishedAt: '2026-05-01T10:00:00.000Z' }),
    record('b', 'timeout', { hook: 'deploy', finishedAt: '2026-05-01T12:00:00.000Z' }),
    record('c', 'error', { retriedBy: 'd' }),
    record('d', 'ok'),
    record('e', 'running'),
  ];
  const named = planRetry(runs, { ids: ['a', 'a', 'c', 'd', 'e', 'zz'] });
  assert.deepEqual(named.run.map((r) => r.runId), ['a']);
  assert.deepEqual(named.skipped.map((s) => `${s.run.runId}: ${s.why}`), [
    'c: retried already, as d',
    'd: it succeeded',
    'e: it has not ended',
    'zz: no run has this id (it may have been trimmed)',
  ]);
  assert.equal(describeRetryPlan(named, 'named'), '5 runs named; will retry 1, skip 4:');
  assert.deepEqual(planRetry(runs, {}).run.map((r) => r.runId), ['a', 'b']);
  assert.deepEqual(planRetry(runs, { hook: 'deploy' }).run.map((r) => r.runId), ['b']);
  assert.deepEqual(planRetry(runs, { since: Date.parse('2026-05-01T11:00:00.000Z') }).run.map((r) => r.runId), ['b']);
  assert.equal(describeRetryPlan(planRetry([], {}), 'match'), '0 failed runs not yet retried match');
  assert.equal(describeRetryPlan(planRetry(runs, {}), 'match'), '2 failed runs not yet retried match; will retry 2:');

  const judged = withChecks(planRetry(runs, {}), [{ id: 'a', ok: true, check: true }, {
    id: 'b',
    ok: false,
    code: 'ERR_NOT_ALLOWED',
    error: 'run b: agentId: not allowed',
  }]);
  assert.deepEqual(judged.run.map((r) => r.runId), ['a']);
  assert.deepEqual(judged.skipped.map((s) => `${s.run.runId}: ${s.why}`), ['b: run b: agentId: not allowed']);
});

test('formatRetried(), formatRedelivered() and formatRun() say each outcome on one line, control characters escaped', () => {
  assert.equal(formatRetried({ id: 'a', ok: true, run: 'b', hook: 'ci' }), 'retried a as b (hook=ci)\n');
  assert.equal(formatRetried({ id: 'a', ok: true, check: true }), 'would retry a\n');
  assert.equal(formatRetried({ id: 'a', ok: false, code: 'X', error: 'no\x1b' }), 'not retried a: no\\x1b\n');
  assert.equal(
    formatRedelivered({
      id: 'a',
      ok: true,
      delivery: { status: 'delivered', channel: 'telegram', to: '1', messageIds: ['9'] },
    }),
    'redelivered a to telegram 1 (9)\n',
  );
  assert.equal(
    formatRedelivered({ id: 'a', ok: true, delivery: { status: 'failed', channel: 'telegram', reason: 'down' } }),
    'redelivery of a failed: down\n',
  );
  assert.equal(
    formatRedelivered({ id: 'a', ok: false, code: 'X', error: 'no reply' }),
    'not redelivered a: no reply\n',
  );
  const shown = formatRun(
    record('a', 'ok', {
      retryOf: 'z',
      retriedBy: 'b',
      delivery: { status: 'delivered', channel: 'telegram', to: '1', messageIds: [] },
      redeliveries: [{ time: 't', delivery: { status: 'delivered', channel: 'telegram', to: '1', messageIds: [] } }],
    }),
  );
  assert.match(shown, /delivery: delivered to telegram 1 \(redelivered 1x\)\n {4}retry of: z\n {4}retried as: b\n$/);
});

// A state directory with these runs in its journal, and a control channel answering in the server's place.
async function withServer(
  t: TestContext,
  runs: RunRecord[],
  answer: (args: { ids: string[]; check?: boolean }) => unknown,
) {
  const dir = await tempDir(t, 'cli-runs-retry-');
  const { store } = await Store.open(dir, { idempotencyTtlMs: 60_000 });
  defer(t, () => store.close());
  for (const run of runs) {
    const { status: _status, acceptedAt: _at, attempts: _attempts, ...spec } = run;
    await store.commit({ runs: [spec] });
    await store.commit({ runUpdates: [{ runId: run.runId, status: run.status }] });
  }
  const asked: { op: string; args: { ids: string[]; check?: boolean } }[] = [];
  const handler = (op: string) => (args: unknown) => {
    asked.push({ op, args: args as { ids: string[]; check?: boolean } });
    return Promise.resolve(answer(args as { ids: string[]; check?: boolean }));
  };
  await startEcho(t, { [RETRY_OP]: handler(RETRY_OP), [REDELIVER_OP]: handler(REDELIVER_OP) }, { dir });
  const cli = async (...args: string[]) => {
    const { io, out } = captureIo({});
    const code = await main(['runs', ...args, '--state-dir', dir], io);
    return { code, ...out };
  };
  return { dir, asked, cli };
}

test('runs retry --failed: the plan as the server judges it, nothing retried without --yes, then each run once', async (t) => {
  const s = await withServer(t, [record('a', 'error'), record('b', 'timeout'), record('c', 'ok')], (args) => ({
    results: args.ids.map((id) =>
      id === 'b'
        ? { id, ok: false, code: 'ERR_NOT_ALLOWED', error: 'run b: model: not allowed' }
        : args.check === true
        ? { id, ok: true, check: true }
        : { id, ok: true, run: `${id}2`, hook: 'ci' }
    ),
  }));
  const plan = await s.cli('retry', '--failed');
  assert.equal(plan.code, 0, plan.stderr);
  assert.equal(
    plan.stdout,
    '2 failed runs not yet retried match; will retry 1, skip 1:\n  a  error  hook=ci agent=main\nskipped b: run b: model: not allowed\n',
  );
  assert.match(plan.stderr, /nothing retried; add --yes to retry it\n$/);
  const done = await s.cli('retry', '--failed', '--yes');
  assert.equal(done.code, 0, done.stderr);
  assert.match(done.stdout, /\nretried a as a2 \(hook=ci\)\n$/);
  assert.deepEqual(s.asked.map((a) => [a.op, a.args.ids, a.args.check ?? false]), [
    [RETRY_OP, ['a', 'b'], true],
    [RETRY_OP, ['a', 'b'], true],
    [RETRY_OP, ['a'], false],
  ]);
  const json = await s.cli('retry', 'a', '--yes', '--json');
  assert.match(json.stdout, /\n\{"id":"a","ok":true,"run":"a2","hook":"ci"\}\n$/);
  const refused = await s.cli('retry', 'b', '--yes');
  assert.equal(refused.code, 1, 'a run named and skipped is a failure');
});

test('runs redeliver: each result on a line; a refusal or an undelivered reply exits 1', async (t) => {
  const s = await withServer(t, [], (args) => ({
    results: args.ids.map((id) =>
      id === 'ok'
        ? { id, ok: true, delivery: { status: 'delivered', channel: 'telegram', to: '5', messageIds: ['7'] } }
        : { id, ok: false, code: 'ERR_NOT_RETRYABLE', error: `run ${id} has no reply to send` }
    ),
  }));
  const ok = await s.cli('redeliver', 'ok');
  assert.deepEqual([ok.code, ok.stdout], [0, 'redelivered ok to telegram 5 (7)\n']);
  const no = await s.cli('redeliver', 'ok', 'bad', '--json');
  assert.equal(no.code, 1);
  assert.match(no.stdout, /"ok":false,"code":"ERR_NOT_RETRYABLE"/);
});

test('runs: usage errors, and with no server the plan is what the journal says and nothing is retried', async (t) => {
  const dir = await tempDir(t, 'cli-runs-noserver-');
  const { store } = await Store.open(dir, { idempotencyTtlMs: 60_000 });
  defer(t, () => store.close());
  await store.commit({ runs: [spec('a')] });
  await store.commit({ runUpdates: [{ runId: 'a', status: 'error' }] });
  const cli = async (...args: string[]) => {
    const { io, out } = captureIo({});
    return { code: await main(['runs', ...args, '--state-dir', dir], io), ...out };
  };
  const none = await cli('retry', '--failed', '--yes');
  assert.equal(none.code, 1);
  assert.match(none.stdout, /^1 failed run not yet retried matches; will retry 1:\n {2}a {2}error/);
  assert.match(none.stderr, /no running server found for state directory .*; retry is done by the running server/);
  const redeliver = await cli('redeliver', 'a');
  assert.equal(redeliver.code, 1);
  assert.match(redeliver.stderr, /redelivery is done by the running server/);
  for (
    const [args, said] of [
      [['retry'], /retry needs run ids, or --failed/],
      [['retry', 'a', '--failed'], /retry takes run ids or --failed with its filters, not both/],
      [['retry', '--failed', '--since', 'soon'], /--since must be an ISO time/],
      [['redeliver'], /redeliver needs run ids/],
      [['again'], /unknown subcommand "again" \(known: retry, redeliver\)/],
      [['--failed'], /--failed is an option of runs retry/],
    ] as const
  ) {
    const out = await cli(...args);
    assert.equal(out.code, 2, args.join(' '));
    assert.match(out.stderr, said);
  }
});
