import { open, readdir } from 'node:fs/promises';
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
export function readLedger(stateDir: string, onDamaged?: (damaged: DamagedLine) => void): Promise<LedgerEntry[]> {
  return new LedgerTail(stateDir, onDamaged).entries();
}

// Follows a state directory's request ledger from its files: each read takes only what was
// appended to a segment since the last one, and forgets the segments the writer has trimmed. An
// open inspector page asks every second or two; re-reading the whole ledger each time would cost
// the server in proportion to the ledger, not to the traffic.

interface _Segment {
  /** Bytes read so far: always just after a newline, so a line still being written is read whole later. */
  offset: number;
  /** Lines read so far, for the line numbers of damaged ones. */
  lines: number;
  ids: string[];
}

/** The ledger's entries, kept up to date from the files by {@link LedgerTail.entries}. */
export class LedgerTail {
  readonly #dir: string;
  readonly #onDamaged: ((damaged: DamagedLine) => void) | undefined;
  readonly #segments = new Map<string, _Segment>();
  readonly #byId = new Map<string, LedgerEntry>();
  #sorted: LedgerEntry[] = [];
  #reading: Promise<LedgerEntry[]> | null = null;

  constructor(stateDir: string, onDamaged?: (damaged: DamagedLine) => void) {
    this.#dir = join(stateDir, LEDGER_DIR);
    this.#onDamaged = onDamaged;
  }

  /**
   * Every entry, oldest first, with the counts of coalesced entries applied, as the files hold them
   * now. Calls made while a read is under way share it. A damaged line is left out (and passed to
   * `onDamaged`, once); an unreadable folder or file is a {@link LedgerUnreadableError}.
   */
  entries(): Promise<LedgerEntry[]> {
    this.#reading ??= this.#read().finally(() => (this.#reading = null));
    return this.#reading;
  }

  async #read(): Promise<LedgerEntry[]> {
    let names: string[];
    try {
      names = await readdir(this.#dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new LedgerUnreadableError(`cannot read the request ledger ${this.#dir}: ${_code(error)}`, { cause: error });
      names = [];
    }
    const present = names
      .map((name) => ({ name, m: SEGMENT.exec(name) }))
      .filter((s): s is { name: string; m: RegExpExecArray } => s.m !== null)
      .sort((a, b) => Number(a.m[2]) - Number(b.m[2]))
      .map((s) => s.name);
    let changed = false;
    const kept = new Set(present);
    for (const [name, segment] of this.#segments) {
      if (kept.has(name)) continue;
      this.#forget(segment);
      this.#segments.delete(name);
      changed = true;
    }
    for (const name of present) changed = (await this.#follow(name)) || changed;
    if (changed) this.#sorted = [...this.#byId.values()].sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
    return this.#sorted;
  }

  // Reads what a segment gained since the last read; answers whether anything changed.
  async #follow(name: string): Promise<boolean> {
    const file = join(this.#dir, name);
    try {
      return await this.#append(name, file);
    } catch (error) {
      // Trimmed by the server between the listing and the read: its entries are gone, as they should be.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw new LedgerUnreadableError(`cannot read the request ledger file ${file}: ${_code(error)}`, { cause: error });
    }
  }

  async #append(name: string, file: string): Promise<boolean> {
    let segment = this.#segments.get(name);
    const handle = await open(file, 'r');
    try {
      const { size } = await handle.stat();
      // A file shorter than what was read is not the one read before: start it again.
      if (segment !== undefined && size < segment.offset) {
        this.#forget(segment);
        segment = undefined;
      }
      if (segment === undefined) {
        segment = { offset: 0, lines: 0, ids: [] };
        this.#segments.set(name, segment);
      }
      if (size === segment.offset) return false;
      const buffer = Buffer.alloc(size - segment.offset);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, segment.offset);
      const end = buffer.lastIndexOf(0x0a, bytesRead - 1);
      // No whole line yet: the writer is in the middle of one.
      if (end === -1) return false;
      segment.offset += end + 1;
      this.#parse(buffer.toString('utf8', 0, end), file, segment);
      return true;
    } finally {
      await handle.close();
    }
  }

  #parse(text: string, file: string, segment: _Segment): void {
    for (const raw of text.split('\n')) {
      const line = ++segment.lines;
      if (raw === '') continue;
      let value: unknown;
      try {
        value = JSON.parse(raw);
      } catch {
        this.#onDamaged?.({ file, line, problem: 'not JSON' });
        continue;
      }
      const checked = checkLedgerLine(value);
      if (checked.kind === 'bad') {
        this.#onDamaged?.({ file, line, problem: checked.problem });
      } else if (checked.kind === 'entry') {
        if (this.#byId.has(checked.entry.id)) continue;
        this.#byId.set(checked.entry.id, checked.entry);
        segment.ids.push(checked.entry.id);
      } else {
        const entry = this.#byId.get(checked.count.id);
        if (entry !== undefined && checked.count.count > (entry.count ?? 1)) Object.assign(entry, { count: checked.count.count, lastTime: checked.count.lastTime });
      }
    }
  }

  #forget(segment: _Segment): void {
    for (const id of segment.ids) this.#byId.delete(id);
  }
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
