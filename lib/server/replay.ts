// The server's side of `hooks-ingress requests replay` and of the inspector's replay button: each
// stored request run again through the configuration of now (the command is
// lib/cli/requests-replay.ts). Its name, REPLAY_OP, is in lib/control/operations.ts, so that serve
// imports this file only when first asked.
//
// What is replayed is a root: the original request, whichever of its entries (it, or a replay of
// it) was named. A replay claims its root at the moment it runs: the root's record is read from the
// journal in memory and the claim taken with no await between, and what the replay came to is
// written in the journal line of its effects (or a line of its own when it made none), so one
// that succeeded is never run again unless forced, whoever asks and however many ask at once.

import type { Preview } from '../edge/preview.ts';
import type { ReplayOutcome } from '../edge/replay.ts';
import type { App } from '../edge/server.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { LedgerEntry } from '../model/ledger-entry.ts';
import { type ReplayAttempt, replayedChange, type RootRecord, succeeded } from '../model/replays.ts';
import type { Store } from '../store/journal/store.ts';
import type { Ledger } from '../store/ledger/ledger.ts';
import { findEntries } from '../store/ledger/find.ts';
import { findEntry } from '../store/ledger/read.ts';
import { takenCheck } from '../edge/taken.ts';
import type { Claims } from './claims.ts';

/** What the CLI sends. */
export interface ReplayArgs {
  ids: string[];
  /** Run a root even when it succeeded, was resolved or its delivery id is taken: for every id (`true`), or only for these. */
  force?: boolean | string[];
  dryRun?: boolean;
  /** Only judge each id (no preview, nothing run): the answer's `checks` say which would not run unforced, and why. */
  check?: boolean;
}

/** One id judged for a bulk replay's plan: why its replay would not run unforced (`skip`: the delivery id's words), or that it was not found. */
export interface ReplayCheck {
  id: string;
  needsForce?: NeedsForce;
  skip?: string;
  /** The entry before it in the call whose replay would take its delivery id: a second copy of one delivery, which forcing would run twice. */
  takenInRun?: string;
  /** The request that took its delivery id, on record (not in this call): what `requests --failed` reads as resolved by that delivery. */
  takenBy?: string;
  error?: string;
}

/**
 * Why an entry is replayed only when forced: it succeeded, a replay of it did, it was resolved by
 * hand, it was refused for a signed timestamp already stale on arrival, or its delivery id was
 * taken already. A dry run names it, and so does the refusal, so a caller can offer the choice
 * for that entry alone.
 */
export type NeedsForce = 'succeeded' | 'replayed' | 'resolved' | 'stale-timestamp' | 'taken';

/** What the server answers, one result per id, in order. */
export type ReplayResult =
  | { id: string; ok: true; outcome: ReplayOutcome }
  /** A dry run: what the replay would become now, why it would not run unforced, and (`skip`) the delivery id's words when that is why. */
  | { id: string; ok: true; preview: Preview; skip?: string; needsForce?: NeedsForce }
  | { id: string; ok: false; code: string; error: string; needsForce?: NeedsForce };

/** What the operation works with in the server. */
export interface ReplayParts {
  stateDir: string;
  ledger: Pick<Ledger, 'flush'> | null;
  app: Pick<App, 'replay' | 'preview' | 'taken'>;
  /** The journal: the roots' records, and the line a replay's outcome is written in when its commit made none. */
  store: Pick<Store, 'root' | 'commit'>;
  /** The roots a replay runs now (shared with `requests resolve`). */
  claims: Claims;
  log: Pick<Logger, 'error'>;
}

/**
 * The server's side: each id (an entry id, or a request id naming one entry) has its root replayed
 * once, in order. A root that succeeded (its own request, or a replay of it), was resolved by hand,
 * or whose delivery id is taken needs `force` for that id; a root claimed by a replay running now
 * is refused; a root two ids of one call name runs once.
 */
export function replayOperation(
  parts: ReplayParts,
): (args: unknown) => Promise<{ results: ReplayResult[]; checks?: ReplayCheck[] }> {
  return async (raw) => {
    const args = _args(raw);
    // What was answered a moment ago must be on disk to be found.
    await parts.ledger?.flush();
    const { named, succeededBefore } = await lookUp(parts.stateDir, args.ids);
    const results: ReplayResult[] = [];
    const judging: _Judging = { taken: takenCheck(parts.app.taken), succeededBefore, ran: new Map() };
    if (args.check === true) return { results, checks: await _checks(args, named, parts, judging) };
    for (const id of args.ids) {
      const found = named(id);
      if (!found.ok) {
        results.push({ id, ok: false, code: ErrorCode.NotFound, error: found.error });
        continue;
      }
      const forced = args.force === true || (Array.isArray(args.force) && args.force.includes(id));
      results.push(await (args.dryRun === true ? _dryRun : _replayOne)(id, found, forced, parts, judging));
    }
    return { results };
  };
}

/** What a replay is judged against: delivery ids taken, the roots a replay of which succeeded by the ledger, the roots this call ran (and as which replay). */
interface _Judging {
  taken: ReturnType<typeof takenCheck>;
  succeededBefore: ReadonlySet<string>;
  ran: Map<string, string>;
}

// What a replay of the root would become now, why it would not run unforced (and the delivery
// id's words when that is why), or the error that stops it.
async function _dryRun(
  id: string,
  { entry, root }: Found,
  forced: boolean,
  parts: ReplayParts,
  { taken, succeededBefore }: _Judging,
): Promise<ReplayResult> {
  try {
    const retried = retriedRefusal(root, parts.store.root(root));
    if (retried !== null) return { id, ok: false, code: ErrorCode.NotReplayable, error: retried };
    const skip = forced ? null : await taken.why(entry);
    const preview = await parts.app.preview(entry, { force: forced });
    if (skip === null && preview.status < 400 && preview.actions.length > 0) taken.wouldTake(entry);
    const needsForce = forced ? undefined : (_alreadyDone(entry, root, parts.store.root(root), succeededBefore)?.why ??
      (skip === null ? undefined : 'taken'));
    return {
      id,
      ok: true,
      preview,
      ...(skip === null ? {} : { skip }),
      ...(needsForce === undefined ? {} : { needsForce }),
    };
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    return { id, ok: false, code: error.code, error: error.message };
  }
}

// Why each id's replay would not run unforced, judged as if each id before it in the call ran and
// succeeded (so a second copy of one delivery is named): what a bulk replay's plan counts.
async function _checks(
  args: ReplayArgs,
  named: (id: string) => Named,
  parts: ReplayParts,
  { taken, succeededBefore }: _Judging,
): Promise<ReplayCheck[]> {
  const checks: ReplayCheck[] = [];
  for (const id of args.ids) {
    const found = named(id);
    if (!found.ok) {
      checks.push({ id, error: found.error });
      continue;
    }
    const forced = args.force === true || (Array.isArray(args.force) && args.force.includes(id));
    const skip = forced ? null : await taken.why(found.entry);
    const needsForce = forced
      ? undefined
      : (_alreadyDone(found.entry, found.root, parts.store.root(found.root), succeededBefore)?.why ??
        (skip === null ? undefined : 'taken'));
    if (needsForce === undefined) taken.wouldTake(found.entry);
    const inRun = skip === null ? null : taken.inRun(found.entry);
    const by = skip === null ? null : taken.by(found.entry);
    checks.push({
      id,
      ...(needsForce === undefined ? {} : { needsForce }),
      ...(skip === null ? {} : { skip }),
      ...(inRun === null ? {} : { takenInRun: inRun }),
      ...(by === null ? {} : { takenBy: by }),
    });
  }
  return checks;
}

// The root replayed, unless this call ran it already, it needs force (done already, resolved, its
// delivery id taken) or a replay of it runs now: its claim is taken with no await after its record is read.
async function _replayOne(
  id: string,
  { entry, root }: Found,
  forced: boolean,
  parts: ReplayParts,
  { taken, succeededBefore, ran }: _Judging,
): Promise<ReplayResult> {
  const earlier = ran.get(root);
  if (earlier !== undefined) {
    return {
      id,
      ok: false,
      code: ErrorCode.NotReplayable,
      error: `entry ${root} was replayed a moment ago in this run (${earlier})`,
    };
  }
  // Whether its delivery id is taken is asked first: from the record's reading to the claim, no await.
  const skip = forced ? null : await taken.why(entry);
  const retried = retriedRefusal(root, parts.store.root(root));
  if (retried !== null) return { id, ok: false, code: ErrorCode.NotReplayable, error: retried };
  const refusal = forced ? null : (_alreadyDone(entry, root, parts.store.root(root), succeededBefore) ??
    (skip === null ? null : { why: 'taken' as const, error: skip }));
  if (refusal !== null) {
    return { id, ok: false, code: ErrorCode.NotReplayable, error: refusal.error, needsForce: refusal.why };
  }
  if (!parts.claims.take(root)) {
    return { id, ok: false, code: ErrorCode.NotReplayable, error: `a replay of entry ${root} is running now` };
  }
  try {
    const outcome = await _run(parts, entry, root, forced);
    ran.set(root, outcome.entry === undefined ? `request ${outcome.requestId}` : `as ${outcome.entry}`);
    return { id, ok: true, outcome };
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    return { id, ok: false, code: error.code, error: error.message };
  } finally {
    parts.claims.release(root);
  }
}

// One claimed root run: the outcome rides on the replay's journal commit; a replay that made none
// (ignored, skipped, refused, or its commit failed) gets a line of its own before the claim goes.
async function _run(parts: ReplayParts, entry: LedgerEntry, root: string, force: boolean): Promise<ReplayOutcome> {
  let carried: ReplayAttempt | null = null;
  const change = (attempt: ReplayAttempt) => replayedChange(root, parts.store.root(root), attempt);
  const settle = (attempt: ReplayAttempt) => {
    carried = attempt;
    return { roots: [change(attempt)] };
  };
  const outcome = await parts.app.replay(entry, { force, root, settle });
  if (carried !== null && succeeded(outcome.status)) return outcome;
  const attempt: ReplayAttempt = {
    ...(outcome.entry === undefined ? {} : { entry: outcome.entry }),
    requestId: outcome.requestId,
    status: outcome.status,
    time: new Date().toISOString(),
  };
  try {
    await parts.store.commit({ roots: [change(attempt)] });
  } catch (error) {
    // Nothing of the replay took effect (it made no commit, or its commit failed): the root stays as it was.
    parts.log.error('replay outcome not written', {
      root,
      error: (error as NodeJS.ErrnoException).code ?? String(error),
    });
  }
  return outcome;
}

/** An id looked up: the entry whose bytes a replay runs (the root's own, or a replay of it once the root left the ledger) and the root. */
export type Named = Found | { ok: false; error: string };
type Found = { ok: true; entry: LedgerEntry; root: string };

/**
 * The entries the ids name, each with its root (a replay of a replay runs the root's bytes again:
 * the chain stays one level deep), and the roots a replay of which succeeded by the ledger (what a
 * state directory from before the journal kept roots tells). Only the lines naming them are parsed
 * (findEntries): the server answers requests meanwhile.
 */
export async function lookUp(
  stateDir: string,
  ids: readonly string[],
): Promise<{ named: (id: string) => Named; succeededBefore: Set<string> }> {
  // Named by entry id, an entry's replays are found in the same reading.
  const first = await findEntries(stateDir, { ids, replaysOf: ids });
  // Looked up through an index: a bulk replay names thousands of ids, and a scan of the entries
  // per id held the event loop for seconds (10,000 ids: 2 s) while live requests waited.
  const find = _finder(first);
  const roots = new Map<string, string>();
  for (const id of ids) {
    const found = find(id);
    if (found.ok) roots.set(id, found.entry.replayOf ?? found.entry.id);
  }
  // Named by request id, or through a replay: the root and its replays take a second reading.
  const asked = new Set(ids);
  const read = new Set(first.map((e) => e.id));
  const more = [...new Set(roots.values())].filter((root) => !asked.has(root) || !read.has(root));
  const entries = more.length === 0
    ? first
    : [...first, ...(await findEntries(stateDir, { ids: more, replaysOf: more }))];
  const byId = new Map<string, LedgerEntry>();
  for (const e of entries) if (!byId.has(e.id)) byId.set(e.id, e);
  const succeededBefore = new Set(
    entries.filter((e) => e.replayOf !== undefined && succeeded(e.status)).map((e) => e.replayOf!),
  );
  const named = (id: string): Named => {
    const found = find(id);
    if (!found.ok) return found;
    const root = roots.get(id)!;
    return { ok: true, entry: byId.get(root) ?? found.entry, root };
  };
  return { named, succeededBefore };
}

// findEntry over `entries`, answered from an index made once: the same entry, or the same error.
function _finder(entries: readonly LedgerEntry[]): (id: string) => ReturnType<typeof findEntry> {
  const byId = new Map<string, LedgerEntry>();
  const byRequest = new Map<string, LedgerEntry[]>();
  for (const e of entries) {
    if (!byId.has(e.id)) byId.set(e.id, e);
    const same = byRequest.get(e.requestId);
    if (same === undefined) byRequest.set(e.requestId, [e]);
    else same.push(e);
  }
  return (id) => {
    const own = byId.get(id);
    if (own !== undefined) return { ok: true, entry: own };
    // The request id's entries (at most a few) go through findEntry itself, for its words.
    return findEntry(byRequest.get(id) ?? [], id);
  };
}

function _args(raw: unknown): ReplayArgs {
  const value = raw as Partial<ReplayArgs> | null;
  if (
    typeof value !== 'object' || value === null || !Array.isArray(value.ids) ||
    !value.ids.every((id) => typeof id === 'string') || value.ids.length === 0
  ) {
    throw new HttpError(400, ErrorCode.InvalidPayload, 'ids: must be a non-empty list of entry ids');
  }
  const force = value.force;
  if (
    force !== undefined && typeof force !== 'boolean' &&
    !(Array.isArray(force) && force.every((id) => typeof id === 'string'))
  ) {
    throw new HttpError(400, ErrorCode.InvalidPayload, 'force: must be true, false or a list of the ids to force');
  }
  return { ids: value.ids, force: force ?? false, dryRun: value.dryRun === true, check: value.check === true };
}

/**
 * Why a root whose run was retried (`runs retry`) is not replayed, forced or not: its work goes on
 * by retries of that run, and a replay would do it a second time; `null` when none was retried.
 */
export function retriedRefusal(root: string, record: RootRecord | null): string | null {
  const retry = record?.retries?.at(-1);
  if (retry === undefined) return null;
  return `a run of entry ${root} was retried (run ${retry.run} as ${retry.as}): its work goes on by runs retry, not by a replay`;
}

// Why a root is not run unless forced, or `null`. `entry` is what would run: the root's own entry,
// or (once the root left the ledger) the replay of it that was named.
function _alreadyDone(
  entry: LedgerEntry,
  root: string,
  record: RootRecord | null,
  succeededBefore: ReadonlySet<string>,
): { why: NeedsForce; error: string } | null {
  if (record?.state === 'succeeded') {
    const by = record.replays.find((r) => succeeded(r.status));
    return {
      why: 'replayed',
      error: `a replay of entry ${root} succeeded${
        by === undefined ? '' : ` (replay ${by.entry ?? `request ${by.requestId}`}, ${by.status})`
      }; replay it again with --force`,
    };
  }
  if (record?.state === 'resolved') {
    return {
      why: 'resolved',
      error: `entry ${root} was marked resolved at ${record.resolvedAt ?? record.time}; replay it with --force`,
    };
  }
  if (entry.id === root && succeeded(entry.status)) {
    return { why: 'succeeded', error: `entry ${entry.id} succeeded (${entry.status}); replay it again with --force` };
  }
  if (succeededBefore.has(root) || (entry.id !== root && succeeded(entry.status))) {
    return { why: 'replayed', error: `a replay of entry ${root} succeeded; replay it again with --force` };
  }
  // A replay does not hold the timestamp against the clock again. A delivery that was already too
  // old when it arrived is what anyone holding one captured delivery can send at any time, so a
  // bulk replay of what failed does not run it unasked.
  if (entry.signature?.why === 'stale-timestamp') {
    return {
      why: 'stale-timestamp',
      error:
        `entry ${entry.id} was refused for a signed timestamp too far from the clock when it arrived (a captured delivery sent again looks the same); replay it with --force if it is genuine`,
    };
  }
  return null;
}
