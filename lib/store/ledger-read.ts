import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { checkLedgerLine, LEDGER_DIR, SEGMENT, type LedgerEntry, type StoredBody } from './ledger-entry.ts';

// Reading the request ledger without opening it for writing: for `hooks-ingress requests`, the
// inspector and the server's replay. The reader needs no config and no secret, only the files.

export type { Became, BodyOmitted, LedgerEntry, SignatureVerdict, StoredBody } from './ledger-entry.ts';

/** A line of a ledger file left out, and why. */
export interface DamagedLine {
  file: string;
  line: number;
  problem: string;
}

/** The ledger cannot be read at all (not a damaged line: the folder or a file is unreadable). */
export class LedgerUnreadableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LedgerUnreadableError';
  }
}

/**
 * Every entry of a state directory's ledger, oldest first, with the counts of coalesced entries
 * applied. A line that is not a ledger line is left out and passed to `onDamaged`; an unreadable
 * folder or file is a {@link LedgerUnreadableError} with a one-line message. No ledger: no entries.
 */
export async function readLedger(stateDir: string, onDamaged?: (damaged: DamagedLine) => void): Promise<LedgerEntry[]> {
  const dir = join(stateDir, LEDGER_DIR);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new LedgerUnreadableError(`cannot read the request ledger ${dir}: ${_code(error)}`, { cause: error });
  }
  const segments = names
    .map((name) => ({ name, m: SEGMENT.exec(name) }))
    .filter((s): s is { name: string; m: RegExpExecArray } => s.m !== null)
    .sort((a, b) => Number(a.m[2]) - Number(b.m[2]));
  const entries: LedgerEntry[] = [];
  const byId = new Map<string, LedgerEntry>();
  for (const { name } of segments) {
    const file = join(dir, name);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      // Trimmed by the server between the listing and the read: its entries are gone, as they should be.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new LedgerUnreadableError(`cannot read the request ledger file ${file}: ${_code(error)}`, { cause: error });
    }
    const lines = text.split('\n');
    // The last piece is '' after a final newline, or a line still being written (or torn by a crash): not damage.
    for (let i = 0; i < lines.length - 1; i++) {
      const raw = lines[i]!;
      if (raw === '') continue;
      let value: unknown;
      try {
        value = JSON.parse(raw);
      } catch {
        onDamaged?.({ file, line: i + 1, problem: 'not JSON' });
        continue;
      }
      const checked = checkLedgerLine(value);
      if (checked.kind === 'bad') {
        onDamaged?.({ file, line: i + 1, problem: checked.problem });
      } else if (checked.kind === 'entry') {
        if (byId.has(checked.entry.id)) continue;
        byId.set(checked.entry.id, checked.entry);
        entries.push(checked.entry);
      } else {
        const entry = byId.get(checked.count.id);
        if (entry !== undefined && checked.count.count > (entry.count ?? 1)) Object.assign(entry, { count: checked.count.count, lastTime: checked.count.lastTime });
      }
    }
  }
  // Two lanes, each in order: merged by time, stable within a lane.
  return entries.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
}

/** The entry an entry id names, or the one entry a request id names; else why not. */
export function findEntry(entries: readonly LedgerEntry[], id: string): { ok: true; entry: LedgerEntry } | { ok: false; error: string } {
  const own = entries.find((e) => e.id === id);
  if (own !== undefined) return { ok: true, entry: own };
  const named = entries.filter((e) => e.requestId === id);
  if (named.length === 1) return { ok: true, entry: named[0]! };
  if (named.length > 1) return { ok: false, error: `request id ${JSON.stringify(id)} names ${named.length} entries; use an entry id (${named.map((e) => e.id).slice(0, 3).join(', ')}${named.length > 3 ? ', ...' : ''})` };
  return { ok: false, error: `no request ledger entry has the id ${JSON.stringify(id)} (an entry id or a request id; it may have been trimmed)` };
}

/** What `requests` filters by; every field given must hold. */
export interface EntryFilter {
  hook?: string;
  /** An exact status (`401`) or a class (`4` for `4xx`). */
  status?: { exact: number } | { class: number };
  code?: string;
  /** ISO times or epoch ms, inclusive. */
  since?: number;
  until?: number;
  /** Only entries that did not succeed: a status of 400 and above, or a refused signature. */
  failed?: boolean;
}

/** Parses `401`, `4xx` (or `4XX`) into a status filter; `null` when it is neither. */
export function parseStatus(text: string): NonNullable<EntryFilter['status']> | null {
  const exact = /^[1-5]\d\d$/.exec(text);
  if (exact !== null) return { exact: Number(text) };
  const klass = /^([1-5])xx$/i.exec(text);
  return klass === null ? null : { class: Number(klass[1]) };
}

/** Parses a time filter: an ISO date or date-time, or a duration back from `now` (`90s`, `15m`, `2h`, `7d`); `null` when neither. */
export function parseTime(text: string, now: number): number | null {
  const ago = /^(\d+)(s|m|h|d)$/.exec(text);
  if (ago !== null) return now - Number(ago[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[ago[2] as 's' | 'm' | 'h' | 'd'];
  if (!/^\d{4}-\d{2}-\d{2}/.test(text)) return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : ms;
}

/** Whether an entry did not succeed (what `--failed` lists). */
export function failed(entry: LedgerEntry): boolean {
  return entry.status >= 400 || entry.signature?.ok === false;
}

/** The entries that hold to every part of `filter`, in order. */
export function filterEntries(entries: readonly LedgerEntry[], filter: EntryFilter): LedgerEntry[] {
  const { hook, status, code, since, until } = filter;
  return entries.filter((e) => {
    if (hook !== undefined && e.hook !== hook) return false;
    if (status !== undefined && ('exact' in status ? e.status !== status.exact : Math.floor(e.status / 100) !== status.class)) return false;
    if (code !== undefined && e.code !== code) return false;
    if (filter.failed === true && !failed(e)) return false;
    if (since === undefined && until === undefined) return true;
    const time = Date.parse(e.lastTime ?? e.time);
    return (since === undefined || time >= since) && (until === undefined || Date.parse(e.time) <= until);
  });
}

/** The stored bytes of a body. */
export function bodyBytes(body: StoredBody): Buffer {
  return body.encoding === 'utf8' ? Buffer.from(body.data, 'utf8') : Buffer.from(body.data, 'base64');
}

function _code(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  return e.code ?? String(error);
}
