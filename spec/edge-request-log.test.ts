import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTelemetry } from '../lib/edge/telemetry.ts';
import { boundWarnings, LEFT_OUT, MAX_ALIKE_PER_SECOND } from '../lib/log.ts';
import type { Client } from '../lib/guard/address.ts';
import {
  createRequestLog,
  LINES_LEFT_OUT,
  MAX_GROUPS,
  REFUSED_ALIKE,
  type RequestLogSettings,
} from '../lib/edge/request-log.ts';
import { captureLog, specConfig, startApp, withHooks } from './_app.ts';
import { flood, post, send } from './_http.ts';
import { until } from './_until.ts';

const ONE: Client = { address: '127.0.0.1', key: '127.0.0.1' };
const ALL: RequestLogSettings = { requests: 'all', maxLinesPerSecond: 200 };

// A request log over a captured logger and a clock the test moves.
function setup(settings: RequestLogSettings = ALL, windowMs?: number) {
  const { log, lines } = captureLog();
  const clock = { t: 0 };
  const requestLog = createRequestLog({
    log,
    settings,
    now: () => clock.t,
    ...(windowMs === undefined ? {} : { windowMs }),
  });
  return { requestLog, lines, clock };
}

const client = (address: string): Client => ({ address, key: address });

test('createRequestLog() admits the first of alike refusals and counts the rest into one refused alike line', () => {
  const { requestLog, lines, clock } = setup();
  const admitted = [];
  for (let i = 0; i < 1000; i++) admitted.push(requestLog.admit(503, 'ERR_UNAVAILABLE', 'wake', ONE));
  assert.deepEqual(admitted.filter(Boolean).length, 1);
  assert.equal(admitted[0], true);
  clock.t = 4_200;
  requestLog.flush();
  assert.deepEqual(lines.map(({ time, ...rest }) => rest), [
    {
      level: 'info',
      msg: REFUSED_ALIKE,
      status: 503,
      code: 'ERR_UNAVAILABLE',
      hook: 'wake',
      client: '127.0.0.1',
      count: 999,
      seconds: 4,
    },
  ]);
});

test('createRequestLog() folds only refusals alike: another client, status, code, hook or signature failure gets its own line', () => {
  const { requestLog } = setup();
  assert.equal(requestLog.admit(401, 'ERR_UNAUTHORIZED', 'wake', ONE), true);
  assert.equal(requestLog.admit(401, 'ERR_UNAUTHORIZED', 'wake', client('127.0.0.2')), true);
  assert.equal(requestLog.admit(429, 'ERR_UNAUTHORIZED', 'wake', ONE), true);
  assert.equal(requestLog.admit(401, 'ERR_TOO_MANY_FAILURES', 'wake', ONE), true);
  assert.equal(requestLog.admit(401, 'ERR_UNAUTHORIZED', 'agent', ONE), true);
  assert.equal(
    requestLog.admit(401, 'ERR_UNAUTHORIZED', 'wake', ONE, {
      scheme: 'github',
      ok: false,
      why: 'bad-signature',
      reason: 'x',
    }),
    true,
  );
  assert.equal(requestLog.admit(401, 'ERR_UNAUTHORIZED', 'wake', ONE), false);
  // An IPv6 /64 is one client, as the limiter and the ledger count it.
  assert.equal(
    requestLog.admit(401, 'ERR_UNAUTHORIZED', 'wake', { address: '2001:db8::1', key: '2001:db8::/64' }),
    true,
  );
  assert.equal(
    requestLog.admit(401, 'ERR_UNAUTHORIZED', 'wake', { address: '2001:db8::2', key: '2001:db8::/64' }),
    false,
  );
});

test('createRequestLog() keeps a line for every accepted request, alike or not', () => {
  const { requestLog, lines } = setup();
  for (let i = 0; i < 50; i++) assert.equal(requestLog.admit(200, undefined, 'wake', ONE), true);
  requestLog.flush();
  assert.deepEqual(lines, []);
});

test('createRequestLog() with requests "refusals" admits no accepted request, and with "none" no request at all', () => {
  const refusals = setup({ requests: 'refusals', maxLinesPerSecond: 200 });
  assert.equal(refusals.requestLog.admit(200, undefined, 'wake', ONE), false);
  assert.equal(refusals.requestLog.admit(202, undefined, 'agent', ONE), false);
  assert.equal(refusals.requestLog.admit(400, 'ERR_INVALID_PAYLOAD', 'wake', ONE), true);
  const none = setup({ requests: 'none', maxLinesPerSecond: 200 });
  assert.equal(none.requestLog.admit(200, undefined, 'wake', ONE), false);
  for (let i = 0; i < 3; i++) assert.equal(none.requestLog.admit(401, 'ERR_UNAUTHORIZED', 'wake', ONE), false);
  none.requestLog.flush();
  assert.deepEqual(none.lines, []);
});

test('createRequestLog() admits at most maxLinesPerSecond lines a second and counts the rest by status and code', () => {
  const { requestLog, lines, clock } = setup({ requests: 'all', maxLinesPerSecond: 5 });
  let admitted = 0;
  for (let i = 0; i < 20; i++) if (requestLog.admit(200, undefined, 'wake', ONE)) admitted++;
  for (let i = 0; i < 7; i++) if (requestLog.admit(401, 'ERR_UNAUTHORIZED', 'wake', client(`10.0.0.${i}`))) admitted++;
  assert.equal(admitted, 5);
  // The next second has room again.
  clock.t = 1_000;
  assert.equal(requestLog.admit(200, undefined, 'wake', ONE), true);
  clock.t = 2_000;
  requestLog.flush();
  assert.deepEqual(lines.map(({ time, ...rest }) => rest), [
    { level: 'info', msg: LINES_LEFT_OUT, status: 200, count: 15, seconds: 2 },
    { level: 'info', msg: LINES_LEFT_OUT, status: 401, code: 'ERR_UNAUTHORIZED', count: 7, seconds: 2 },
  ]);
});

test('createRequestLog() writes the counts at the end of the window by itself, and a refusal after a quiet window gets its own line again', async () => {
  const { requestLog, lines, clock } = setup(ALL, 20);
  assert.equal(requestLog.admit(413, 'ERR_BODY_TOO_LARGE', 'wake', ONE), true);
  assert.equal(requestLog.admit(413, 'ERR_BODY_TOO_LARGE', 'wake', ONE), false);
  assert.equal(requestLog.admit(413, 'ERR_BODY_TOO_LARGE', 'wake', ONE), false);
  clock.t = 10_000;
  const summary = await until('the refused alike line', () => lines.find((l) => l['msg'] === REFUSED_ALIKE));
  assert.equal(summary['count'], 2);
  assert.equal(summary['seconds'], 10);
  // The window after it folded nothing: the group goes, and the next such refusal is news again.
  const ticks = lines.length;
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.equal(lines.length, ticks);
  assert.equal(requestLog.admit(413, 'ERR_BODY_TOO_LARGE', 'wake', ONE), true);
  requestLog.flush();
});

test('createRequestLog() still folds a flood that goes on: one count per window, each over its own window', async () => {
  const { requestLog, lines, clock } = setup(ALL, 20);
  requestLog.admit(503, 'ERR_UNAVAILABLE', 'wake', ONE);
  for (let window = 1; window <= 3; window++) {
    for (let i = 0; i < 100 * window; i++) assert.equal(requestLog.admit(503, 'ERR_UNAVAILABLE', 'wake', ONE), false);
    clock.t = window * 10_000;
    await until(`the count of window ${window}`, () => lines.length === window);
  }
  requestLog.flush();
  assert.deepEqual(
    lines.map((l) => [l['count'], l['seconds']]),
    [
      [100, 10],
      [200, 10],
      [300, 10],
    ],
  );
});

test('createRequestLog() applies new settings on configure() and keeps what it counted', () => {
  const { requestLog, lines } = setup();
  assert.equal(requestLog.admit(401, 'ERR_UNAUTHORIZED', 'wake', ONE), true);
  assert.equal(requestLog.admit(401, 'ERR_UNAUTHORIZED', 'wake', ONE), false);
  requestLog.configure({ requests: 'refusals', maxLinesPerSecond: 200 });
  assert.equal(requestLog.admit(200, undefined, 'wake', ONE), false);
  requestLog.flush();
  assert.equal(lines[0]?.['count'], 1);
});

test('createRequestLog() holds at most MAX_GROUPS groups: past them a refusal is not folded, only bounded, and still counted', () => {
  const { requestLog, lines } = setup({ requests: 'all', maxLinesPerSecond: 100_000 });
  let admitted = 0;
  for (let i = 0; i < MAX_GROUPS + 10; i++) {
    if (requestLog.admit(401, 'ERR_UNAUTHORIZED', 'wake', client(`c${i}`))) admitted++;
  }
  assert.equal(admitted, MAX_GROUPS + 10);
  // The ten beyond the table are not folded: each gets its line.
  const extra = client(`c${MAX_GROUPS + 1}`);
  assert.equal(requestLog.admit(401, 'ERR_UNAUTHORIZED', 'wake', extra), true);
  // Those in the table are.
  assert.equal(requestLog.admit(401, 'ERR_UNAUTHORIZED', 'wake', client('c0')), false);
  requestLog.flush();
  assert.deepEqual(
    lines.map((l) => [l['client'], l['count']]),
    [['c0', 1]],
  );
});

const TOKEN = 'spec-hook-token-0123456789abcdef';
const wrongToken = (extra = '') =>
  `POST /hooks/wake HTTP/1.1\r\nHost: spec\r\nAuthorization: Bearer wrong-token-0123456789abcdef\r\nContent-Length: 0\r\n${extra}\r\n`;

// Request lines, the counts of alike refusals and of lines left out: every request is in one of them.
function accounted(lines: Record<string, unknown>[]): { requestLines: number; total: number } {
  const requestLines = lines.filter((l) => l['msg'] === 'request').length;
  const counted = lines.filter((l) => l['msg'] === REFUSED_ALIKE || l['msg'] === LINES_LEFT_OUT).reduce(
    (sum, l) => sum + Number(l['count']),
    0,
  );
  return { requestLines, total: requestLines + counted };
}

test('a flood of 50,000 refusals from one client leaves a handful of lines whose counts add up to 50,000, and the metrics count every request', async (t) => {
  const h = await startApp(t, {
    token: TOKEN,
    raw: { gateway: { auth: { token: 'metrics-token-0123456789' } } },
    with: ({ store, app }) => ({
      telemetry: createTelemetry({ store, limiter: () => app().limiterStats(), queueDepth: () => 0 }),
    }),
  });
  const statuses = await flood(h.url, 50_000, () => wrongToken());
  // The default limiter: 20 failures answered 401, then the lockout's 429s.
  assert.deepEqual([...statuses].sort(), [
    [401, 20],
    [429, 49_980],
  ]);
  h.app.flushLog();
  const { requestLines, total } = accounted(h.lines);
  assert.equal(total, 50_000);
  assert.equal(requestLines, 2);
  assert.ok(h.lines.length <= 10, `${h.lines.length} lines`);
  assert.equal(h.lines.filter((l) => l['msg'] === 'client locked out').length, 1);
  const metrics = await send(h.url, '/metrics', { headers: { authorization: 'Bearer metrics-token-0123456789' } });
  assert.match(metrics.text, /^hooks_requests_total\{hook="wake",status="401"\} 20$/m);
  assert.match(metrics.text, /^hooks_requests_total\{hook="wake",status="429"\} 49980$/m);
});

test('a flood of 50,000 refusals from 1,000 addresses behind a trusted proxy writes at most maxLinesPerSecond request lines a second, lockouts bounded too, and the counts add up', async (t) => {
  const { log, lines } = captureLog();
  // A clock that stands still: the whole flood falls in one second, so the bound is exact whatever the machine's speed.
  const frozen = () => 0;
  const bounded = boundWarnings(log, { now: frozen });
  const h = await startApp(t, {
    token: TOKEN,
    raw: { gateway: { trustedProxies: ['127.0.0.1'] } },
    with: () => ({ log: bounded, now: frozen }),
  });
  const statuses = await flood(
    h.url,
    50_000,
    (i) => wrongToken(`X-Forwarded-For: 10.0.${i % 1000 >> 8}.${i % 1000 & 255}\r\n`),
  );
  assert.deepEqual([...statuses].sort(), [
    [401, 20_000],
    [429, 30_000],
  ]);
  h.app.flushLog();
  const { requestLines, total } = accounted(lines);
  assert.equal(total, 50_000);
  assert.equal(requestLines, 200);
  // Each address's first 429 and its count: past the bound, but their counts are in the left-out lines.
  assert.ok(lines.length <= 200 + 10 + 10, `${lines.length} lines`);
  const lockouts = lines.filter((l) => l['msg'] === 'client locked out').length;
  assert.equal(lockouts, MAX_ALIKE_PER_SECOND);
  bounded.flush();
  assert.deepEqual(
    lines.filter((l) => l['msg'] === LEFT_OUT).map(({ time, ...rest }) => rest),
    [{ level: 'warn', msg: LEFT_OUT, message: 'client locked out', count: 1000 - MAX_ALIKE_PER_SECOND, seconds: 1 }],
  );
});

test('a reload applies log.requests: "refusals" drops the lines of accepted requests, "none" every request line', async (t) => {
  const h = await startApp(t, { token: TOKEN });
  const wake = (token: string) =>
    post(h.url, '/hooks/wake', {
      headers: { authorization: `Bearer ${token}` },
      body: { text: 'x', mode: 'next-heartbeat' },
    });
  const requestLines = () => h.lines.filter((l) => l['msg'] === 'request').map((l) => l['status']);
  assert.equal((await wake(TOKEN)).status, 200);
  assert.deepEqual(requestLines(), [200]);
  h.app.reload(await specConfig(withHooks({ log: { requests: 'refusals' } }, TOKEN), h.dir));
  assert.equal((await wake(TOKEN)).status, 200);
  assert.equal((await wake('wrong-token-0123456789abcdef')).status, 401);
  assert.deepEqual(requestLines(), [200, 401]);
  h.app.reload(await specConfig(withHooks({ log: { requests: 'none' } }, TOKEN), h.dir));
  assert.equal((await wake(TOKEN)).status, 200);
  assert.equal((await wake('another-wrong-token-0123456789')).status, 401);
  h.app.flushLog();
  assert.deepEqual(requestLines(), [200, 401]);
  assert.equal(h.lines.length, 2);
});
