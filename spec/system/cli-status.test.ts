// `hooks-ingress status` against a real server process, and with none running; then formatStatus()
// over plain parts.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { serverStatus } from '../../lib/control/operations.ts';
import type { ReloadVerdict } from '../../lib/server/reloads.ts';
import { formatStatus } from '../../lib/cli/status.ts';
import { configFile, runCli, spawnServer, stopAfter } from '../_cli.ts';
import { tempDir } from '../_dir.ts';
import { post } from '../_http.ts';
import { NO_CHANGES, operationParts as parts } from '../_operations.ts';
import { until } from '../_until.ts';

const TOKEN = 'status-spec-token-0123456789abcdef';

// Its text form with no server is the control channel's (spec/system/cli-control.test.ts).
test('hooks-ingress status --json with no server running exits 1 and says so', async (t) => {
  const dir = await tempDir(t, 'status-');
  const json = await runCli(['status', '--json', '--state-dir', dir]);
  assert.equal(json.code, 1);
  assert.deepEqual(JSON.parse(json.stdout), {
    running: false,
    stateDir: dir,
    why: `no running server found for state directory ${dir}`,
  });
});

test('hooks-ingress status shows the running server: pid, uptime, address, state, backlog, outbox, ledger and the last reload', async (t) => {
  const { dir, config } = await configFile(t, { hooks: { enabled: true, token: TOKEN } }, 'status-');
  const state = join(dir, 'state');
  const server = await spawnServer(['--config', config, '--port', '0', '--state-dir', state]);
  stopAfter(t, server);
  const first = await runCli(['status', '--json', '--state-dir', state]);
  assert.equal(first.code, 0, first.stderr);
  const status = JSON.parse(first.stdout) as Record<string, unknown>;
  assert.equal(status['running'], true);
  assert.equal(status['pid'], server.child.pid);
  assert.equal(status['url'], server.url);
  assert.equal(status['stateDir'], state);
  assert.equal(typeof status['uptimeSeconds'], 'number');
  assert.deepEqual(status['backlog'], { events: 0, bytes: 0 });
  assert.equal(status['outbox'], null, 'not in forward mode');
  assert.deepEqual(status['ledger'], { entries: 0, bytes: 0 }, 'the request ledger, empty');
  assert.equal(status['lastReload'], null);
  const idle = { running: 0, queued: 0, concurrency: null, maxQueued: null, coalescing: 0, coalesce: null };
  assert.deepEqual(status['hooks'], [{ hook: 'agent', ...idle }, { hook: 'wake', ...idle }], 'each hook, idle');

  const wake = await post(server.url, '/hooks/wake', {
    headers: { authorization: `Bearer ${TOKEN}` },
    body: { text: 'hello', mode: 'next-heartbeat' },
  });
  assert.equal(wake.status, 200, wake.text);
  process.kill(server.child.pid!, 'SIGHUP');
  const after = await until('the reload verdict in the status', async () => {
    const s = JSON.parse((await runCli(['status', '--json', '--state-dir', state])).stdout) as Record<string, unknown>;
    return s['lastReload'] !== null ? s : null;
  });
  assert.deepEqual(after['backlog'], { events: 1, bytes: 5 });
  assert.equal((after['lastReload'] as { outcome: string }).outcome, 'applied');

  const text = await runCli(['status', '--state-dir', state]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, new RegExp(`^running: {5}pid ${server.child.pid}, up \\d+s \\(since [0-9T:.Z-]+\\)\\n`));
  assert.match(
    text.stdout,
    new RegExp(
      `\\nlistening: {3}${server.url}\\nstate: {7}${state}\\nbacklog: {5}1 event not yet read by a heartbeat, 5 bytes\\noutbox: {6}off \\(not in forward mode\\)\\n`,
    ),
  );
  assert.match(
    text.stdout,
    /\nledger: {6}\d+ entries, \d+ bytes\nlast reload: applied at \S+ \(no hook, mapping or secret changed\)\nhooks: {7}all 2 hooks idle, no control set\n$/,
  );
});

test('formatStatus() prints one line per item for a person', () => {
  const refused: ReloadVerdict = {
    outcome: 'refused',
    at: '2026-01-01T01:00:00.000Z',
    file: '/etc/c.json',
    problems: ['gateway.auth.token: environment variable X is not set'],
  };
  const text = formatStatus(
    serverStatus(parts({
      lastReload: () => refused,
      reloading: () => ({ running: true, pending: true, requests: 3 }),
      retryOutbox: () => Promise.resolve({ retried: [], notRetryable: [] }),
    })),
  );
  assert.equal(
    text,
    'running:     pid 4242, up 1h 2m (since 2026-01-01T00:00:00.000Z)\n' +
      'listening:   http://127.0.0.1:8789\n' +
      'state:       /var/lib/hooks-ingress\n' +
      'backlog:     3 events not yet read by a heartbeat, 120 bytes\n' +
      'outbox:      1 pending, 5 sent, 2 dead\n' +
      'callbacks:   0 pending, 3 sent, 1 dead\n' +
      'journal:     999 bytes\n' +
      'ledger:      none\n' +
      'last reload: refused at 2026-01-01T01:00:00.000Z: gateway.auth.token: environment variable X is not set (one running now, another waiting)\n' +
      'hooks:       unknown\n',
  );
  const applied: ReloadVerdict = {
    outcome: 'applied',
    at: 'T',
    file: null,
    changes: { ...NO_CHANGES, mappings: { added: ['ci'], removed: [], changed: [] } },
  };
  const fresh = formatStatus(
    serverStatus(parts({ now: () => Date.parse('2026-01-03T05:00:09Z'), lastReload: () => applied })),
  );
  assert.match(fresh, /^running: {5}pid 4242, up 2d 5h /);
  assert.match(fresh, /\nledger: {6}none\nlast reload: applied at T: mappings added: ci\nhooks: {7}unknown\n$/);
  assert.match(
    formatStatus(serverStatus(parts({ now: () => Date.parse('2026-01-01T00:04:10Z') }))),
    /up 4m 10s .*\n[\s\S]*last reload: none since the start\n/,
  );
  assert.match(
    formatStatus(serverStatus(parts({
      now: () => Date.parse('2026-01-01T00:00:12Z'),
      lastReload: () => ({ ...applied, changes: NO_CHANGES }),
    }))),
    /up 12s [\s\S]*applied at T \(no hook, mapping or secret changed\)\n/,
  );
  const lane = { concurrency: null, maxQueued: null };
  const busy = formatStatus(serverStatus(parts({
    hooks: () => [
      { hook: 'agent', running: 2, queued: 0, ...lane },
      { hook: 'wake', running: 0, queued: 0, ...lane },
      { hook: 'ci\u001b[2J', running: 1, queued: 3, concurrency: 1, maxQueued: 20 },
    ],
  })));
  assert.match(
    busy,
    /\nhooks: {7}agent: 2 running\n {13}ci\\x1b\[2J: 1 running, 3 queued \(concurrency 1, maxQueued 20\)\n {13}1 other hook idle, no control set\n$/,
  );
  // Each hook with a rate limit or a budget: one line.
  const limited = formatStatus(serverStatus(parts({
    limits: () => [
      { hook: 'wake', limitedToday: 4, overBudgetToday: 0 },
      {
        hook: 'ci',
        limitedToday: 0,
        overBudgetToday: 2,
        budget: { day: '2026-01-01', used: 40, runsPerDay: 40, waiting: 2, timeZone: 'Europe/Berlin' },
      },
    ],
  })));
  assert.match(
    limited,
    /\nlimits: {6}wake: 4 limited today\nlimits: {6}ci: 0 limited today, budget 40\/40 used for 2026-01-01 \(Europe\/Berlin\), 2 waiting for the next day, 2 over it today\n$/,
  );
});
