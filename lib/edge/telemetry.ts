// The service's metrics: request counters and the gauges read from the store and limiter.

import { CONTENT_TYPE, Metrics } from './metrics.ts';
import type { Store } from '../store/journal/store.ts';
import type { HookStatus } from '../model/hook-status.ts';
import type { LimitMark } from './work-limits.ts';

/** What the server, the runtime and delivery report; rendered for `GET /metrics`. */
export interface Telemetry {
  request(hook: string, status: number, bodyBytes: number, replayed: boolean): void;
  /** A request acknowledged without effect: every mapping `match` selected was passed over by its `filter`. */
  ignored(hook: string): void;
  /** A request a hook's rate limit held, dropped or refused, or its budget held or refused. */
  limited(mark: LimitMark): void;
  render(): string;
  readonly contentType: string;
}

export interface TelemetrySources {
  store: Pick<Store, 'stats' | 'runs' | 'outboxCounts' | 'callbackCounts'>;
  limiter: () => { keys: number; locked: number; lockouts: number };
  queueDepth: () => number;
  /** Requests held open: waiting for their runs (`waitForCompletion`) or behind the first copy of their key. */
  waiters?: () => number;
  /** Each hook's work now (lib/model/hook-status.ts). */
  hooks?: () => readonly HookStatus[];
  /** The paused hooks, what each holds and when the oldest of it arrived (lib/server/pauses.ts). */
  paused?: () => readonly PausedCounts[];
}

/** A paused hook as the metrics read it. */
export interface PausedCounts {
  hook: string;
  runs: number;
  wakes: number;
  outbox: number;
  /** When the oldest thing it holds arrived (ISO); absent when it holds nothing. */
  oldest?: string;
}

/**
 * The service's metrics. Counters are kept as requests happen; everything the store or the
 * limiter already knows is read when the page is rendered, so nothing is counted twice.
 */
export function createTelemetry(sources: TelemetrySources): Telemetry {
  const m = new Metrics();
  const requests = _requestCounters(m);
  const ignored = m.counter(
    'hooks_ignored_total',
    'Requests acknowledged and ignored because every selected mapping filtered them out, by hook.',
    ['hook'],
  );
  const limited = {
    rate: m.counter(
      'hooks_rate_limited_total',
      "Requests past their hook's rate limit, by hook and what was done (reject, queue, ignore).",
      ['hook', 'over'],
    ),
    budget: m.counter(
      'hooks_over_budget_total',
      "Requests whose runs were past their hook's daily budget, by hook and what was done (wait, reject).",
      ['hook', 'over'],
    ),
  };
  _limiterGauges(m, sources);
  _runGauges(m, sources);
  _hookGauges(m, sources);
  _storeGauges(m, sources);
  if (sources.paused !== undefined) _pauseGauges(m, sources.paused);
  return {
    contentType: CONTENT_TYPE,
    request: requests.request,
    ignored: (hook) => ignored.inc({ hook }),
    limited: ({ hook, by, over }) => limited[by].inc({ hook, over }),
    render: () => {
      requests.fold();
      return m.render();
    },
  };
}

// Every request is tallied in plain maps and numbers, folded into the counters when the page is
// rendered: a labelled counter builds its series key on each call, which a 401 need not pay for.
function _requestCounters(m: Metrics): { request: Telemetry['request']; fold: () => void } {
  const requests = m.counter('hooks_requests_total', 'Requests answered, by hook and status.', ['hook', 'status']);
  const bytes = m.counter('hooks_request_body_bytes_total', 'Declared request body bytes received.');
  const replays = m.counter('hooks_idempotent_replays_total', 'Retries answered from the idempotency table.');
  const tally = new Map<string, Map<number, number>>();
  let received = 0;
  let replayed = 0;
  return {
    request(hook, status, bodyBytes, wasReplayed) {
      let byStatus = tally.get(hook);
      if (byStatus === undefined) tally.set(hook, byStatus = new Map());
      byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
      received += bodyBytes;
      if (wasReplayed) replayed++;
    },
    fold() {
      for (const [hook, byStatus] of tally) {
        for (const [status, n] of byStatus) requests.inc({ hook, status: String(status) }, n);
      }
      tally.clear();
      if (received > 0) bytes.inc(received);
      if (replayed > 0) replays.inc(replayed);
      received = replayed = 0;
    },
  };
}

function _limiterGauges(m: Metrics, sources: TelemetrySources): void {
  m.gauge(
    'hooks_auth_failures_locked_clients',
    'Clients currently locked out after repeated auth failures.',
    [],
    () => sources.limiter().locked,
  );
  m.gauge('hooks_auth_limiter_keys', 'Clients held in the auth-failure table.', [], () => sources.limiter().keys);
  m.gauge(
    'hooks_auth_lockouts',
    'Lockouts since start (a gauge: it restarts with the process).',
    [],
    () => sources.limiter().lockouts,
  );
}

function _runGauges(m: Metrics, sources: TelemetrySources): void {
  m.gauge(
    'hooks_runs',
    'Retained runs by state.',
    ['state'],
    () => _tally(sources.store.runs().map((r) => r.status), (state) => ({ state })),
  );
  m.gauge('hooks_run_queue_depth', 'Runs waiting or executing.', [], () => sources.queueDepth());
  m.gauge(
    'hooks_held_requests',
    'Requests held open: waiting for their runs (waitForCompletion), or behind the first copy of their idempotency key.',
    [],
    () => sources.waiters?.() ?? 0,
  );
  m.gauge('hooks_deliveries', 'Retained runs by delivery outcome and channel.', ['outcome', 'channel'], () =>
    _tally(
      sources.store.runs().flatMap((r) => (r.delivery === undefined
        ? []
        : [`${r.delivery.status}\n${'channel' in r.delivery ? r.delivery.channel : ''}`])
      ),
      (key) => {
        const [outcome = '', channel = ''] = key.split('\n');
        return { outcome, channel };
      },
    ));
  m.gauge(
    'hooks_run_duration_seconds_sum',
    'Total duration of the retained finished runs.',
    [],
    () =>
      sources.store.runs().reduce(
        (
          sum,
          r,
        ) => (r.startedAt && r.finishedAt ? sum + (Date.parse(r.finishedAt) - Date.parse(r.startedAt)) / 1000 : sum),
        0,
      ),
  );
}

// Per hook, the hooks with anything to report: a mapping with no runs and no control adds no series.
function _hookGauges(m: Metrics, sources: TelemetrySources): void {
  const per = (value: (s: HookStatus) => number) => () =>
    (sources.hooks?.() ?? []).flatMap((s): [Record<string, string>, number][] =>
      s.running + s.queued > 0 || s.concurrency !== null || s.maxQueued !== null || (s.coalesce ?? null) !== null
        ? [[{ hook: s.hook }, value(s)]]
        : []
    );
  m.gauge(
    'hooks_hook_runs_running',
    'Runs executing, by work hook (mapping id, agent).',
    ['hook'],
    per((s) => s.running),
  );
  m.gauge('hooks_hook_runs_queued', 'Runs waiting in the run queue, by work hook.', ['hook'], per((s) => s.queued));
  m.gauge(
    'hooks_hook_coalescing_windows',
    'Coalescing windows open (pending runs still taking requests), by work hook.',
    ['hook'],
    per((s) => s.coalescing ?? 0),
  );
}

function _storeGauges(m: Metrics, sources: TelemetrySources): void {
  m.gauge(
    'hooks_journal_fsync_seconds',
    'Duration of the last journal fsync.',
    [],
    () => sources.store.stats().fsyncMs / 1000,
  );
  m.gauge('hooks_journal_bytes', 'Size of the journal file.', [], () => sources.store.stats().journalBytes);
  m.gauge(
    'hooks_outbox_entries',
    'Forward mode: retained outbox entries by state (pending, sent, dead, dropped).',
    ['state'],
    () =>
      Object.entries(sources.store.outboxCounts()).map((
        [state, n],
      ): [Record<string, string>, number] => [{ state }, n]),
  );
  m.gauge(
    'hooks_callbacks',
    'Completion callbacks (onComplete) retained, by state (pending, sent, dead).',
    ['state'],
    () =>
      Object.entries(sources.store.callbackCounts()).map((
        [state, n],
      ): [Record<string, string>, number] => [{ state }, n]),
  );
}

function _pauseGauges(m: Metrics, paused: () => readonly PausedCounts[]): void {
  m.gauge(
    'hooks_paused',
    'Hooks paused (hooks-ingress pause): 1 for each.',
    ['hook'],
    () => paused().map((p): [Record<string, string>, number] => [{ hook: p.hook }, 1]),
  );
  m.gauge(
    'hooks_paused_waiting',
    'What a paused hook holds, by kind: runs waiting, wakes held, outbox entries waiting.',
    ['hook', 'kind'],
    () =>
      paused().flatMap((p): [Record<string, string>, number][] => [
        [{ hook: p.hook, kind: 'runs' }, p.runs],
        [{ hook: p.hook, kind: 'wakes' }, p.wakes],
        [{ hook: p.hook, kind: 'outbox' }, p.outbox],
      ]),
  );
  m.gauge(
    'hooks_paused_oldest_seconds',
    'How long the oldest thing a paused hook holds has waited.',
    ['hook'],
    () =>
      paused().flatMap((p): [Record<string, string>, number][] =>
        p.oldest === undefined ? [] : [[{ hook: p.hook }, Math.max(0, (Date.now() - Date.parse(p.oldest)) / 1000)]]
      ),
  );
}

// Counts equal values; each distinct value becomes one labelled sample.
function _tally(
  values: readonly string[],
  labels: (value: string) => Record<string, string>,
): [Record<string, string>, number][] {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts].map(([value, n]) => [labels(value), n]);
}
