// Reloads in-process: the coalescing coordinator, what a reload changed, and the control
// channel's operations over plain parts (the real processes are in cli-reload.test.ts and cli-status.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { builtOnFirstCall, serverOperations, serverStatus, type OperationParts } from '../lib/cli/operations.ts';
import { reloadChanges, secretDigests } from '../lib/cli/reload-changes.ts';
import { coalescedReloads, type ReloadVerdict } from '../lib/cli/reloads.ts';
import { formatStatus } from '../lib/cli/status.ts';
import { ErrorCode, HttpError } from '../lib/errors.ts';
import { specConfig } from './_app.ts';
import { tempDir } from './_dir.ts';

const NO_CHANGES = { hooks: { added: [], removed: [] }, mappings: { added: [], removed: [] }, secrets: { added: [], removed: [], changed: [] } };

/** A reload run that waits until the test lets it finish, counting its starts. */
function gatedRun() {
  const gates: { finish: (verdict?: Partial<ReloadVerdict>) => void; signal: AbortSignal }[] = [];
  const run = (signal: AbortSignal) =>
    new Promise<ReloadVerdict>((resolve) => {
      const n = gates.length + 1;
      gates.push({ signal, finish: (v = {}) => resolve({ outcome: 'applied', at: `run ${n}`, file: null, changes: NO_CHANGES, ...v } as ReloadVerdict) });
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
  assert.deepEqual(dropped.outcome === 'failed' && dropped.problems, ['the server is stopping; the reload was not carried out']);
  assert.equal(gates[0]!.signal.aborted, true);
  gates[0]!.finish();
  assert.equal((await running).outcome, 'failed', 'what an aborted reload came to is not its verdict');
  assert.equal(reloads.last(), null);
  assert.equal((await reloads.request()).outcome, 'failed');
  assert.equal(gates.length, 1, 'nothing ran after the stop');
});

test('coalescedReloads() turns a reload that throws into a failed verdict and goes on', async () => {
  let calls = 0;
  const reloads = coalescedReloads(() => (++calls === 1 ? Promise.reject(new Error('boom')) : Promise.resolve({ outcome: 'applied', at: 'x', file: null, changes: NO_CHANGES })), () => 0);
  const failed = await reloads.request();
  assert.deepEqual(failed, { outcome: 'failed', at: new Date(0).toISOString(), file: null, problems: ['Error: boom'] });
  assert.equal((await reloads.request()).outcome, 'applied');
});

test('reloadChanges() names endpoints, mapping ids and secret key paths that came, went or changed, and no value', async (t) => {
  const dir = await tempDir(t);
  const gh = { id: 'gh', match: { path: 'github' }, action: 'wake', textTemplate: 'x', signature: { scheme: 'github', secret: 'gh-secret-0123456789' } };
  const src = { id: 'by-source', match: { source: 'ci' }, action: 'wake', textTemplate: 'x' };
  const before = await specConfig({ hooks: { enabled: true, token: 'token-one-0123456789abcdef', mappings: [gh, src] }, channels: { telegram: { botToken: '123:abc' } } }, dir);
  const after = await specConfig({ hooks: { enabled: true, path: '/in', token: 'token-two-0123456789abcdef', mappings: [src] }, channels: { telegram: { botToken: '123:abc', apiBase: 'http://127.0.0.1:1' } } }, dir);
  const changes = reloadChanges(before, after);
  assert.deepEqual(changes, {
    hooks: { added: ['/in/wake', '/in/agent'], removed: ['/hooks/wake', '/hooks/agent', '/hooks/github'] },
    mappings: { added: [], removed: ['gh'] },
    secrets: { added: [], removed: ['hooks.mappings[gh].signature.secrets[0]'], changed: ['hooks.token'] },
  });
  assert.ok(!JSON.stringify(changes).match(/token-one|token-two|gh-secret|123:abc/));
  assert.deepEqual([...secretDigests(before).keys()].sort(), ['channels.telegram.botToken', 'hooks.mappings[gh].signature.secrets[0]', 'hooks.token']);
  const disabled = await specConfig({ hooks: { enabled: false } }, dir);
  assert.deepEqual(reloadChanges(after, disabled).hooks, { added: [], removed: ['/in/wake', '/in/agent'] });
});

function parts(over: Partial<OperationParts> = {}): OperationParts {
  return {
    pid: 4242,
    startedAt: Date.parse('2026-01-01T00:00:00Z'),
    now: () => Date.parse('2026-01-01T01:02:03Z'),
    stateDir: '/var/lib/hooks-ingress',
    url: () => 'http://127.0.0.1:8789',
    store: { backlog: () => ({ events: 3, bytes: 120 }), outboxCounts: () => ({ pending: 1, sent: 5, dead: 2 }), stats: () => ({ idempotencyKeys: 0, runs: 0, events: 0, journalBytes: 999, fsyncMs: 0, flushes: 0, compactionFailures: 0 }) },
    reload: () => Promise.resolve({ outcome: 'applied', at: 'now', file: null, changes: NO_CHANGES }),
    lastReload: () => null,
    reloading: () => ({ running: false, pending: false, requests: 0 }),
    retryOutbox: null,
    ...over,
  };
}

test('serverStatus() reports pid, uptime, address, state, backlog, outbox (null outside forward mode), journal, ledger (null) and the last reload', async () => {
  assert.deepEqual(serverStatus(parts()), {
    pid: 4242,
    startedAt: '2026-01-01T00:00:00.000Z',
    uptimeSeconds: 3723,
    url: 'http://127.0.0.1:8789',
    stateDir: '/var/lib/hooks-ingress',
    backlog: { events: 3, bytes: 120 },
    outbox: null,
    journalBytes: 999,
    ledger: null,
    lastReload: null,
    reloading: { running: false, pending: false, requests: 0 },
  });
  const forward = serverStatus(parts({ retryOutbox: () => Promise.resolve({ retried: [], notRetryable: [] }) }));
  assert.deepEqual(forward.outbox, { pending: 1, sent: 5, dead: 2 });
});

test('formatStatus() prints one line per item for a person', () => {
  const refused: ReloadVerdict = { outcome: 'refused', at: '2026-01-01T01:00:00.000Z', file: '/etc/c.json', problems: ['gateway.auth.token: environment variable X is not set'] };
  const text = formatStatus(serverStatus(parts({ lastReload: () => refused, reloading: () => ({ running: true, pending: true, requests: 3 }), retryOutbox: () => Promise.resolve({ retried: [], notRetryable: [] }) })));
  assert.equal(
    text,
    'running:     pid 4242, up 1h 2m (since 2026-01-01T00:00:00.000Z)\n' +
      'listening:   http://127.0.0.1:8789\n' +
      'state:       /var/lib/hooks-ingress\n' +
      'backlog:     3 events not yet read by a heartbeat, 120 bytes\n' +
      'outbox:      1 pending, 5 sent, 2 dead\n' +
      'journal:     999 bytes\n' +
      'ledger:      none\n' +
      'last reload: refused at 2026-01-01T01:00:00.000Z: gateway.auth.token: environment variable X is not set (one running now, another waiting)\n',
  );
  const applied: ReloadVerdict = { outcome: 'applied', at: 'T', file: null, changes: { ...NO_CHANGES, mappings: { added: ['ci'], removed: [] } } };
  const fresh = formatStatus(serverStatus(parts({ now: () => Date.parse('2026-01-03T05:00:09Z'), lastReload: () => applied })));
  assert.match(fresh, /^running: {5}pid 4242, up 2d 5h /);
  assert.match(fresh, /\nledger: {6}none\nlast reload: applied at T: mappings added: ci\n$/);
  assert.match(formatStatus(serverStatus(parts({ now: () => Date.parse('2026-01-01T00:04:10Z') }))), /up 4m 10s .*\n[\s\S]*last reload: none since the start\n$/);
  assert.match(formatStatus(serverStatus(parts({ now: () => Date.parse('2026-01-01T00:00:12Z'), lastReload: () => ({ ...applied, changes: NO_CHANGES }) }))), /up 12s [\s\S]*applied at T \(no hook, mapping or secret changed\)\n$/);
});

test('serverOperations(): reload answers the verdict; outbox.retry checks its args and needs forward mode', async () => {
  const asked: unknown[] = [];
  const ops = serverOperations(parts({ retryOutbox: (request) => (asked.push(request), Promise.resolve({ retried: ['a'], notRetryable: [] })) }));
  assert.deepEqual(Object.keys(ops).sort(), ['outbox.retry', 'reload', 'status']);
  assert.equal(((await ops['reload']!(null)) as ReloadVerdict).outcome, 'applied');
  assert.deepEqual(await ops['outbox.retry']!({ ids: ['a'] }), { retried: ['a'], notRetryable: [] });
  await ops['outbox.retry']!({ dead: true });
  assert.deepEqual(asked, [{ ids: ['a'] }, { dead: true }]);
  for (const bad of [null, {}, { ids: [] }, { ids: [1] }, { ids: [''] }, { dead: false }, { dead: true, ids: ['a'] }]) {
    await assert.rejects(async () => ops['outbox.retry']!(bad), (error: unknown) => error instanceof HttpError && error.code === ErrorCode.ControlBadRequest, JSON.stringify(bad));
  }
  const off = serverOperations(parts());
  await assert.rejects(async () => off['outbox.retry']!({ dead: true }), { message: 'the server does not run in forward mode (hooks.forward is not set)' });
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
