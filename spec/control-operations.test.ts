// The control channel's operations over plain parts (the real processes are in cli-reload.test.ts
// and cli-status.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { builtOnFirstCall, serverOperations, serverStatus } from '../lib/control/operations.ts';
import type { ReloadVerdict } from '../lib/server/reloads.ts';
import { ErrorCode, HttpError } from '../lib/errors.ts';
import { operationParts as parts } from './_operations.ts';

test('serverStatus() reports pid, uptime, address, state, backlog, outbox (null outside forward mode), callbacks, journal, ledger (null) and the last reload', async () => {
  assert.deepEqual(serverStatus(parts()), {
    pid: 4242,
    startedAt: '2026-01-01T00:00:00.000Z',
    uptimeSeconds: 3723,
    url: 'http://127.0.0.1:8789',
    stateDir: '/var/lib/hooks-ingress',
    backlog: { events: 3, bytes: 120 },
    outbox: null,
    callbacks: { pending: 0, sent: 3, dead: 1 },
    journalBytes: 999,
    ledger: null,
    lastReload: null,
    reloading: { running: false, pending: false, requests: 0 },
    hooks: null,
    limits: null,
  });
  const hooks = [{ hook: 'agent', running: 1, queued: 2, concurrency: 1, maxQueued: null }];
  assert.deepEqual(serverStatus(parts({ hooks: () => hooks })).hooks, hooks);
  const forward = serverStatus(parts({ retryOutbox: () => Promise.resolve({ retried: [], notRetryable: [] }) }));
  assert.deepEqual(forward.outbox, { pending: 1, sent: 5, dead: 2, dropped: 0 });
});

test('serverOperations(): reload answers the verdict; outbox.retry checks its args and needs forward mode', async () => {
  const asked: unknown[] = [];
  const ops = serverOperations(
    parts({ retryOutbox: (request) => (asked.push(request), Promise.resolve({ retried: ['a'], notRetryable: [] })) }),
  );
  assert.deepEqual(Object.keys(ops).sort(), ['outbox.retry', 'reload', 'status']);
  assert.equal(((await ops['reload']!(null)) as ReloadVerdict).outcome, 'applied');
  assert.deepEqual(await ops['outbox.retry']!({ ids: ['a'] }), { retried: ['a'], notRetryable: [] });
  await ops['outbox.retry']!({ dead: true });
  assert.deepEqual(asked, [{ ids: ['a'] }, { dead: true }]);
  for (const bad of [null, {}, { ids: [] }, { ids: [1] }, { ids: [''] }, { dead: false }, { dead: true, ids: ['a'] }]) {
    await assert.rejects(
      async () => ops['outbox.retry']!(bad),
      (error: unknown) => error instanceof HttpError && error.code === ErrorCode.ControlBadRequest,
      JSON.stringify(bad),
    );
  }
  const off = serverOperations(parts());
  await assert.rejects(async () => off['outbox.retry']!({ dead: true }), {
    message: 'the server does not run in forward mode (hooks.forward is not set)',
  });
});

test('builtOnFirstCall(): the handler is built at the first call, once, and serves every call after it', async () => {
  let builds = 0;
  const calls: unknown[] = [];
  const op = builtOnFirstCall(async () => {
    builds++;
    return async (args) => (calls.push(args), `done ${String(args)}`);
  });
  assert.equal(builds, 0);
  assert.deepEqual(await Promise.all([op(1), op(2)]), ['done 1', 'done 2']);
  assert.equal(await op(3), 'done 3');
  assert.equal(builds, 1);
  assert.deepEqual(calls, [1, 2, 3]);
});

test('builtOnFirstCall(): a build that failed (its module could not be read) is tried again at the next call', async () => {
  let builds = 0;
  const op = builtOnFirstCall(async () => {
    if (++builds === 1) throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
    return async () => 'done';
  });
  await assert.rejects(op(1), { code: 'EMFILE' });
  assert.equal(await op(2), 'done');
  assert.equal(await op(3), 'done');
  assert.equal(builds, 2);
});

test('serverOperations(): status waits until what it reads is settled (the ledger has counted what an earlier process left)', async () => {
  let entries = 0;
  let settle = () => {};
  const settled = new Promise<void>((resolve) => (settle = resolve));
  const ops = serverOperations(parts({ ledger: () => ({ entries, bytes: entries * 100 }), settled: () => settled }));
  const asked = ops['status']!(null) as Promise<{ ledger: unknown }>;
  entries = 7;
  settle();
  assert.deepEqual((await asked).ledger, { entries: 7, bytes: 700 });
});
