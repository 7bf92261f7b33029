import { failed, filterEntries, findEntry, parseStatus, parseTime, readLedger, bodyBytes, LedgerUnreadableError, type DamagedLine, type EntryFilter, type LedgerEntry } from '../store/ledger-read.ts';
import { readEvents, readRuns, type RunRecord, type SessionEvent } from '../store/store.ts';
import { sleep } from '../retry.ts';
import { COMMON, type Command, type Flags } from './command.ts';
import { escapeControls, formatEvent } from './event-text.ts';
import { exists, FAILURE, messagePrefix, USAGE, type Io } from './io.ts';
import { formatRun } from './listing.ts';
import { stateDirFor } from './load-config.ts';
import { usageLine } from './usage.ts';

// `hooks-ingress requests`: the request ledger, read from the state directory (it works while
// the server runs, and needs no secret): the list with its filters, and one entry in full.

/** The options every `requests` subcommand takes to pick entries. */
export const FILTER_OPTIONS = {
  hook: { type: 'string' },
  status: { type: 'string' },
  code: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  failed: { type: 'boolean' },
} as const;

/** `hooks-ingress requests [show ID]`. */
export const requests: Command = {
  options: {
    ...COMMON,
    'state-dir': { type: 'string' },
    ...FILTER_OPTIONS,
    json: { type: 'boolean' },
    follow: { type: 'boolean', short: 'f' },
    limit: { type: 'string', short: 'n' },
  },
  positionals: true,
  help: `Usage: hooks-ingress requests [options]
       hooks-ingress requests show ID [options]

List what arrived on the hooks path, oldest first (the newest last): time, status and
error code, hook, entry id, request id, client, and what each request became. Refusals
from one client alike within a window are one entry with a count (xN). Works while the
server runs, and needs no secret.

"show ID" prints one entry in full: headers (credentials redacted), the body (control
characters escaped), the signature's verdict, the outcome, and the runs and events it
produced. ID is an entry id, or a request id (X-Request-Id) that names one entry.

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
    io.stderr(usageLine('requests', `unknown subcommand "${sub}" (known: show, replay)`));
    return USAGE;
  },
};

/** The filter the flags name, or a usage problem. */
export function filterFrom(flags: Flags, now: number): EntryFilter | string {
  const filter: EntryFilter = {};
  if (flags.hook !== undefined) filter.hook = flags.hook;
  if (flags.code !== undefined) {
    if (!/^ERR_[A-Z_]+$/.test(flags.code)) return `--code must be an error code such as ERR_UNAUTHORIZED, got "${flags.code}"`;
    filter.code = flags.code;
  }
  if (flags.status !== undefined) {
    const status = parseStatus(flags.status);
    if (status === null) return `--status must be a status such as 401 or a class such as 4xx, got "${flags.status}"`;
    filter.status = status;
  }
  for (const key of ['since', 'until'] as const) {
    const text = flags[key];
    if (text === undefined) continue;
    const time = parseTime(text, now);
    if (time === null) return `--${key} must be an ISO time (2026-11-26T10:00Z) or a time back from now (15m, 2h, 7d), got "${text}"`;
    filter[key] = time;
  }
  if (flags.failed === true) filter.failed = true;
  return filter;
}

/** Reads the ledger of the state directory the flags name; `null` after saying why not (stderr). */
export async function ledgerOf(flags: Flags, io: Io): Promise<{ dir: string; read: () => Promise<LedgerEntry[] | null> } | null> {
  const dir = await stateDirFor(flags, io);
  if (dir === null) return null;
  if (!(await exists(dir))) {
    io.stderr(`${messagePrefix(io)}: state directory ${dir} does not exist (no server has used it)\n`);
    return null;
  }
  const said = new Set<string>();
  const damaged = ({ file, line, problem }: DamagedLine) => {
    const key = `${file}:${line}`;
    if (said.has(key)) return;
    said.add(key);
    io.stderr(`${messagePrefix(io)}: ledger file ${file} line ${line} skipped: ${escapeControls(problem, false)}\n`);
  };
  const read = async () => {
    try {
      return await readLedger(dir, damaged);
    } catch (error) {
      if (!(error instanceof LedgerUnreadableError)) throw error;
      io.stderr(`${messagePrefix(io)}: ${error.message}\n`);
      return null;
    }
  };
  return { dir, read };
}

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
  const print = (entry: LedgerEntry) => io.stdout(flags.json ? `${JSON.stringify(entry)}\n` : formatEntryLine(entry));
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
    io.stdout(`${JSON.stringify({ entry, runs, events, replays: replays.map((e) => ({ id: e.id, time: e.time, status: e.status })) })}\n`);
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

/** One entry as a line of the list: time, status, code, hook, ids, client, count, what it became. */
export function formatEntryLine(entry: LedgerEntry): string {
  const parts = [
    entry.time,
    String(entry.status),
    entry.code ?? '-',
    `${entry.method} ${entry.hook === undefined ? entry.path : entry.hook === '' ? '(base path)' : entry.hook}`,
    entry.id,
    `request=${entry.requestId}`,
    entry.client,
  ];
  if ((entry.count ?? 1) > 1) parts.push(`x${entry.count} until ${entry.lastTime ?? entry.time}`);
  if (entry.signature !== undefined && !entry.signature.ok) parts.push(`signature ${entry.signature.why ?? 'refused'}`);
  const became = describeBecame(entry);
  if (became !== '') parts.push(became);
  if (entry.replayOf !== undefined) parts.push(`replay of ${entry.replayOf}`);
  return `${escapeControls(parts.join('  '), false)}\n`;
}

/** What a request became, in a few words (`''` when nothing). */
export function describeBecame(entry: LedgerEntry): string {
  const b = entry.became;
  if (b === undefined) return '';
  const out: string[] = [];
  if (b.events !== undefined) out.push(`event${b.events.length > 1 ? 's' : ''} ${b.events.join(',')}`);
  if (b.runs !== undefined) out.push(`run${b.runs.length > 1 ? 's' : ''} ${b.runs.join(',')}`);
  if (b.outbox !== undefined) out.push(`outbox ${b.outbox.join(',')}`);
  if (b.duplicateOf !== undefined) out.push(`duplicate of ${b.duplicateOf === '' ? 'an earlier request' : `request ${b.duplicateOf}`}`);
  if (b.ignored === true) out.push('ignored by filter');
  if (b.skipped === true) out.push('skipped by transform');
  if (b.handshake !== undefined) out.push(`${b.handshake} handshake`);
  return out.join('; ');
}

/** One entry in full, safe for a terminal: every text from the request has its control characters escaped. */
export function formatEntry(entry: LedgerEntry, produced: { runs: readonly RunRecord[]; events: readonly SessionEvent[]; replays?: readonly LedgerEntry[] }): string {
  const lines: [string, string][] = [
    ['entry', entry.id],
    ['request id', entry.requestId],
    ['time', `${entry.time}${(entry.count ?? 1) > 1 ? ` (x${entry.count}, the last at ${entry.lastTime ?? entry.time})` : ''}`],
    ['request', `${entry.method} ${entry.path}${entry.query === undefined ? '' : `?${entry.query}`}`],
    ['hook', `${entry.hook ?? '-'}${entry.mapping === undefined ? '' : ` (mapping ${entry.mapping})`}`],
    ['client', entry.client],
    ['auth', entry.auth === 'none' ? 'not authenticated' : entry.auth === 'token' ? 'token' : 'signature'],
  ];
  const sig = entry.signature;
  if (sig !== undefined) {
    lines.push(['signature', sig.ok ? `${sig.scheme}: ok` : `${sig.scheme}: refused, ${sig.why ?? 'invalid'}${sig.skewSeconds === undefined ? '' : ` (timestamp ${Math.abs(sig.skewSeconds)} s ${sig.skewSeconds >= 0 ? 'in the past' : 'in the future'})`}${sig.reason === undefined ? '' : `: ${sig.reason}`}`]);
  }
  lines.push(['status', `${entry.status}${entry.code === undefined ? '' : ` ${entry.code}`}${entry.error === undefined ? '' : `: ${entry.error}`}`]);
  const became = describeBecame(entry);
  if (became !== '') lines.push(['became', became]);
  if (entry.replayOf !== undefined) lines.push(['replay of', entry.replayOf]);
  for (const replay of produced.replays ?? []) lines.push(['replayed', `${replay.id} at ${replay.time}: ${replay.status}`]);
  lines.push(['took', `${entry.durationMs} ms`]);
  if (failed(entry) && entry.body !== undefined) lines.push(['replay', `hooks-ingress requests replay ${entry.id}`]);
  let out = lines.map(([k, v]) => `${k.padEnd(11)} ${escapeControls(v, false)}\n`).join('');
  out += 'headers:\n';
  for (const [name, value] of Object.entries(entry.headers)) {
    for (const one of Array.isArray(value) ? value : [value]) out += `  ${escapeControls(name, false)}: ${escapeControls(one, false)}\n`;
  }
  out += _body(entry);
  if (produced.runs.length > 0) out += `runs:\n${produced.runs.map((r) => _indent(formatRun(r))).join('')}`;
  if (produced.events.length > 0) out += `events:\n${produced.events.map((e) => _indent(formatEvent(e))).join('')}`;
  return out;
}

function _body(entry: LedgerEntry): string {
  const body = entry.body;
  if (body === undefined) return `body: not kept (${_omitted(entry.bodyOmitted)})\n`;
  const kept = bodyBytes(body);
  const head = `body: ${body.bytes} bytes${body.truncated ? `, the first ${kept.length} kept (truncated)` : ''}`;
  if (body.encoding === 'base64') return `${head}, not text; base64:\n${_indent(`${body.data.replace(/(.{76})/g, '$1\n')}\n`)}`;
  return `${head}:\n${_indent(`${escapeControls(_pretty(body.data, body.truncated), true)}\n`)}`;
}

// JSON is shown indented; anything else (a form, a cut body) as it is.
function _pretty(text: string, truncated: boolean): string {
  if (truncated || !/^\s*[{[]/.test(text)) return text;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function _omitted(why: LedgerEntry['bodyOmitted']): string {
  switch (why) {
    case 'opted-out':
      return "the mapping's ledgerBody is false";
    case 'metadata-only':
      return 'a refused or unmatched request keeps metadata only';
    case 'ledger-cap':
      return 'over the ledger cap';
    default:
      return 'the body was not read';
  }
}

function _indent(text: string): string {
  return text.replace(/^(?=.)/gm, '  ');
}
