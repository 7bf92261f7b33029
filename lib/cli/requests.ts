// `hooks-ingress requests`: the request ledger, read from the state directory (it works while
// the server runs, and needs no secret): the list with its filters, and one entry in full.

import { type EntryFilter, failed, filterEntries, findEntry } from '../store/ledger/read.ts';
import type { LedgerEntry } from '../model/ledger-entry.ts';
import { readDrops, readEvents, readRuns } from '../store/journal/read.ts';
import { dropOf, type DropRecord } from '../store/journal/pauses.ts';
import type { RunRecord, SessionEvent } from '../model/records.ts';
import { sleep } from '../retry.ts';
import { type Command, COMMON, type Flags } from './command.ts';
import { formatEntry, formatEntryLine } from './entry-text.ts';
import { escapeControls, jsonLine } from '../text.ts';
import { FAILURE, type Io, messagePrefix, USAGE } from './io.ts';
import { FILTER_OPTIONS, filterFrom, ledgerOf } from './ledger-access.ts';
import { replayCommand } from './requests-replay.ts';
import { resolveCommand } from './requests-resolve.ts';
import { openFailures, resolutionFor, type RootRecords, rootResolved, type TakenIds } from './failures.ts';
import { takenByOthers } from './replay-checks.ts';
import { usageLine } from './usage.ts';

/** `hooks-ingress requests [show ID]`. */
export const requests: Command = {
  options: {
    ...COMMON,
    'state-dir': { type: 'string' },
    ...FILTER_OPTIONS,
    json: { type: 'boolean' },
    follow: { type: 'boolean', short: 'f' },
    limit: { type: 'string', short: 'n' },
    yes: { type: 'boolean', short: 'y' },
    force: { type: 'boolean' },
    'dry-run': { type: 'boolean' },
    all: { type: 'boolean' },
  },
  positionals: true,
  help: `Usage: hooks-ingress requests [options]
       hooks-ingress requests show ID [options]
       hooks-ingress requests replay ID... [--force]
       hooks-ingress requests replay FILTERS... [--yes] [--force]
       hooks-ingress requests replay ID... --dry-run
       hooks-ingress requests resolve ID...

List what arrived on the hooks path, oldest first (the newest last): time, status and
error code, hook, entry id, request id, client, and what each request became. Refusals
from one client alike within a window are one entry with a count (xN). Works while the
server runs, and needs no secret.

"show ID" prints one entry in full: headers (credentials redacted), the body (control
characters escaped), the signature's verdict, the outcome, and the runs and events it
produced, and what became of its replays. ID is an entry id, or a request id
(X-Request-Id) that names one entry.

"replay" asks the running server to run stored requests again through its config
of now (the signature checked with today's secrets, but not its timestamp's age)
and to record each as a new entry marked as a replay of the original. A replay of
a replay runs the original: each original runs once per call, and never while
another replay of it runs. With filters instead of ids it first prints how many
match, how many it will replay and how many it skips and why, and replays them
only with --yes. An original that a replay resolved, or that was resolved by
hand, needs --force, and so do one that succeeded and one refused for a signed
timestamp that was too old or new when it arrived.

"resolve" asks the running server to mark failures resolved without replaying
them, for what can never be fixed: --failed lists them no more, and a replay of
them needs --force.

Options:
  -c, --config PATH     config file (for state.dir)
      --state-dir DIR   state directory
      --hook NAME       only requests to this hook
      --status S        only this status (401) or class (4xx)
      --code CODE       only this error code (ERR_UNAUTHORIZED)
      --since T         only from T: an ISO time, or a time back from now (15m, 2h, 7d)
      --until T         only up to T (same forms)
      --failed          only failures (status 400 and above, or a refused signature)
                        not yet resolved, one line per original request
      --all             with --failed: every failure, resolved ones and replays too
      --json            one JSON object per line (the whole entry); show: the entry,
                        its runs and events as one object
  -f, --follow          keep printing new entries as they arrive
  -n, --limit N         only the last N entries
  -y, --yes             replay: go ahead with the entries the filters picked
      --force           replay: also a request that succeeded or was resolved (only
                        those the ids or filters name)
      --dry-run         replay: only show what each request would become now
  -h, --help            show this help
`,
  async run(flags, positionals, io) {
    const [sub, ...ids] = positionals;
    if (sub === undefined) return _list(flags, io);
    if (sub === 'show') {
      if (ids.length !== 1) {
        io.stderr(
          usageLine('requests', ids.length === 0 ? 'show needs an entry id or a request id' : 'show takes one id'),
        );
        return USAGE;
      }
      return _show(flags, ids[0]!, io);
    }
    if (sub === 'replay') return replayCommand(flags, ids, io);
    if (sub === 'resolve') return resolveCommand(flags, ids, io);
    io.stderr(usageLine('requests', `unknown subcommand "${sub}" (known: show, replay, resolve)`));
    return USAGE;
  },
};

async function _list(flags: Flags, io: Io): Promise<number> {
  const limit = flags.limit === undefined ? Infinity : Number(flags.limit);
  if (!(Number.isInteger(limit) && limit >= 0) && limit !== Infinity) {
    io.stderr(usageLine('requests', `--limit must be a whole number, got "${flags.limit}"`));
    return USAGE;
  }
  const filter = filterFrom(flags, Date.now());
  if (typeof filter === 'string') {
    io.stderr(usageLine('requests', filter));
    return USAGE;
  }
  if (flags.all === true && filter.failed !== true) {
    io.stderr(usageLine('requests', '--all widens --failed: use it with --failed'));
    return USAGE;
  }
  const ledger = await ledgerOf(flags, io);
  if (ledger === null) return FAILURE;
  let roots = await ledger.roots();
  let taken: TakenIds = new Map();
  let drops = await readDrops(ledger.dir);
  const print = (entry: LedgerEntry) => {
    const resolution = resolutionFor(entry, roots, taken);
    const dropped = dropOf(drops, entry);
    io.stdout(
      flags.json
        ? jsonLine({
          ...entry,
          ...(resolution === undefined ? {} : { resolution }),
          ...(dropped === undefined ? {} : { dropped }),
        })
        : withDrop(formatEntryLine(entry, resolution), dropped),
    );
  };
  let entries = await ledger.read();
  if (entries === null) return FAILURE;
  // A coalesced entry is printed again when its count grew.
  const shown = new Map<string, number>();
  if (filter.failed === true) taken = await _taken(ledger.dir, entries, roots, taken);
  const matching = _matching(entries, roots, taken, filter, flags.all === true);
  for (const e of matching) shown.set(e.id, e.count ?? 1);
  matching.slice(Math.max(0, matching.length - limit)).forEach(print);
  while (flags.follow && !io.signal?.aborted) {
    await sleep(250, io.signal);
    entries = await ledger.read();
    if (entries === null) return FAILURE;
    roots = await ledger.roots();
    drops = await readDrops(ledger.dir);
    if (filter.failed === true) taken = await _taken(ledger.dir, entries, roots, taken);
    for (const entry of _matching(entries, roots, taken, filter, flags.all === true)) {
      if (shown.get(entry.id) === (entry.count ?? 1)) continue;
      shown.set(entry.id, entry.count ?? 1);
      print(entry);
    }
  }
  return 0;
}

async function _show(flags: Flags, id: string, io: Io): Promise<number> {
  const ledger = await ledgerOf(flags, io);
  if (ledger === null) return FAILURE;
  const entries = await ledger.read();
  if (entries === null) return FAILURE;
  const found = findEntry(entries, id);
  if (!found.ok) {
    io.stderr(`${messagePrefix(io)}: ${escapeControls(found.error, false)}\n`);
    return FAILURE;
  }
  const { entry } = found;
  const { runs, events } = await _produced(ledger.dir, entry);
  const replays = entries.filter((e) => e.replayOf === entry.id);
  const roots = await ledger.roots();
  const taken = failed(entry) ? await takenByOthers(ledger.dir, [entry], entries) : new Map();
  const resolution = resolutionFor(entry, roots, taken);
  const dropped = dropOf(await readDrops(ledger.dir), entry);
  if (flags.json) {
    io.stdout(
      jsonLine({
        entry,
        runs,
        events,
        replays: replays.map((e) => ({ id: e.id, time: e.time, status: e.status })),
        ...(resolution === undefined ? {} : { resolution }),
        ...(dropped === undefined ? {} : { dropped }),
      }),
    );
    return 0;
  }
  io.stdout(formatEntry(entry, { runs, events, replays, ...(resolution === undefined ? {} : { resolution }) }));
  if (dropped !== undefined) io.stdout(`${escapeControls(droppedText(dropped), false)}\n`);
  return 0;
}

/** What a drop record says of its request: its waiting work discarded while its hook was paused. */
export function droppedText(drop: DropRecord): string {
  return `dropped at ${drop.time}: its waiting work was discarded while hook ${drop.hook} was paused`;
}

// An entry's list line with its drop, if its work was dropped.
function withDrop(line: string, drop: DropRecord | undefined): string {
  return drop === undefined
    ? line
    : `${line.slice(0, -1)}  ${escapeControls(`dropped (${drop.hook} paused)`, false)}\n`;
}

// The entries the filters pick; with --failed, one per original still unresolved (every failure with --all).
function _matching(
  entries: LedgerEntry[],
  roots: RootRecords,
  taken: TakenIds,
  filter: EntryFilter,
  all: boolean,
): LedgerEntry[] {
  const matching = filterEntries(entries, filter);
  return filter.failed === true ? openFailures(matching, { entries, roots, taken }, all) : matching;
}

// The failures whose delivery id another request took, asked of the running server for those not
// asked about before (a followed list asks for the new ones only); without a server, none.
async function _taken(dir: string, entries: LedgerEntry[], roots: RootRecords, known: TakenIds): Promise<TakenIds> {
  const asked = new Set(known.keys());
  const open = entries.filter((e) => failed(e) && !asked.has(e.id) && !rootResolved(e, { entries, roots }));
  if (open.length === 0) return known;
  return new Map([...known, ...(await takenByOthers(dir, open, entries))]);
}

// The runs and events an entry's request made, as the journal holds them now.
async function _produced(dir: string, entry: LedgerEntry): Promise<{ runs: RunRecord[]; events: SessionEvent[] }> {
  const runIds = new Set([...(entry.became?.runs ?? []), ...(entry.became?.joined ?? [])]);
  const seqs = new Set(entry.became?.events ?? []);
  if (runIds.size === 0 && seqs.size === 0) return { runs: [], events: [] };
  const [runs, events] = await Promise.all([
    runIds.size === 0 ? [] : readRuns(dir),
    seqs.size === 0 ? [] : readEvents(dir),
  ]);
  return { runs: runs.filter((r) => runIds.has(r.runId)), events: events.filter((e) => seqs.has(e.seq)) };
}
