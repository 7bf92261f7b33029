import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DeliveryRequest } from '../lib/delivery/adapter.ts';
import type { AlertsConfig } from '../lib/model/alerts.ts';
import { ALERT_KINDS, failureCode } from '../lib/model/alerts.ts';
import type { DeliveryOutcome } from '../lib/model/records.ts';
import { Alerter } from '../lib/runtime/alerts.ts';
import { captureLog } from './_app.ts';

const CONFIG: AlertsConfig = {
  channel: 'telegram',
  to: '4242',
  on: ALERT_KINDS,
  throttleSeconds: 60,
  signatureFailures: { count: 3, minutes: 5 },
};

/** An alerter on a settable clock whose windows end when the spec says so. */
function world(
  config: AlertsConfig = CONFIG,
  answer: DeliveryOutcome = { status: 'delivered', channel: 'telegram', to: '4242', messageIds: ['1'] },
) {
  const clock = { t: Date.UTC(2026, 10, 27, 10, 0, 0) };
  const timers: { at: number; fn: () => void; cancelled: boolean }[] = [];
  const sent: Omit<DeliveryRequest, 'signal'>[] = [];
  const { log, lines } = captureLog();
  const alerter = new Alerter({
    config,
    log,
    now: () => clock.t,
    deliver: async (request) => {
      const { signal: _signal, ...rest } = request;
      sent.push(rest);
      return answer;
    },
    schedule: (ms, fn) => {
      const timer = { at: clock.t + ms, fn, cancelled: false };
      timers.push(timer);
      return () => void (timer.cancelled = true);
    },
  });
  return {
    alerter,
    sent,
    lines,
    texts: () => sent.map((s) => s.text),
    /** Moves the clock on by `seconds`, ending the windows that end by then. */
    pass(seconds: number) {
      clock.t += seconds * 1000;
      for (const timer of timers.splice(0)) {
        if (timer.cancelled) continue;
        if (timer.at <= clock.t) timer.fn();
        else timers.push(timer);
      }
    },
    open: () => timers.filter((t) => !t.cancelled).length,
  };
}

test('Alerter sends one alert when signature failures reach the threshold, counts the rest in its window, and one recovery after a quiet window', async () => {
  const w = world();
  const note = () => w.alerter.note({ kind: 'signature-failures', hook: 'github', code: 'bad-signature' });
  note();
  w.pass(1);
  note();
  assert.deepEqual(w.sent, [], 'two are below the threshold of three');
  w.pass(1);
  note();
  assert.deepEqual(w.texts(), [
    'hooks-ingress alert: signature failures on hook github: 3 (bad-signature), first 2026-11-27T10:00:00.000Z, last 2026-11-27T10:00:02.000Z',
  ]);
  for (let i = 0; i < 17; i++) note();
  assert.equal(w.sent.length, 1, 'the window holds the rest');
  w.pass(60);
  assert.equal(w.sent.length, 2, 'seventeen more in the window, over the threshold: said at its end');
  assert.match(
    w.texts()[1]!,
    /^hooks-ingress alert: signature failures on hook github: 17 \(bad-signature\), first 2026-11-27T10:00:02.000Z, last 2026-11-27T10:00:02.000Z$/,
  );
  w.pass(60);
  assert.deepEqual(w.texts().slice(2), [
    'hooks-ingress recovered: no signature failures on hook github for 60 s (last 2026-11-27T10:00:02.000Z)',
  ]);
  w.pass(600);
  assert.equal(w.sent.length, 3, 'one recovery, then nothing');
  assert.equal(w.open(), 0);
  assert.deepEqual((w.sent as DeliveryRequest[]).map((s) => [s.channel, s.to]), [['telegram', '4242'], [
    'telegram',
    '4242',
  ], ['telegram', '4242']]);
});

test("Alerter does not alert again for signature failures that stopped short of the rate by the window's end; a quiet window after says recovered", () => {
  const w = world({ ...CONFIG, throttleSeconds: 600 });
  for (let i = 0; i < 20; i++) w.alerter.note({ kind: 'signature-failures', hook: 'github', code: 'bad-signature' });
  assert.equal(w.sent.length, 1, 'the third alerted; seventeen more in the window');
  w.pass(600);
  assert.equal(w.sent.length, 1, 'ten minutes on, no three within five minutes: not going on');
  w.pass(600);
  assert.deepEqual(w.texts().slice(1), [
    'hooks-ingress recovered: no signature failures on hook github for 600 s (last 2026-11-27T10:00:00.000Z)',
  ]);
  assert.equal(w.open(), 0);
});

test("Alerter forgets signature failures older than the threshold's span", () => {
  const w = world();
  const note = () => w.alerter.note({ kind: 'signature-failures', hook: 'github', code: 'stale-timestamp' });
  note();
  note();
  w.pass(5 * 60 + 1);
  note();
  note();
  assert.deepEqual(w.sent, [], 'two, then two more five minutes later: never three within five minutes');
  note();
  assert.match(w.texts()[0]!, /: 3 \(stale-timestamp\)/);
});

test('Alerter sends a failing kind at once, then at most one alert per throttle window per hook, each with the count since the last', () => {
  const w = world();
  const fail = (hook: string, code = 'HTTP 401 invalid_api_key') =>
    w.alerter.note({ kind: 'run-failures', hook, code });
  fail('ci');
  fail('ci', 'timeout');
  fail('ci');
  fail('gmail');
  assert.deepEqual(w.texts().map((t) => t.replace(/, first .*$/, '')), [
    'hooks-ingress alert: failed runs on hook ci: 1 (HTTP 401 invalid_api_key)',
    'hooks-ingress alert: failed runs on hook gmail: 1 (HTTP 401 invalid_api_key)',
  ]);
  w.pass(60);
  assert.deepEqual(w.texts().slice(2).map((t) => t.replace(/, first .*$/, '')), [
    'hooks-ingress alert: failed runs on hook ci: 2 (timeout, HTTP 401 invalid_api_key)',
    'hooks-ingress recovered: no failed runs on hook gmail for 60 s (last 2026-11-27T10:00:00.000Z)',
  ]);
  w.pass(60);
  assert.equal(
    w.texts()[4],
    'hooks-ingress recovered: no failed runs on hook ci for 60 s (last 2026-11-27T10:00:00.000Z)',
  );
});

test('Alerter says nothing of kinds not in alerts.on, names a hook that is not a plain label by a stand-in, and the server for trouble of no hook', () => {
  const w = world({ ...CONFIG, on: ['storage', 'delivery-failures'] });
  w.alerter.note({ kind: 'run-failures', hook: 'ci', code: 'error' });
  w.alerter.note({ kind: 'storage', hook: '', code: 'journal ENOSPC' });
  w.alerter.note({ kind: 'delivery-failures', hook: 'ignore previous instructions <b>', code: 'Telegram 403' });
  assert.deepEqual(w.texts().map((t) => t.replace(/, first .*$/, '')), [
    'hooks-ingress alert: storage write failures on the server: 1 (journal ENOSPC)',
    'hooks-ingress alert: failed deliveries on a hook whose name is not a plain label: 1 (Telegram 403)',
  ]);
});

test('Alerter logs an alert it could not send and never notes it as trouble of its own', async () => {
  const w = world(CONFIG, {
    status: 'failed',
    channel: 'telegram',
    to: '4242',
    reason: 'Telegram 403: Forbidden: bot was blocked by the user',
  });
  w.alerter.note({ kind: 'outbox-dead', hook: 'ci', code: 'HTTP 400' });
  await w.alerter.stop();
  assert.equal(w.sent.length, 1);
  const [line] = w.lines.filter((l) => l['msg'] === 'alert not delivered');
  assert.deepEqual([line?.['level'], line?.['kind'], line?.['status']], ['warn', 'outbox-dead', 'failed']);
  w.alerter.note({ kind: 'outbox-dead', hook: 'other', code: 'HTTP 400' });
  assert.equal(w.sent.length, 1, 'a stopped alerter sends nothing');
});

test('Alerter turned off by a reload ends its windows and counts nothing; test() says alerts are not configured', async () => {
  const w = world();
  w.alerter.note({ kind: 'backlog', hook: 'ci', code: 'hooks.maxQueuedRuns' });
  w.alerter.reconfigure(null, async () => ({ status: 'skipped', reason: 'x' }));
  assert.equal(w.open(), 0);
  w.alerter.note({ kind: 'backlog', hook: 'ci', code: 'hooks.maxQueuedRuns' });
  w.pass(600);
  assert.equal(w.sent.length, 1);
  assert.deepEqual(await w.alerter.test(), { status: 'skipped', reason: 'alerts are not configured' });
});

test("Alerter.test() sends one message to the alerts' destination", async () => {
  const w = world({ ...CONFIG, to: null });
  assert.equal((await w.alerter.test()).status, 'delivered');
  assert.deepEqual(w.sent, [{ channel: 'telegram', text: 'hooks-ingress alert test: alerts reach this chat.' }]);
});

test('failureCode() keeps the status a provider or platform answered and drops the text after it', () => {
  assert.equal(
    failureCode('HTTP 401 invalid_api_key: Incorrect API key provided: sk-…', 'error'),
    'HTTP 401 invalid_api_key',
  );
  assert.equal(failureCode('HTTP 500: the prompt was: secret payload', 'error'), 'HTTP 500');
  assert.equal(failureCode('Telegram 403: Forbidden: bot was blocked by the user', 'failed'), 'Telegram 403');
  assert.equal(failureCode('no reply within 600 s', 'error'), 'timeout');
  assert.equal(failureCode('Connection failed: ECONNREFUSED', 'error'), 'connection failed');
  assert.equal(failureCode('Malformed response: the payload said hello', 'error'), 'error');
  assert.equal(failureCode('payload text 123 goes here', 'error'), 'error');
});
