// GET /metrics end to end: a real app and store behind node:http, the page parsed as Prometheus reads it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { type AppHarness, specConfig, startApp } from './_app.ts';
import { FailureLimiter } from '../lib/guard/rate-limit.ts';
import { JOURNAL_FILE } from '../lib/store/journal/lines.ts';
import type { RunRecord } from '../lib/model/records.ts';
import { createTelemetry, type TelemetrySources } from '../lib/edge/telemetry.ts';
import { type Exposition, parseExposition, valueOf } from './_exposition.ts';
import { post, type Reply, send } from './_http.ts';
import { ROOT } from './_cli.ts';

const HOOK_TOKEN = 'telemetry-hook-token-0123456789abcdef';
const GATEWAY_TOKEN = 'telemetry-gateway-token-fedcba9876543210';
const HOOK = { authorization: `Bearer ${HOOK_TOKEN}` };
const GATEWAY = { authorization: `Bearer ${GATEWAY_TOKEN}` };
const EXPOSITION_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

type Raw = Record<string, Record<string, unknown>>;

// --- harness ---------------------------------------------------------------------------------

interface Harness extends AppHarness {
  /** The runs the app handed to the runtime, as a stub queue. */
  queued: RunRecord[];
  scrape(): Promise<Exposition>;
}

// Hooks and the gateway token on; `raw` adds to (and may override) both.
function withTokens(raw: Raw): Raw {
  return {
    ...raw,
    hooks: { enabled: true, token: HOOK_TOKEN, ...raw['hooks'] },
    gateway: { auth: { token: GATEWAY_TOKEN }, ...raw['gateway'] },
  };
}

const GITHUB = {
  match: { path: 'github' },
  action: 'wake',
  wakeMode: 'next-heartbeat',
  textTemplate: 'push to {{repo}}',
};

async function start(t: TestContext, raw: Raw = {}): Promise<Harness> {
  const queued: RunRecord[] = [];
  const runs = {
    enqueue: (run: RunRecord) => void queued.push(run),
    get depth() {
      return queued.length;
    },
  };
  const h = await startApp(t, {
    raw: withTokens({ ...raw, hooks: { mappings: [GITHUB], ...raw['hooks'] } }),
    idempotencyTtlMs: 60_000,
    with: ({ store, app }) => ({
      runs,
      // A clock that never moves: a lock lasts for the whole test, whatever the machine's speed.
      limiter: new FailureLimiter({ maxFailures: 3, windowMs: 60_000, lockoutMs: 60_000, now: () => 1_000 }),
      telemetry: createTelemetry({ store, limiter: () => app().limiterStats(), queueDepth: () => runs.depth }),
    }),
  });
  const scrape = async () => {
    const reply = await send(h.url, '/metrics', { headers: GATEWAY });
    assert.equal(reply.status, 200, reply.text);
    return parseExposition(reply.text);
  };
  return { ...h, queued, scrape };
}

function wake(h: Harness, body: unknown, headers: Record<string, string> = HOOK): Promise<Reply> {
  return post(h.url, '/hooks/wake', { headers, body: body as object });
}

// --- access ----------------------------------------------------------------------------------

test('GET /metrics answers 401 without a token and with a wrong one', async (t) => {
  const h = await start(t);
  for (const headers of [{}, { authorization: 'Bearer not-the-gateway-token' }, { authorization: GATEWAY_TOKEN }]) {
    const reply = await send(h.url, '/metrics', { headers });
    assert.equal(reply.status, 401, JSON.stringify(headers));
    assert.equal(reply.body['ok'], false);
    assert.equal(reply.body['code'], 'ERR_UNAUTHORIZED');
    assert.doesNotMatch(reply.text, /hooks_requests_total/);
  }
});

test('GET /metrics counts wrong gateway tokens against the client and answers 429 once it is locked', async (t) => {
  const h = await start(t);
  const statuses = [];
  for (let i = 0; i < 4; i++) {
    statuses.push((await send(h.url, '/metrics', { headers: { authorization: 'Bearer guess' } })).status);
  }
  assert.deepEqual(statuses, [401, 401, 401, 429]);
  // The right gateway token still opens the page, and does not unlock the client for hook tokens.
  const page = await h.scrape();
  assert.equal(valueOf(page, 'hooks_auth_failures_locked_clients'), 1);
});

test('hooks_request_body_bytes_total does not count a body that was refused unread', async (t) => {
  const h = await start(t);
  const refused = await post(h.url, '/hooks/wake', {
    headers: { authorization: 'Bearer wrong', 'content-length': '5' },
    body: 'hello',
  });
  assert.equal(refused.status, 401);
  assert.equal(valueOf(await h.scrape(), 'hooks_request_body_bytes_total'), 0);
});

test('GET /metrics refuses the hook token: only gateway.auth.token opens it', async (t) => {
  const h = await start(t);
  assert.equal((await send(h.url, '/metrics', { headers: HOOK })).status, 401);
  assert.equal(
    (await send(h.url, '/metrics', { headers: { 'x-gateway-token': GATEWAY_TOKEN } })).status,
    401,
    'only the Authorization header is read',
  );
});

test('GET /metrics with gateway.auth.token as Bearer answers 200 in the text format 0.0.4', async (t) => {
  const h = await start(t);
  const reply = await send(h.url, '/metrics', { headers: GATEWAY });
  assert.equal(reply.status, 200);
  assert.equal(reply.headers['content-type'], EXPOSITION_TYPE);
  assert.equal(reply.headers['cache-control'], 'no-store');
  const page = parseExposition(reply.text);
  const expected = {
    hooks_requests_total: 'counter',
    hooks_request_body_bytes_total: 'counter',
    hooks_idempotent_replays_total: 'counter',
    hooks_ignored_total: 'counter',
    hooks_rate_limited_total: 'counter',
    hooks_over_budget_total: 'counter',
    hooks_auth_failures_locked_clients: 'gauge',
    hooks_auth_limiter_keys: 'gauge',
    hooks_auth_lockouts: 'gauge',
    hooks_runs: 'gauge',
    hooks_run_queue_depth: 'gauge',
    hooks_held_requests: 'gauge',
    hooks_hook_runs_running: 'gauge',
    hooks_hook_runs_queued: 'gauge',
    hooks_hook_coalescing_windows: 'gauge',
    hooks_deliveries: 'gauge',
    hooks_run_duration_seconds_sum: 'gauge',
    hooks_journal_fsync_seconds: 'gauge',
    hooks_journal_bytes: 'gauge',
    hooks_outbox_entries: 'gauge',
    hooks_callbacks: 'gauge',
  };
  assert.deepEqual(Object.fromEntries(page.types), expected);
  for (const name of Object.keys(expected)) assert.ok((page.help.get(name) ?? '') !== '', `${name} has HELP text`);
  // A fresh server has counted nothing yet, not even this scrape (it is counted once answered).
  assert.equal(page.samples.filter((s) => s.name === 'hooks_requests_total').length, 0);
  assert.equal(valueOf(page, 'hooks_request_body_bytes_total'), 0);
  assert.equal(valueOf(page, 'hooks_run_queue_depth'), 0);
  const again = await h.scrape();
  assert.equal(valueOf(again, 'hooks_requests_total', { hook: 'metrics', status: '200' }), 1);
});

test('GET /metrics is absent (404) when gateway.auth.token is not set, whatever token is sent', async (t) => {
  const h = await startApp(t, {
    token: HOOK_TOKEN,
    with: ({ store, app }) => ({
      telemetry: createTelemetry({ store, limiter: () => app().limiterStats(), queueDepth: () => 0 }),
    }),
  });
  for (const headers of [{}, HOOK, GATEWAY]) {
    const reply = await send(h.url, '/metrics', { headers });
    assert.equal(reply.status, 404);
    assert.equal(reply.body['code'], 'ERR_NOT_FOUND');
  }
});

test('GET /metrics is absent (404) when the app has no telemetry, even with gateway.auth.token set', async (t) => {
  const h = await startApp(t, { raw: withTokens({}) });
  assert.equal((await send(h.url, '/metrics', { headers: GATEWAY })).status, 404);
});

// --- what is counted -------------------------------------------------------------------------

test('hooks_requests_total counts answers by hook and status, 401s included', async (t) => {
  const h = await start(t);
  assert.equal((await wake(h, { text: 'one', mode: 'next-heartbeat' })).status, 200);
  assert.equal((await wake(h, { text: 'two', mode: 'next-heartbeat' })).status, 200);
  assert.equal((await wake(h, { text: 'bad' }, { authorization: 'Bearer wrong' })).status, 401);
  assert.equal((await wake(h, { nope: true })).status, 400);
  assert.equal((await send(h.url, '/healthz')).status, 200);
  const page = await h.scrape();
  assert.equal(valueOf(page, 'hooks_requests_total', { hook: 'wake', status: '200' }), 2);
  assert.equal(valueOf(page, 'hooks_requests_total', { hook: 'wake', status: '401' }), 1);
  assert.equal(valueOf(page, 'hooks_requests_total', { hook: 'wake', status: '400' }), 1);
  assert.equal(valueOf(page, 'hooks_requests_total', { hook: 'healthz', status: '200' }), 1);
});

test('hooks_requests_total collapses unknown hook names to hook="mapped" and other paths to "other"', async (t) => {
  const h = await start(t);
  for (const name of ['a1', 'b2', 'c3/d4', 'x%20y']) {
    assert.equal((await post(h.url, `/hooks/${name}`, { headers: HOOK, body: {} })).status, 404);
  }
  assert.equal((await post(h.url, '/hooks/github', { headers: HOOK, body: { repo: 'r' } })).status, 200);
  assert.equal((await send(h.url, '/no/such/path')).status, 404);
  assert.equal((await send(h.url, '/hooks/anything')).status, 405);
  const page = await h.scrape();
  const hooks = new Set(page.samples.filter((s) => s.name === 'hooks_requests_total').map((s) => s.labels['hook']));
  assert.deepEqual([...hooks].sort(), ['github', 'mapped', 'other']);
  assert.equal(valueOf(page, 'hooks_requests_total', { hook: 'mapped', status: '404' }), 4);
  assert.equal(valueOf(page, 'hooks_requests_total', { hook: 'mapped', status: '405' }), 1);
  assert.equal(
    valueOf(page, 'hooks_requests_total', { hook: 'github', status: '200' }),
    1,
    'a configured mapping keeps its own label',
  );
  assert.equal(valueOf(page, 'hooks_requests_total', { hook: 'other', status: '404' }), 1);
});

test('hooks_request_body_bytes_total adds the body bytes read for each request', async (t) => {
  const h = await start(t);
  const bodies = ['{"text":"abc","mode":"next-heartbeat"}', '{"text":"defgh","mode":"next-heartbeat"}'];
  for (const body of bodies) {
    assert.equal(
      (await post(h.url, '/hooks/wake', { headers: { ...HOOK, 'content-type': 'application/json' }, body })).status,
      200,
    );
  }
  const page = await h.scrape();
  assert.equal(valueOf(page, 'hooks_request_body_bytes_total'), bodies.reduce((n, b) => n + Buffer.byteLength(b), 0));
});

test('hooks_idempotent_replays_total counts retries answered from the idempotency table', async (t) => {
  const h = await start(t);
  const headers = { ...HOOK, 'idempotency-key': 'delivery-42' };
  const first = await wake(h, { text: 'once', mode: 'next-heartbeat' }, headers);
  const second = await wake(h, { text: 'once', mode: 'next-heartbeat' }, headers);
  const third = await wake(h, { text: 'once', mode: 'next-heartbeat' }, headers);
  assert.equal(first.headers['idempotent-replayed'], undefined);
  assert.equal(second.headers['idempotent-replayed'], 'true');
  assert.equal(third.headers['idempotent-replayed'], 'true');
  const page = await h.scrape();
  assert.equal(valueOf(page, 'hooks_idempotent_replays_total'), 2);
  assert.equal(
    valueOf(page, 'hooks_requests_total', { hook: 'wake', status: '200' }),
    3,
    'a replay is still an answered request',
  );
  assert.equal(h.store.events().length, 1);
});

test('hooks_auth_* gauges show the limiter table, its locked clients and its lockouts', async (t) => {
  const h = await start(t);
  const wrong = { authorization: 'Bearer wrong' };
  const statuses = [];
  for (let i = 0; i < 4; i++) statuses.push((await wake(h, { text: 'x' }, wrong)).status);
  // maxFailures is 3: the third failure locks the client, the fourth is refused with 429.
  assert.deepEqual(statuses, [401, 401, 401, 429]);
  const page = await h.scrape();
  assert.equal(valueOf(page, 'hooks_auth_failures_locked_clients'), 1);
  assert.equal(valueOf(page, 'hooks_auth_limiter_keys'), 1);
  assert.equal(valueOf(page, 'hooks_auth_lockouts'), 1);
  assert.equal(valueOf(page, 'hooks_requests_total', { hook: 'wake', status: '401' }), 3);
  assert.equal(valueOf(page, 'hooks_requests_total', { hook: 'wake', status: '429' }), 1);

  // The right token passes through the lock (an operator is never locked out) and clears nothing.
  assert.equal((await wake(h, { text: 'ok', mode: 'next-heartbeat' })).status, 200);
  const after = await h.scrape();
  assert.equal(valueOf(after, 'hooks_auth_failures_locked_clients'), 1);
  assert.equal(valueOf(after, 'hooks_auth_limiter_keys'), 1);
  assert.equal(valueOf(after, 'hooks_auth_lockouts'), 1);
});

test('hooks_run_queue_depth and hooks_runs show accepted runs waiting in the runtime', async (t) => {
  const h = await start(t);
  for (const message of ['first', 'second']) {
    const reply = await post(h.url, '/hooks/agent', { headers: HOOK, body: { message } });
    assert.equal(reply.status, 202, reply.text);
  }
  const page = await h.scrape();
  assert.equal(h.queued.length, 2);
  assert.equal(valueOf(page, 'hooks_run_queue_depth'), 2);
  assert.equal(valueOf(page, 'hooks_runs', { state: 'pending' }), 2);
  assert.equal(valueOf(page, 'hooks_requests_total', { hook: 'agent', status: '202' }), 2);
});

test('hooks_runs, hooks_deliveries and hooks_run_duration_seconds_sum read the retained runs at render time', async (t) => {
  const h = await start(t);
  const ids: string[] = [];
  for (const message of ['a', 'b', 'c']) {
    const reply = await post(h.url, '/hooks/agent', { headers: HOOK, body: { message } });
    ids.push(String(reply.body['runId']));
  }
  const [a, b, c] = ids as [string, string, string];
  await h.store.commit({
    runUpdates: [
      {
        runId: a,
        status: 'ok',
        startedAt: '2026-01-01T00:00:00.000Z',
        finishedAt: '2026-01-01T00:00:01.500Z',
        delivery: { status: 'delivered', channel: 'telegram', to: '42', messageIds: ['m1'] },
      },
      {
        runId: b,
        status: 'error',
        startedAt: '2026-01-01T00:00:00.000Z',
        finishedAt: '2026-01-01T00:00:02.000Z',
        delivery: { status: 'failed', channel: 'slack', reason: 'down' },
      },
      { runId: c, status: 'running', startedAt: '2026-01-01T00:00:00.000Z' },
    ],
  });
  const page = await h.scrape();
  assert.equal(valueOf(page, 'hooks_runs', { state: 'ok' }), 1);
  assert.equal(valueOf(page, 'hooks_runs', { state: 'error' }), 1);
  assert.equal(valueOf(page, 'hooks_runs', { state: 'running' }), 1);
  assert.equal(valueOf(page, 'hooks_runs', { state: 'pending' }), undefined, 'a state no run is in disappears');
  assert.equal(valueOf(page, 'hooks_deliveries', { outcome: 'delivered', channel: 'telegram' }), 1);
  assert.equal(valueOf(page, 'hooks_deliveries', { outcome: 'failed', channel: 'slack' }), 1);
  assert.equal(valueOf(page, 'hooks_run_duration_seconds_sum'), 3.5, 'only finished runs count');
});

test('hooks_journal_* gauges report the journal file size and the last fsync time', async (t) => {
  const h = await start(t);
  const empty = await h.scrape();
  assert.equal(valueOf(empty, 'hooks_journal_bytes'), 0);
  assert.equal((await wake(h, { text: 'durable', mode: 'next-heartbeat' })).status, 200);
  const page = await h.scrape();
  const { size } = await stat(join(h.state, JOURNAL_FILE));
  assert.ok(size > 0);
  assert.equal(valueOf(page, 'hooks_journal_bytes'), size);
  const fsync = valueOf(page, 'hooks_journal_fsync_seconds');
  assert.ok(fsync !== undefined && Number.isFinite(fsync) && fsync >= 0, `fsync seconds: ${fsync}`);
  assert.equal(fsync, h.store.stats().fsyncMs / 1000);
});

test('App.reload() swaps the gateway token for /metrics and keeps the counters', async (t) => {
  const h = await start(t);
  assert.equal((await wake(h, { text: 'before', mode: 'next-heartbeat' })).status, 200);
  const next = await specConfig(
    withTokens({ gateway: { auth: { token: 'rotated-gateway-token-0123456789' } }, hooks: { mappings: [GITHUB] } }),
    h.dir,
  );
  h.app.reload(next);
  assert.equal((await send(h.url, '/metrics', { headers: GATEWAY })).status, 401);
  const reply = await send(h.url, '/metrics', {
    headers: { authorization: 'Bearer rotated-gateway-token-0123456789' },
  });
  assert.equal(reply.status, 200);
  assert.equal(valueOf(parseExposition(reply.text), 'hooks_requests_total', { hook: 'wake', status: '200' }), 1);

  h.app.reload(await specConfig({ hooks: { enabled: true, token: HOOK_TOKEN } }, h.dir));
  assert.equal(
    (await send(h.url, '/metrics', { headers: GATEWAY })).status,
    404,
    'a reload that drops gateway.auth.token drops /metrics',
  );
});

// --- createTelemetry on its own --------------------------------------------------------------

function sources(over: Partial<TelemetrySources> = {}): TelemetrySources {
  return {
    store: {
      stats: () => ({
        idempotencyKeys: 0,
        runs: 0,
        events: 0,
        journalBytes: 0,
        fsyncMs: 0,
        flushes: 0,
        compactionFailures: 0,
      }),
      runs: () => [],
      outboxCounts: () => ({ pending: 0, sent: 0, dead: 0, dropped: 0 }),
      callbackCounts: () => ({ pending: 0, sent: 0, dead: 0 }),
    },
    limiter: () => ({ keys: 0, locked: 0, lockouts: 0 }),
    queueDepth: () => 0,
    ...over,
  };
}

test('createTelemetry().request() counts a replay and a body only when there is one', () => {
  const telemetry = createTelemetry(sources());
  telemetry.request('wake', 200, 0, false);
  telemetry.request('wake', 200, 10, true);
  telemetry.request('agent', 202, 5, false);
  const page = parseExposition(telemetry.render());
  assert.equal(valueOf(page, 'hooks_requests_total', { hook: 'wake', status: '200' }), 2);
  assert.equal(valueOf(page, 'hooks_requests_total', { hook: 'agent', status: '202' }), 1);
  assert.equal(valueOf(page, 'hooks_request_body_bytes_total'), 15);
  assert.equal(valueOf(page, 'hooks_idempotent_replays_total'), 1);
  assert.equal(telemetry.contentType, EXPOSITION_TYPE);
});

test('createTelemetry() reports runs executing and queued per hook, for the hooks with runs or a lane set', () => {
  const lane = { concurrency: null, maxQueued: null };
  const telemetry = createTelemetry(sources({
    hooks: () => [
      { hook: 'agent', running: 2, queued: 0, ...lane },
      { hook: 'wake', running: 0, queued: 0, ...lane },
      { hook: 'ci', running: 1, queued: 4, ...lane, concurrency: 1 },
      { hook: 'quiet', running: 0, queued: 0, ...lane, maxQueued: 5 },
    ],
  }));
  const page = parseExposition(telemetry.render());
  const series = (name: string) =>
    Object.fromEntries(page.samples.filter((s) => s.name === name).map((s) => [s.labels['hook'], s.value]));
  assert.deepEqual(series('hooks_hook_runs_running'), { agent: 2, ci: 1, quiet: 0 });
  assert.deepEqual(series('hooks_hook_runs_queued'), { agent: 0, ci: 4, quiet: 0 });
  assert.deepEqual(series('hooks_hook_coalescing_windows'), { agent: 0, ci: 0, quiet: 0 });
  const coalescing = parseExposition(
    createTelemetry(sources({
      hooks: () => [{
        hook: 'pushes',
        running: 0,
        queued: 1,
        ...lane,
        coalescing: 1,
        coalesce: { windowSeconds: 30, maxWaitSeconds: 300, messages: 'latest' },
      }, {
        hook: 'idle',
        running: 0,
        queued: 0,
        ...lane,
        coalescing: 0,
        coalesce: { windowSeconds: 5, maxWaitSeconds: 5, messages: 'all' },
      }],
    })).render(),
  );
  assert.deepEqual(
    coalescing.samples.filter((s) => s.name === 'hooks_hook_coalescing_windows').map((
      s,
    ) => [s.labels['hook'], s.value]),
    [['pushes', 1], ['idle', 0]],
    'a hook that sets coalesce has a series, idle or not',
  );
  const none = parseExposition(createTelemetry(sources()).render());
  assert.equal(none.samples.filter((s) => s.name.startsWith('hooks_hook_')).length, 0, 'no source, no series');
});

test('createTelemetry() keeps counting across renders: each page has every request so far', () => {
  const telemetry = createTelemetry(sources());
  telemetry.request('wake', 401, 0, false);
  telemetry.request('wake', 200, 7, true);
  const first = parseExposition(telemetry.render());
  assert.equal(valueOf(first, 'hooks_requests_total', { hook: 'wake', status: '401' }), 1);
  telemetry.request('wake', 401, 0, false);
  telemetry.request('github', 200, 3, false);
  for (const page of [parseExposition(telemetry.render()), parseExposition(telemetry.render())]) {
    assert.equal(valueOf(page, 'hooks_requests_total', { hook: 'wake', status: '401' }), 2);
    assert.equal(valueOf(page, 'hooks_requests_total', { hook: 'wake', status: '200' }), 1);
    assert.equal(valueOf(page, 'hooks_requests_total', { hook: 'github', status: '200' }), 1);
    assert.equal(valueOf(page, 'hooks_request_body_bytes_total'), 10);
    assert.equal(valueOf(page, 'hooks_idempotent_replays_total'), 1);
  }
});

test('createTelemetry().render() reads its sources at every render', () => {
  let depth = 1;
  let limiter = { keys: 4, locked: 2, lockouts: 7 };
  const telemetry = createTelemetry(sources({ queueDepth: () => depth, limiter: () => limiter }));
  const first = parseExposition(telemetry.render());
  assert.equal(valueOf(first, 'hooks_run_queue_depth'), 1);
  assert.equal(valueOf(first, 'hooks_auth_limiter_keys'), 4);
  assert.equal(valueOf(first, 'hooks_auth_failures_locked_clients'), 2);
  assert.equal(valueOf(first, 'hooks_auth_lockouts'), 7);
  depth = 0;
  limiter = { keys: 0, locked: 0, lockouts: 7 };
  const second = parseExposition(telemetry.render());
  assert.equal(valueOf(second, 'hooks_run_queue_depth'), 0);
  assert.equal(valueOf(second, 'hooks_auth_limiter_keys'), 0);
});

test("docs/operations.md's metrics table lists every metric /metrics exports, with its type and labels, and nothing else", () => {
  // Every source holds something, so each labelled family has a sample that shows its labels.
  const run = {
    runId: 'r',
    status: 'ok',
    startedAt: '2026-01-01T00:00:00Z',
    finishedAt: '2026-01-01T00:00:01Z',
    delivery: { status: 'delivered', channel: 'telegram', to: '1', messageIds: [] },
  } as unknown as RunRecord;
  const telemetry = createTelemetry(
    sources({
      store: {
        ...sources().store,
        runs: () => [run],
        outboxCounts: () => ({ pending: 1, sent: 0, dead: 0, dropped: 0 }),
      },
      hooks: () => [{ hook: 'ci', running: 1, queued: 1, concurrency: 1, maxQueued: null }],
    }),
  );
  telemetry.request('wake', 200, 1, true);
  telemetry.ignored('github');
  telemetry.limited({ hook: 'ci', by: 'rate', over: 'queue' });
  telemetry.limited({ hook: 'ci', by: 'budget', over: 'wait' });
  const page = parseExposition(telemetry.render());
  const exported = [...page.types].map(([name, type]) => {
    const labels = new Set(
      page.samples.filter((s) => s.name === name || s.name.startsWith(`${name}_`)).flatMap((s) =>
        Object.keys(s.labels)
      ),
    );
    return `${name} ${type} ${[...labels].sort().join(',') || '—'}`;
  });

  const doc = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
  const section = doc.slice(doc.indexOf('\n## Metrics\n'), doc.indexOf('\n## ', doc.indexOf('\n## Metrics\n') + 1));
  const documented = [...section.matchAll(/^\| `(\w+)` \| (\w+) \| ([^|]+) \|/gm)].map(([, name, type, labels]) => {
    const names = labels!.trim() === '—' ? '—' : [...labels!.matchAll(/`(\w+)`/g)].map((m) => m[1]).sort().join(',');
    return `${name} ${type} ${names}`;
  });
  assert.deepEqual(documented.sort(), exported.sort());
});

test('createTelemetry() labels a delivery that was skipped with an empty channel', () => {
  const run = {
    runId: 'r',
    status: 'ok',
    delivery: { status: 'skipped', reason: 'deliver is false' },
  } as unknown as RunRecord;
  const page = parseExposition(
    createTelemetry(sources({ store: { ...sources().store, runs: () => [run, run] } })).render(),
  );
  assert.equal(valueOf(page, 'hooks_deliveries', { outcome: 'skipped', channel: '' }), 2);
});

test("parseExposition() (the spec's parser) refuses what Prometheus would refuse", () => {
  assert.throws(() => parseExposition('# TYPE a counter\na 1'), /newline/);
  assert.throws(() => parseExposition('a 1\n'), /TYPE/);
  assert.throws(() => parseExposition('# TYPE a counter\na{x="1" 1\n'), /label pair|sample line/);
  assert.throws(() => parseExposition('# TYPE a counter\na one\n'), /number/);
  assert.throws(() => parseExposition('# TYPE a counter\n# TYPE b gauge\na 1\n'), /sits with its family/);
  const page = parseExposition('# HELP a h\\nx\n# TYPE a counter\na{x="q\\"\\\\\\n",y=""} +Inf\n');
  assert.equal(page.help.get('a'), 'h\nx');
  assert.deepEqual(page.samples, [{ name: 'a', labels: { x: 'q"\\\n', y: '' }, value: Infinity }]);
});

test('the paused hooks: hooks_paused, what each holds by kind, and how long its oldest has waited', () => {
  const oldest = new Date(Date.now() - 90_000).toISOString();
  const page = parseExposition(
    createTelemetry(sources({
      paused: () => [
        { hook: 'ci', runs: 3, wakes: 1, outbox: 0, oldest },
        { hook: 'agent', runs: 0, wakes: 0, outbox: 0 },
      ],
    })).render(),
  );
  assert.equal(valueOf(page, 'hooks_paused', { hook: 'ci' }), 1);
  assert.equal(valueOf(page, 'hooks_paused', { hook: 'agent' }), 1);
  assert.equal(valueOf(page, 'hooks_paused_waiting', { hook: 'ci', kind: 'runs' }), 3);
  assert.equal(valueOf(page, 'hooks_paused_waiting', { hook: 'ci', kind: 'wakes' }), 1);
  const waited = valueOf(page, 'hooks_paused_oldest_seconds', { hook: 'ci' }) ?? 0;
  assert.ok(waited >= 90, String(waited));
  assert.equal(
    page.samples.some((s) => s.name === 'hooks_paused_oldest_seconds' && s.labels['hook'] === 'agent'),
    false,
  );
});
