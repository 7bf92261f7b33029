// The server's side of `hooks-ingress runs retry` and of the inspector's Retry run button: a failed
// or timed-out run run again, with the same message and options, as a new run admitted by the
// policy of now (agents, models, session keys, channels). The command is lib/cli/runs-retry.ts.
//
// Exactly once: a run is retried once (its record names the retry, in the journal line that adds
// it), so a chain of retries is one line of runs, each failed link retried by the next. A retry is
// a claim on the root of the run's request (lib/server/claims.ts), the same claim a replay of that
// request takes, so a retry and a `requests replay` never both run it; the root's record keeps the
// retry, after which the request's work goes on by retries, never by a replay.

import { runPrompt } from '../runtime/coalesced.ts';
import type { Config } from '../config/types.ts';
import { admitAgent, createAdmission } from '../edge/admission.ts';
import { reserveHookRuns, reserveRuns, type RunQueue } from '../edge/capacity.ts';
import { callbackFor } from '../edge/callback-target.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { AgentAction, CallbackSpec } from '../model/actions.ts';
import type { LedgerEntry } from '../model/ledger-entry.ts';
import type { Route, RunRecord } from '../model/records.ts';
import { retriedChange, rootOf, type RootRecord, succeeded } from '../model/replays.ts';
import type { Store } from '../store/journal/store.ts';
import { findEntries } from '../store/ledger/find.ts';
import type { Ledger } from '../store/ledger/ledger.ts';
import type { Claims } from './claims.ts';

/** What the CLI and the inspector send: the runs to retry; with `check`, only judge each. */
export interface RetryArgs {
  ids: string[];
  check?: boolean;
}

/** One result per id, in order: the new run, (with `check`) that it would run, or why not. */
export type RetryResult =
  | { id: string; ok: true; run: string; hook: string }
  | { id: string; ok: true; check: true }
  | { id: string; ok: false; code: string; error: string };

/** What the operation works with in the server. */
export interface RetryParts {
  stateDir: string;
  ledger: Pick<Ledger, 'flush'> | null;
  store: Pick<Store, 'run' | 'root' | 'commit' | 'lastRoute'>;
  /** The run queue the new runs join. */
  runs: RunQueue;
  /** The configuration the server runs now. */
  config: () => Config;
  claims: Claims;
  newId: () => string;
  now?: () => number;
}

/**
 * Each id's run retried once, in order: it must have ended `error` or `timeout`, not have been
 * retried, and its request must not have been replayed since or resolved by hand; a claim on its
 * request's root stops a replay or another retry of it meanwhile. Forward mode has no local runs.
 */
export function retryOperation(parts: RetryParts): (args: unknown) => Promise<{ results: RetryResult[] }> {
  return async (raw) => {
    const args = _args(raw);
    needLocalRuns(parts.config(), 'runs retry');
    await parts.ledger?.flush();
    const results: RetryResult[] = [];
    for (const id of args.ids) results.push(await _retryOne(parts, id, args.check === true));
    return { results };
  };
}

/** Refuses in forward mode, where the upstream gateway runs the runs: there are none here to retry or redeliver. */
export function needLocalRuns(config: Config, what: string): void {
  if (config.hooks.forward === null) return;
  throw new HttpError(
    409,
    ErrorCode.NotRetryable,
    `${what} needs local runs, and in forward mode (hooks.forward) the upstream gateway runs them`,
  );
}

async function _retryOne(parts: RetryParts, id: string, check: boolean): Promise<RetryResult> {
  try {
    const first = _retryable(parts, id);
    // The request's ledger entry is looked up first: from the records' reading to the claim, no await.
    const root = await _rootOf(parts, first);
    const run = _retryable(parts, id);
    const key = root ?? `run:${_chainStart(parts, run)}`;
    if (parts.claims.held(key) || (!check && !parts.claims.take(key))) {
      return _refused(id, `a replay or retry of ${root === null ? `run ${run.runId}` : `entry ${root}`} runs now`);
    }
    if (check) {
      // Judged only: no id is drawn for a run that is not made.
      _admitted({ ...parts, newId: () => 'check' }, run, root === null ? null : parts.store.root(root));
      return { id, ok: true, check: true };
    }
    try {
      return await _commit(parts, run, root);
    } finally {
      parts.claims.release(key);
    }
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    return { id, ok: false, code: error.code, error: error.message };
  }
}

// The run as retryable now: ended in failure, and not retried.
function _retryable(parts: RetryParts, id: string): RunRecord {
  const run = parts.store.run(id);
  if (run === null) {
    throw new HttpError(
      404,
      ErrorCode.NotFound,
      `no run has the id ${JSON.stringify(id)} (it may have been trimmed: the newest finished runs are kept)`,
    );
  }
  if (run.status !== 'error' && run.status !== 'timeout') {
    const why = run.status === 'ok' ? 'succeeded' : `has not finished (${run.status})`;
    throw _refusal(`run ${id} ${why}: only a run that ended error or timeout is retried`);
  }
  if (run.retriedBy !== undefined) {
    const next = parts.store.run(run.retriedBy);
    const again =
      next !== null && (next.status === 'error' || next.status === 'timeout') && next.retriedBy === undefined
        ? `; retry ${run.retriedBy}, which failed too`
        : '';
    throw _refusal(
      `run ${id} was retried already, as ${run.retriedBy}${next === null ? '' : ` (${next.status})`}${again}`,
    );
  }
  return run;
}

// The new run, admitted by the policy of now, recorded with the failed run's link to it and the
// root's record in one journal line, then queued.
async function _commit(parts: RetryParts, run: RunRecord, root: string | null): Promise<RetryResult> {
  const spec = _admitted(parts, run, root === null ? null : parts.store.root(root));
  // Its hook's own backlog bound, then the queue's: as a new request's run is held to them.
  const own = reserveHookRuns(parts.runs, [spec], parts.config());
  let all = (): void => {};
  try {
    all = reserveRuns(parts.runs, 1, parts.config());
    const time = new Date((parts.now ?? Date.now)()).toISOString();
    const committed = await parts.store.commit({
      runs: [spec],
      runUpdates: [{ runId: run.runId, retriedBy: spec.runId }],
      ...(root === null ? {} : { roots: [retriedChange(root, { run: run.runId, as: spec.runId, time })] }),
    });
    for (const queued of committed.runs) parts.runs.enqueue(queued);
    return { id: run.runId, ok: true, run: spec.runId, hook: spec.hook };
  } finally {
    all();
    own();
  }
}

// The failed run as an agent action again, through every rule of the configuration of now; the
// root's record may say its request's work went on otherwise (replayed since, resolved by hand).
function _admitted(parts: RetryParts, run: RunRecord, record: RootRecord | null) {
  const elsewhere = _doneElsewhere(run, record);
  if (elsewhere !== null) throw _refusal(elsewhere);
  const config = parts.config();
  const admission = createAdmission(config, () => parts.store.lastRoute() as Route | null, parts.newId);
  const label = `run ${run.runId}: `;
  const { requestId, ...spec } = admitAgent(
    admission,
    run.hook,
    '',
    _action(run),
    label,
    run.mapping,
    _callback(config, run, label),
  );
  return { ...spec, ...(run.requestId === undefined ? {} : { requestId: run.requestId }), retryOf: run.runId };
}

// Where the retry's completion goes, decided again under the config of now: its mapping's
// `onComplete`, `hooks.onComplete`, or the URL the request named, whose origin must still be allowed.
// A run that named none takes hooks.onComplete of now, also when its URL changed or it is gone.
function _callback(config: Config, run: RunRecord, label: string): CallbackSpec | undefined {
  try {
    if (run.mapping !== undefined) return callbackFor(config, run.mapping);
    const asked = run.callback?.requested === true ? run.callback.url : undefined;
    return callbackFor(config, null, asked);
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    throw new HttpError(error.status, error.code, `${label}${error.message}`);
  }
}

// Why the run's request needs no retry of this run: it was resolved by hand, or a replay of it
// (another request than the run's) succeeded since, whose own runs carry its work.
function _doneElsewhere(run: RunRecord, record: RootRecord | null): string | null {
  if (record === null) return null;
  if (record.state === 'resolved') {
    return `the request of run ${run.runId} (entry ${record.root}) was marked resolved by hand`;
  }
  const replay = record.replays.findLast((r) => succeeded(r.status));
  if (replay !== undefined && replay.requestId !== run.requestId) {
    return `the request of run ${run.runId} (entry ${record.root}) was replayed since, as ${
      replay.entry ?? `request ${replay.requestId}`
    } (${replay.status}): retry that replay's run instead`;
  }
  return null;
}

// What the run was asked to do, as an action: the stored key is the one the run used, judged again
// as written by whoever chose it then (a key the request chose by hooks.allowRequestSessionKey too;
// a run recorded before that was kept counts as the configuration's), then by the prefixes and the
// agent's namespace.
function _action(run: RunRecord): AgentAction {
  const action: AgentAction = {
    kind: 'agent',
    // A coalesced run's retry says what the first run said: how many requests it stands for, and their messages.
    message: runPrompt(run),
    name: run.name,
    wakeMode: run.wakeMode,
    deliver: run.deliver,
    channel: run.channel,
    agentId: run.agentId,
    sessionKey: { value: run.sessionKey, trusted: run.requestKey !== true },
  };
  if (run.untrustedName === true) action.untrustedName = true;
  if (run.to !== undefined) action.to = run.to;
  if (run.toConfigured === true) action.toConfigured = true;
  if (run.accountId !== undefined) action.accountId = run.accountId;
  if (run.sessionMode !== undefined) action.sessionMode = run.sessionMode;
  if (run.model !== undefined) action.model = run.model;
  if (run.thinking !== undefined) action.thinking = run.thinking;
  if (run.timeoutSeconds !== undefined) action.timeoutSeconds = run.timeoutSeconds;
  return action;
}

// The first run of a chain of retries, as far as the kept runs tell.
function _chainStart(parts: RetryParts, run: RunRecord): string {
  let start = run;
  const seen = new Set<string>();
  while (start.retryOf !== undefined && !seen.has(start.retryOf)) {
    seen.add(start.retryOf);
    const before = parts.store.run(start.retryOf);
    if (before === null) return start.retryOf;
    start = before;
  }
  return start.runId;
}

// The root (the original request's entry id) of the request that started the run's chain, or
// `null` when the ledger has no entry of it (off, trimmed, or a run with no request).
async function _rootOf(parts: RetryParts, run: RunRecord): Promise<string | null> {
  if (run.requestId === undefined) return null;
  const start = _chainStart(parts, run);
  const entries = await findEntries(parts.stateDir, { ids: [run.requestId] }).catch(() => [] as LedgerEntry[]);
  const entry = entries.find((e) => e.requestId === run.requestId && e.became?.runs?.includes(start));
  return entry === undefined ? null : rootOf(entry);
}

function _refusal(message: string): HttpError {
  return new HttpError(409, ErrorCode.NotRetryable, message);
}

function _refused(id: string, error: string): RetryResult {
  return { id, ok: false, code: ErrorCode.NotRetryable, error };
}

function _args(raw: unknown): RetryArgs {
  const value = raw as Partial<RetryArgs> | null;
  // A check may name no run: it asks only whether runs can be retried here at all (not in forward mode).
  if (
    typeof value !== 'object' || value === null || !Array.isArray(value.ids) ||
    (value.ids.length === 0 && value.check !== true) || !value.ids.every((id) => typeof id === 'string' && id !== '')
  ) {
    throw new HttpError(400, ErrorCode.InvalidPayload, 'ids: must be a non-empty list of run ids');
  }
  return { ids: value.ids, check: value.check === true };
}
