// How `hooks-ingress requests` shows a ledger entry on a terminal. Everything that came with the
// request (hook name, headers, body, error text) is the sender's: control characters are escaped.
import { bodyBytes, failed } from '../store/ledger/read.ts';
import type { LedgerEntry } from '../model/ledger-entry.ts';
import type { RunRecord, SessionEvent } from '../model/records.ts';
import { formatEvent } from './event-text.ts';
import { clip, escapeControls } from '../text.ts';
import { describeCause } from '../model/cause.ts';
import { describeResolution, type Resolution } from '../model/replays.ts';
import { formatRun } from './listing.ts';

/** One entry as a line of the list: time, status, code, hook, ids, client, count, what it became, what its root came to. */
export function formatEntryLine(entry: LedgerEntry, resolution?: Resolution): string {
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
  const cause = _cause(entry);
  if (cause !== null) parts.push(clip(cause, _CAUSE_IN_LINE));
  if (entry.replayOf !== undefined) parts.push(`replay of ${entry.replayOf}`);
  if (resolution !== undefined) parts.push(describeResolution(resolution));
  return `${escapeControls(parts.join('  '), false)}\n`;
}

/** What a request became, in a few words (`''` when nothing). */
export function describeBecame(entry: LedgerEntry): string {
  const b = entry.became;
  if (b === undefined) return '';
  const out: string[] = [];
  if (b.events !== undefined) out.push(`event${b.events.length > 1 ? 's' : ''} ${b.events.join(',')}`);
  if (b.runs !== undefined) out.push(`run${b.runs.length > 1 ? 's' : ''} ${b.runs.join(',')}`);
  if (b.joined !== undefined) out.push(`joined run${b.joined.length > 1 ? 's' : ''} ${b.joined.join(',')} (coalesced)`);
  if (b.deliveries !== undefined) {
    out.push(`notify deliver${b.deliveries.length > 1 ? 'ies' : 'y'} ${b.deliveries.join(',')}`);
  }
  if (b.outbox !== undefined) out.push(`outbox ${b.outbox.join(',')}`);
  if (b.duplicateOf !== undefined) {
    out.push(`duplicate of ${b.duplicateOf === '' ? 'an earlier request' : `request ${b.duplicateOf}`}`);
  }
  if (b.ignored === true) out.push(entry.cause?.kind === 'filter' ? describeCause(entry.cause) : 'ignored by filter');
  if (b.skipped === true) out.push('skipped by transform');
  if (b.limited === true) out.push('dropped by its rate limit');
  if (b.heldUntil !== undefined) out.push(`held until ${b.heldUntil}`);
  if (b.handshake !== undefined) out.push(`${b.handshake} handshake`);
  return out.join('; ');
}

/** One entry in full, safe for a terminal: every text from the request has its control characters escaped. */
export function formatEntry(entry: LedgerEntry, produced: _Produced): string {
  let out = _rows(entry, produced).map(([k, v]) => `${k.padEnd(11)} ${escapeControls(v, false)}\n`).join('');
  out += entry.headersTruncated === true ? 'headers (those past 2 KiB left out):\n' : 'headers:\n';
  for (const [name, value] of Object.entries(entry.headers)) {
    for (const one of Array.isArray(value) ? value : [value]) {
      out += `  ${escapeControls(name, false)}: ${escapeControls(one, false)}\n`;
    }
  }
  out += _body(entry);
  if (produced.runs.length > 0) out += `runs:\n${produced.runs.map((r) => _indent(formatRun(r))).join('')}`;
  if (produced.events.length > 0) out += `events:\n${produced.events.map((e) => _indent(formatEvent(e))).join('')}`;
  return out;
}

/** What a request produced: its runs and events, its replays, and its root's resolution. */
type _Produced = {
  runs: readonly RunRecord[];
  events: readonly SessionEvent[];
  replays?: readonly LedgerEntry[];
  resolution?: Resolution;
};

// The entry's `name value` rows, before its headers: the request, its verdicts, what it became and
// why, its history, and the commands that replay or resolve a failed one.
function _rows(entry: LedgerEntry, produced: _Produced): [string, string][] {
  const lines: [string, string][] = [
    ['entry', entry.id],
    ['request id', entry.requestId],
    [
      'time',
      `${entry.time}${(entry.count ?? 1) > 1 ? ` (x${entry.count}, the last at ${entry.lastTime ?? entry.time})` : ''}`,
    ],
    ['request', `${entry.method} ${entry.path}${entry.query === undefined ? '' : `?${entry.query}`}`],
    ['hook', `${entry.hook ?? '-'}${entry.mapping === undefined ? '' : ` (mapping ${entry.mapping})`}`],
    ['client', entry.client],
    ['auth', entry.auth === 'none' ? 'not authenticated' : entry.auth === 'token' ? 'token' : 'signature'],
  ];
  const sig = entry.signature;
  if (sig !== undefined) {
    lines.push([
      'signature',
      sig.ok
        ? `${sig.scheme}: ok`
        : `${sig.scheme}: refused, ${sig.why ?? 'invalid'}${
          sig.skewSeconds === undefined
            ? ''
            : ` (timestamp ${Math.abs(sig.skewSeconds)} s ${sig.skewSeconds >= 0 ? 'in the past' : 'in the future'})`
        }${sig.reason === undefined ? '' : `: ${sig.reason}`}`,
    ]);
  }
  lines.push([
    'status',
    `${entry.status}${entry.code === undefined ? '' : ` ${entry.code}`}${
      entry.error === undefined ? '' : `: ${entry.error}`
    }`,
  ]);
  const became = describeBecame(entry);
  if (became !== '') lines.push(['became', became]);
  const cause = _cause(entry);
  if (cause !== null) lines.push(['cause', cause]);
  if (entry.replayOf !== undefined) lines.push(['replay of', entry.replayOf]);
  lines.push(..._history(produced));
  lines.push(['took', `${entry.durationMs} ms`]);
  if (
    failed(entry) && entry.body !== undefined &&
    (produced.resolution === undefined || produced.resolution.state === 'failed')
  ) {
    lines.push(['replay', `hooks-ingress requests replay ${entry.id}`], [
      'or resolve',
      `hooks-ingress requests resolve ${entry.id}`,
    ]);
  }
  return lines;
}

// The most of a cause the list's line shows; `show` has all of it.
const _CAUSE_IN_LINE = 160;

// The cause in words, unless what it became says it already (a filter, a duplicate).
function _cause(entry: Pick<LedgerEntry, 'cause'>): string | null {
  const { cause } = entry;
  return cause === undefined || cause.kind === 'filter' || cause.kind === 'duplicate' ? null : describeCause(cause);
}

// What the root came to, and its replays: from the journal's record, or (a record older than it)
// the replays the ledger still holds.
function _history(produced: { replays?: readonly LedgerEntry[]; resolution?: Resolution }): [string, string][] {
  const { resolution } = produced;
  if (resolution === undefined) {
    return (produced.replays ?? []).map((r) => ['replayed', `${r.id} at ${r.time}: ${r.status}`]);
  }
  const lines: [string, string][] = [[
    'resolution',
    `${describeResolution(resolution)}${resolution.resolvedAt === undefined ? '' : ` at ${resolution.resolvedAt}`}`,
  ]];
  for (const r of resolution.replays) {
    lines.push(['replayed', `${r.entry ?? `request ${r.requestId}`} at ${r.time}: ${r.status}`]);
  }
  for (const r of resolution.retries ?? []) lines.push(['retried', `run ${r.run} as ${r.as} at ${r.time}`]);
  return lines;
}

function _body(entry: LedgerEntry): string {
  const body = entry.body;
  if (body === undefined) return `body: not kept (${_omitted(entry.bodyOmitted)})\n`;
  const kept = bodyBytes(body);
  const head = `body: ${body.bytes} bytes${body.truncated ? `, the first ${kept.length} kept (truncated)` : ''}`;
  if (body.encoding === 'base64') {
    return `${head}, not text; base64:\n${_indent(`${body.data.replace(/(.{76})/g, '$1\n')}\n`)}`;
  }
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
