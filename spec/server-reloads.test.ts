// Reloads in-process: the coalescing coordinator (the real processes are in cli-reload.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { coalescedReloads, type ReloadVerdict } from '../lib/server/reloads.ts';
import { NO_CHANGES } from './_operations.ts';

/** A reload run that waits until the test lets it finish, counting its starts. */
function gatedRun() {
  const gates: { finish: (verdict?: Partial<ReloadVerdict>) => void; signal: AbortSignal }[] = [];
  const run = (signal: AbortSignal) =>
    new Promise<ReloadVerdict>((resolve) => {
      const n = gates.length + 1;
      gates.push({
        signal,
        finish: (v = {}) =>
          resolve({ outcome: 'applied', at: `run ${n}`, file: null, changes: NO_CHANGES, ...v } as ReloadVerdict),
      });
    });
  return { run, gates };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

test('coalescedReloads() runs at most one reload and one waiting: 100 requests during a run make one more run, and they share its verdict', async () => {
  const { run, gates } = gatedRun();
  const reloads = coalescedReloads(run);
  const first = reloads.request();
  const rest = Array.from({ length: 100 }, () => reloads.request());
  await turn();
  assert.equal(gates.length, 1);
  assert.deepEqual(reloads.state(), { running: true, pending: true, requests: 101 });
  gates[0]!.finish();
  assert.equal((await first).at, 'run 1');
  await turn();
  assert.equal(gates.length, 2, 'the waiting reload started after the running one');
  assert.deepEqual(reloads.state(), { running: true, pending: false, requests: 100 });
  gates[1]!.finish();
  const verdicts = await Promise.all(rest);
  assert.ok(verdicts.every((v) => v.at === 'run 2'));
  assert.equal(gates.length, 2);
  assert.equal(reloads.last()?.at, 'run 2');
  assert.deepEqual(reloads.state(), { running: false, pending: false, requests: 0 });
});

test('coalescedReloads() never hands a request the verdict of a reload that was already running when it came', async () => {
  const { run, gates } = gatedRun();
  const reloads = coalescedReloads(run);
  void reloads.request();
  await turn();
  const late = reloads.request();
  gates[0]!.finish({ outcome: 'refused', problems: ['read before the edit'] } as Partial<ReloadVerdict>);
  await turn();
  gates[1]!.finish();
  assert.equal((await late).at, 'run 2');
  assert.equal((await late).outcome, 'applied');
});

test('coalescedReloads().stop() drops the waiting reload at once, aborts the running one, and refuses later requests', async () => {
  const { run, gates } = gatedRun();
  const reloads = coalescedReloads(run, () => 0);
  const running = reloads.request();
  const waiting = reloads.request();
  await turn();
  reloads.stop();
  const dropped = await waiting;
  assert.equal(dropped.outcome, 'failed');
  assert.deepEqual(dropped.outcome === 'failed' && dropped.problems, [
    'the server is stopping; the reload was not carried out',
  ]);
  assert.equal(gates[0]!.signal.aborted, true);
  gates[0]!.finish();
  assert.equal((await running).outcome, 'failed', 'what an aborted reload came to is not its verdict');
  assert.equal(reloads.last(), null);
  assert.equal((await reloads.request()).outcome, 'failed');
  assert.equal(gates.length, 1, 'nothing ran after the stop');
});

test('coalescedReloads() turns a reload that throws into a failed verdict and goes on', async () => {
  let calls = 0;
  const reloads = coalescedReloads(
    () => (++calls === 1
      ? Promise.reject(new Error('boom'))
      : Promise.resolve({ outcome: 'applied', at: 'x', file: null, changes: NO_CHANGES })),
    () => 0,
  );
  const failed = await reloads.request();
  assert.deepEqual(failed, { outcome: 'failed', at: new Date(0).toISOString(), file: null, problems: ['Error: boom'] });
  assert.equal((await reloads.request()).outcome, 'applied');
});
