// `hooks-ingress runs retry`: failed or timed-out runs run again, once each, by the running server
// over the control channel (lib/server/retry.ts). It plans first: which runs it would retry, which
// it skips and why (the server judges each against its records and today's policy), and retries
// only with --yes.

import type { RunRecord } from '../model/records.ts';
import { callServer, type ControlAnswer } from '../control/client.ts';
import { RETRY_OP } from '../control/operations.ts';
import type { RetryResult } from '../server/retry.ts';
import { readRuns } from '../store/journal/read.ts';
import { parseTime } from '../store/ledger/read.ts';
import { escapeControls, jsonLine } from '../text.ts';
import type { Flags } from './command.ts';
import { FAILURE, type Io, messagePrefix, printResult, USAGE } from './io.ts';
import { usedStateDir } from './state-dir.ts';
import { usageLine } from './usage.ts';

/** A retry's plan: the runs it retries, and the ones it skips with the reason. */
export interface RetryPlan {
  run: RunRecord[];
  skipped: { run: RunRecord | { runId: string }; why: string }[];
}

/** `runs retry RUN_ID...` or `runs retry --failed [--hook H] [--since T]`: the plan, then with --yes the retries. */
export async function retryCommand(flags: Flags, ids: string[], io: Io): Promise<number> {
  const pick = _pick(flags, ids, io);
  if (typeof pick === 'number') return pick;
  const dir = await usedStateDir(flags, io);
  if (dir === null) return FAILURE;
  const runs = await readRuns(
    dir,
    ({ line, problem }) =>
      io.stderr(`${messagePrefix(io)}: journal line ${line} skipped: ${escapeControls(problem, false)}\n`),
  );
  const local = planRetry(runs, pick);
  // The server judges each run it would retry (with none, whether it retries runs at all: forward mode does not).
  const judged = await _call(dir, { ids: local.run.map((r) => r.runId), check: true });
  if (judged.kind !== 'result' && judged.kind !== 'no-server') return unanswered(io, judged);
  const checks = judged.kind === 'result' ? _results(judged) : null;
  if (checks === null && judged.kind === 'result') return printResult(io, messagePrefix(io), _unreadable);
  const plan = checks === null ? local : withChecks(local, checks);
  io.stdout(`${describeRetryPlan(plan, 'ids' in pick ? 'named' : 'match')}\n`);
  for (const run of plan.run) io.stdout(formatPlanned(run));
  for (const { run, why } of plan.skipped) io.stdout(`${escapeControls(`skipped ${run.runId}: ${why}`, false)}\n`);
  // Retrying is the server's: with none running, the plan is what the journal says, and nothing runs.
  if (judged.kind === 'no-server') return unanswered(io, judged);
  if (plan.run.length === 0) return 'ids' in pick ? FAILURE : 0;
  if (flags.yes !== true) {
    io.stderr(`${messagePrefix(io)}: nothing retried; add --yes to retry ${plan.run.length === 1 ? 'it' : 'these'}\n`);
    return 0;
  }
  const answer = await _call(dir, { ids: plan.run.map((r) => r.runId) });
  if (answer.kind !== 'result') return unanswered(io, answer);
  return printResult(io, messagePrefix(io), () => {
    let failed = false;
    for (const result of _results(answer) ?? _unreadable()) {
      io.stdout(flags.json ? jsonLine(result) : formatRetried(result));
      if (!result.ok) failed = true;
    }
    return failed ? FAILURE : 0;
  });
}

/** What a retry picks: the runs named, or the failed ones the filters keep. */
export type RetryPick = { ids: string[] } | { hook?: string; since?: number };

// Ids or --failed with its filters, one of them; the exit code of a usage error.
function _pick(flags: Flags, ids: string[], io: Io): RetryPick | number {
  const usage = (why: string) => {
    io.stderr(usageLine('runs', why));
    return USAGE;
  };
  if (ids.length > 0) {
    if (flags.failed === true || flags.hook !== undefined || flags.since !== undefined) {
      return usage('retry takes run ids or --failed with its filters, not both');
    }
    return { ids };
  }
  if (flags.failed !== true) return usage('retry needs run ids, or --failed (with --hook, --since) to pick them');
  const pick: { hook?: string; since?: number } = {};
  if (flags.hook !== undefined) pick.hook = flags.hook;
  if (flags.since !== undefined) {
    const since = parseTime(flags.since, Date.now());
    if (since === null) {
      return usage(
        `--since must be an ISO time (2026-11-26T10:00Z) or a time back from now (15m, 2h, 7d), got "${flags.since}"`,
      );
    }
    pick.since = since;
  }
  return pick;
}

/**
 * The plan as the journal reads: the runs named (or the failed ones not yet retried that the filters
 * keep), each once; a run named that is not found, not failed or retried already is skipped, saying why. The server judges the
 * rest ({@link withChecks}).
 */
export function planRetry(runs: readonly RunRecord[], pick: RetryPick): RetryPlan {
  const plan: RetryPlan = { run: [], skipped: [] };
  const byId = new Map(runs.map((r) => [r.runId, r]));
  const picked = 'ids' in pick
    ? [...new Set(pick.ids)].map((id) => byId.get(id) ?? { runId: id })
    : runs.filter((r) => _failed(r) && r.retriedBy === undefined && _matches(r, pick));
  for (const run of picked) {
    if (!('status' in run)) plan.skipped.push({ run, why: 'no run has this id (it may have been trimmed)' });
    else if (!_failed(run)) {
      plan.skipped.push({ run, why: `it ${run.status === 'ok' ? 'succeeded' : 'has not ended'}` });
    } else if (run.retriedBy !== undefined) plan.skipped.push({ run, why: `retried already, as ${run.retriedBy}` });
    else plan.run.push(run);
  }
  return plan;
}

/** The plan once the server judged each run it would retry: the ones it refuses are skipped, with its reason. */
export function withChecks(plan: RetryPlan, checks: readonly RetryResult[]): RetryPlan {
  const refused = new Map(checks.flatMap((c) => (c.ok ? [] : [[c.id, c.error] as const])));
  return {
    run: plan.run.filter((r) => !refused.has(r.runId)),
    skipped: [
      ...plan.skipped,
      ...plan.run.flatMap((run) => (refused.has(run.runId) ? [{ run, why: refused.get(run.runId)! }] : [])),
    ],
  };
}

/** "2 failed runs not yet retried match; will retry 1, skip 1": the plan in one line. */
export function describeRetryPlan(plan: RetryPlan, how: 'named' | 'match'): string {
  const count = plan.run.length + plan.skipped.length;
  const runs = how === 'match'
    ? `${count} failed run${count === 1 ? '' : 's'} not yet retried`
    : `${count} run${count === 1 ? '' : 's'}`;
  const head = how === 'match' ? `${runs} match${count === 1 ? 'es' : ''}` : `${runs} named`;
  if (count === 0) return head;
  const skip = plan.skipped.length === 0 ? '' : `, skip ${plan.skipped.length}`;
  return `${head}; will retry ${plan.run.length}${skip}${plan.run.length === 0 ? '' : ':'}`;
}

/** A run the plan retries, on one line. */
export function formatPlanned(run: RunRecord): string {
  const why = run.error === undefined ? '' : `  ${run.error.split('\n')[0]!.slice(0, 100)}`;
  return `${escapeControls(`  ${run.runId}  ${run.status}  hook=${run.hook} agent=${run.agentId}${why}`, false)}\n`;
}

/** One retry's result as a line. */
export function formatRetried(result: RetryResult): string {
  const line = !result.ok
    ? `not retried ${result.id}: ${result.error}`
    : 'check' in result
    ? `would retry ${result.id}`
    : `retried ${result.id} as ${result.run} (hook=${result.hook})`;
  return `${escapeControls(line, false)}\n`;
}

function _failed(run: RunRecord): boolean {
  return run.status === 'error' || run.status === 'timeout';
}

// --hook names the path's hook or the mapping's id; --since holds to when the run ended.
function _matches(run: RunRecord, pick: { hook?: string; since?: number }): boolean {
  if (pick.hook !== undefined && run.hook !== pick.hook && run.mapping !== pick.hook) return false;
  return pick.since === undefined || Date.parse(run.finishedAt ?? run.acceptedAt) >= pick.since;
}

function _call(dir: string, args: { ids: string[]; check?: boolean }): Promise<ControlAnswer> {
  return callServer(dir, RETRY_OP, args, { timeoutMs: Math.min(600_000, 30_000 + 1_000 * args.ids.length) });
}

// The answer's results, or `null` when it is not a list of them.
function _results(answer: Extract<ControlAnswer, { kind: 'result' }>): RetryResult[] | null {
  const results = (answer.result as { results?: unknown } | null)?.results;
  if (!Array.isArray(results) || results.some((r) => typeof r !== 'object' || r === null)) return null;
  return results as RetryResult[];
}

// printResult's way out for an answer this command cannot read.
function _unreadable(): never {
  throw new TypeError('Cannot read the answer: results is not a list of results');
}

/** What the CLI says when the server did not answer a call (none runs, it timed out, it refused). */
export function unanswered(io: Io, answer: Exclude<ControlAnswer, { kind: 'result' }>, what = 'retry'): number {
  const said = answer.kind === 'no-server'
    ? `${answer.why}; ${what} is done by the running server (start it, then ${what})`
    : answer.kind === 'timeout'
    ? `the server did not answer in time; see hooks-ingress runs for what was done`
    : escapeControls(answer.message, false);
  io.stderr(`${messagePrefix(io)}: ${said}\n`);
  return FAILURE;
}
