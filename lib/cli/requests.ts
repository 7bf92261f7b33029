import { filterEntries, findEntry } from '../store/ledger/read.ts';
import type { LedgerEntry } from '../model/ledger-entry.ts';
import { readEvents, readRuns } from '../store/journal/read.ts';
import type { RunRecord, SessionEvent } from '../model/records.ts';
import { sleep } from '../retry.ts';
import { COMMON, type Command, type Flags } from './command.ts';
import { formatEntry, formatEntryLine } from './entry-text.ts';
import { escapeControls, jsonLine } from '../text.ts';
import { FAILURE, messagePrefix, USAGE, type Io } from './io.ts';
import { FILTER_OPTIONS, filterFrom, ledgerOf } from './ledger-access.ts';
import { replayCommand } from './requests-replay.ts';
import { usageLine } from './usage.ts';

// `hooks-ingress requests`: the request ledger, read from the state directory (it works while
// the server runs, and needs no secret): the list with its filters, and one entry in full.

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
  },
  positionals: true,
  help: `Usage: hooks-ingress requests [options]
       hooks-ingress requests show ID [options]
       hooks-ingress requests replay ID... [--force]
       hooks-ingress requests replay FILTERS... [--yes] [--force]
       hooks-ingress requests replay ID... --dry-run

List what arrived on the hooks path, oldest first (the newest last): time, status and
error code, hook, entry id, request id, client, and what each request became. Refusals
from one client alike within a window are one entry with a count (xN). Works while the
server runs, and needs no secret.

"show ID" prints one entry in full: headers (credentials redacted), the body (control
characters escaped), the signature's verdict, the outcome, and the runs and events it
produced. ID is an entry id, or a request id (X-Request-Id) that names one entry.

"replay" asks the running server to run stored requests again through its config
of now (the signature checked with today's secrets, but not its timestamp's age)
and to record each as a new entry marked as a replay. With filters instead of ids
it first prints how many match and what they are, and replays them only with
--yes. A request that succeeded, or whose replay succeeded, needs --force, and so
does one refused for a signed timestamp that was too old or new when it arrived.

Options:
  -c, --config PATH     config file (for state.dir)
      --state-dir DIR   state directory
      --hook NAME       only requests to this hook
      --status S        only this status (401) or class (4xx)
      --code CODE       only this error code (ERR_UNAUTHORIZED)
      --since T         only from T: an ISO time, or a time back from now (15m, 2h, 7d)
      --until T         only up to T (same forms)
      --failed          only failures (status 400 and above, or a refused signature)
      --json            one JSON object per line (the whole entry); show: the entry,
                        its runs and events as one object
  -f, --follow          keep printing new entries as they arrive
  -n, --limit N         only the last N entries
  -y, --yes             replay: go ahead with the entries the filters picked
      --force           replay: also a request that succeeded, or was replayed with success
      --dry-run         replay: only show what each request would become now
  -h, --help            show this help
`,
  async run(flags, positionals, io) {
    const [sub, ...ids] = positionals;
    if (sub === undefined) return _list(flags, io);
    if (sub === 'show') {
      if (ids.length !== 1) {
        io.stderr(usageLine('requests', ids.length === 0 ? 'show needs an entry id or a request id' : 'show takes one id'));
        return USAGE;
      }
      return _show(flags, ids[0]!, io);
    }
    if (sub === 'replay') return replayCommand(flags, ids, io);
    io.stderr(usageLine('requests', `unknown subcommand "${sub}" (known: show, replay)`));
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
  const ledger = await ledgerOf(flags, io);
  if (ledger === null) return FAILURE;
  const print = (entry: LedgerEntry) => io.stdout(flags.json ? jsonLine(entry) : formatEntryLine(entry));
  let entries = await ledger.read();
  if (entries === null) return FAILURE;
  // A coalesced entry is printed again when its count grew.
  const shown = new Map<string, number>();
  const matching = filterEntries(entries, filter);
  for (const e of matching) shown.set(e.id, e.count ?? 1);
  matching.slice(Math.max(0, matching.length - limit)).forEach(print);
  while (flags.follow && !io.signal?.aborted) {
    await sleep(250, io.signal);
    entries = await ledger.read();
    if (entries === null) return FAILURE;
    for (const entry of filterEntries(entries, filter)) {
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
  if (flags.json) {
    io.stdout(jsonLine({ entry, runs, events, replays: replays.map((e) => ({ id: e.id, time: e.time, status: e.status })) }));
    return 0;
  }
  io.stdout(formatEntry(entry, { runs, events, replays }));
  return 0;
}

// The runs and events an entry's request made, as the journal holds them now.
async function _produced(dir: string, entry: LedgerEntry): Promise<{ runs: RunRecord[]; events: SessionEvent[] }> {
  const runIds = new Set(entry.became?.runs ?? []);
  const seqs = new Set(entry.became?.events ?? []);
  if (runIds.size === 0 && seqs.size === 0) return { runs: [], events: [] };
  const [runs, events] = await Promise.all([runIds.size === 0 ? [] : readRuns(dir), seqs.size === 0 ? [] : readEvents(dir)]);
  return { runs: runs.filter((r) => runIds.has(r.runId)), events: events.filter((e) => seqs.has(e.seq)) };
}

