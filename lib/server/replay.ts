import type { Preview } from '../edge/preview.ts';
import type { ReplayOutcome } from '../edge/replay.ts';
import type { App } from '../edge/server.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { LedgerEntry } from '../model/ledger-entry.ts';
import type { Ledger } from '../store/ledger/ledger.ts';
import { findEntries } from '../store/ledger/find.ts';
import { findEntry } from '../store/ledger/read.ts';
import { takenCheck } from '../edge/taken.ts';

// The server's side of `hooks-ingress requests replay` and of the inspector's replay button: each
// stored request run again through the configuration of now (the command is
// lib/cli/requests-replay.ts). Its name, REPLAY_OP, is in lib/control/operations.ts, so that serve
// imports this file only when first asked.

/** What the CLI sends. */
export interface ReplayArgs {
  ids: string[];
  force?: boolean;
  dryRun?: boolean;
}

/**
 * Why an entry is replayed only when forced: it succeeded, a replay of it did, it was refused for
 * a signed timestamp already stale on arrival, or its delivery id was taken already. A dry run names it, and so does the refusal, so a
 * caller can offer the choice for that entry alone.
 */
export type NeedsForce = 'succeeded' | 'replayed' | 'stale-timestamp' | 'taken';

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
}

/**
 * The server's side: each id (an entry id, or a request id naming one entry) is replayed once, in
 * order. An entry that already succeeded, or whose earlier replay succeeded, needs `force`; a
 * replay of the same entry still running refuses another, so two callers cannot both run it.
 */
export function replayOperation(parts: ReplayParts): (args: unknown) => Promise<{ results: ReplayResult[] }> {
  const running = new Set<string>();
  return async (raw) => {
    const args = _args(raw);
    // What was answered a moment ago must be on disk to be found.
    await parts.ledger?.flush();
    const { named, succeeded } = await _lookUp(parts.stateDir, args.ids);
    const results: ReplayResult[] = [];
    const judging: _Judging = { taken: takenCheck(parts.app.taken), succeeded, running };
    for (const id of args.ids) {
      const found = named(id);
      if (!found.ok) {
        results.push({ id, ok: false, code: ErrorCode.NotFound, error: found.error });
        continue;
      }
      const { entry } = found;
      results.push(await (args.dryRun === true ? _dryRun : _replayOne)(id, entry, args, parts, judging));
    }
    return { results };
  };
}

/** What a replay is judged against: delivery ids taken, the entries replayed with success, the replays running now. */
interface _Judging {
  taken: ReturnType<typeof takenCheck>;
  succeeded: Set<string>;
  running: Set<string>;
}

// What a replay of `entry` would become now, why it would not run unforced (and the delivery id's
// words when that is why), or the error that stops it.
async function _dryRun(id: string, entry: LedgerEntry, args: ReplayArgs, parts: ReplayParts, { taken, succeeded }: _Judging): Promise<ReplayResult> {
  try {
    const skip = args.force === true ? null : await taken.why(entry);
    const preview = await parts.app.preview(entry);
    if (skip === null && preview.status < 400 && preview.actions.length > 0) taken.wouldTake(entry);
    const needsForce = args.force === true ? undefined : (_alreadyDone(entry, succeeded)?.why ?? (skip === null ? undefined : 'taken'));
    return { id, ok: true, preview, ...(skip === null ? {} : { skip }), ...(needsForce === undefined ? {} : { needsForce }) };
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    return { id, ok: false, code: error.code, error: error.message };
  }
}

// `entry` replayed, unless it needs force (done already, its delivery id taken) or a replay of it
// runs now.
async function _replayOne(id: string, entry: LedgerEntry, args: ReplayArgs, parts: ReplayParts, { taken, succeeded, running }: _Judging): Promise<ReplayResult> {
  // Whether its delivery id is taken is asked first: nothing awaits between the other checks and the run.
  const skip = args.force === true ? null : await taken.why(entry);
  const refusal = args.force === true ? null : (_alreadyDone(entry, succeeded) ?? (skip === null ? null : { why: 'taken' as const, error: skip }));
  if (refusal !== null) return { id, ok: false, code: ErrorCode.NotReplayable, error: refusal.error, needsForce: refusal.why };
  if (running.has(entry.id)) return { id, ok: false, code: ErrorCode.NotReplayable, error: `a replay of entry ${entry.id} is running now` };
  running.add(entry.id);
  try {
    const outcome = await parts.app.replay(entry, { force: args.force === true });
    if (outcome.status < 400) succeeded.add(entry.id);
    return { id, ok: true, outcome };
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    return { id, ok: false, code: error.code, error: error.message };
  } finally {
    running.delete(entry.id);
  }
}

/**
 * The entries the ids name, each as it is replayed (a replay of a replay runs the original's bytes
 * again: the chain stays one level deep), and the entries a replay of which succeeded. Only the
 * lines naming them are parsed (findEntries): the server answers requests meanwhile.
 */
async function _lookUp(stateDir: string, ids: readonly string[]): Promise<{ named: (id: string) => ReturnType<typeof findEntry>; succeeded: Set<string> }> {
  // Named by entry id, an entry's replays are found in the same reading.
  const first = await findEntries(stateDir, { ids, replaysOf: ids });
  const originals = new Map<string, string>();
  for (const id of ids) {
    const found = findEntry(first, id);
    if (found.ok) originals.set(id, found.entry.replayOf ?? found.entry.id);
  }
  // Named by request id, or through a replay: the original and its replays take a second reading.
  const asked = new Set(ids);
  const more = [...new Set(originals.values())].filter((original) => !asked.has(original) || !first.some((e) => e.id === original));
  const entries = more.length === 0 ? first : [...first, ...(await findEntries(stateDir, { ids: more, replaysOf: more }))];
  const succeeded = new Set(entries.filter((e) => e.replayOf !== undefined && _succeeded(e)).map((e) => e.replayOf!));
  const named = (id: string): ReturnType<typeof findEntry> => {
    const found = findEntry(first, id);
    if (!found.ok) return found;
    const original = originals.get(id)!;
    return { ok: true, entry: entries.find((e) => e.id === original) ?? found.entry };
  };
  return { named, succeeded };
}

function _args(raw: unknown): ReplayArgs {
  const value = raw as Partial<ReplayArgs> | null;
  if (typeof value !== 'object' || value === null || !Array.isArray(value.ids) || !value.ids.every((id) => typeof id === 'string') || value.ids.length === 0) {
    throw new HttpError(400, ErrorCode.InvalidPayload, 'ids: must be a non-empty list of entry ids');
  }
  return { ids: value.ids, force: value.force === true, dryRun: value.dryRun === true };
}

function _succeeded(entry: LedgerEntry): boolean {
  return entry.status < 400;
}

function _alreadyDone(entry: LedgerEntry, succeeded: ReadonlySet<string>): { why: NeedsForce; error: string } | null {
  if (_succeeded(entry)) return { why: 'succeeded', error: `entry ${entry.id} succeeded (${entry.status}); replay it again with --force` };
  if (succeeded.has(entry.id)) return { why: 'replayed', error: `a replay of entry ${entry.id} succeeded; replay it again with --force` };
  // A replay does not hold the timestamp against the clock again. A delivery that was already too
  // old when it arrived is what anyone holding one captured delivery can send at any time, so a
  // bulk replay of what failed does not run it unasked.
  if (entry.signature?.why === 'stale-timestamp') {
    return {
      why: 'stale-timestamp',
      error: `entry ${entry.id} was refused for a signed timestamp too far from the clock when it arrived (a captured delivery sent again looks the same); replay it with --force if it is genuine`,
    };
  }
  return null;
}
