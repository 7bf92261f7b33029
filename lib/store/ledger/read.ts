// Reading the request ledger without opening it for writing: for `hooks-ingress requests`, the
// inspector and the server's replay. The reader needs no config and no secret, only the files.

import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { ErrorCode } from '../../errors.ts';
import type { LedgerEntry, StoredBody } from '../../model/ledger-entry.ts';
import { type CheckedLedgerLine, checkLedgerLine, type CountLine, LEDGER_DIR, openSegment, SEGMENT } from './entry.ts';

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
// open inspector page asks for the newest entries every second or two, and under load thousands
// arrive between two asks: what is kept of each line is where it starts, and a line is read again,
// decoded and parsed only when first needed, once. Decoding and keeping every appended line as
// text cost the server in proportion to its traffic rather than to what the page shows.

interface _Segment {
  file: string;
  lane: string;
  number: number;
  /** Bytes read so far: always just after a newline, so a line still being written is read whole later. */
  offset: number;
  /** Where each whole line starts; it ends at the next one's start (or `offset`), with its newline. */
  starts: number[];
  /** Each line once checked, by its index; `undefined` until then. */
  checked: (CheckedLedgerLine | null | undefined)[];
  /** The text of the lines last read again, from line `from` on, until the next ones are needed. */
  window: { from: number; lines: string[] } | null;
}

/** The ledger's entries, kept up to date from the files. */
export class LedgerTail {
  readonly #dir: string;
  readonly #onDamaged: ((damaged: DamagedLine) => void) | undefined;
  readonly #segments = new Map<string, _Segment>();
  #reading: Promise<void> | null = null;
  // Moves whenever a read finds the files changed: lines appended, a segment begun again or trimmed.
  #changes = 0;

  constructor(stateDir: string, onDamaged?: (damaged: DamagedLine) => void) {
    this.#dir = join(stateDir, LEDGER_DIR);
    this.#onDamaged = onDamaged;
  }

  /**
   * Every entry, oldest first, with the counts of coalesced entries applied, as the files hold them
   * now. A damaged line is left out (and passed to `onDamaged`, once); an unreadable folder or file
   * is a {@link LedgerUnreadableError}.
   */
  async entries(): Promise<LedgerEntry[]> {
    await this.#refresh();
    const entries: LedgerEntry[] = [];
    const seen = new Set<string>();
    const counts = new Map<string, CountLine>();
    for (const segment of this.#ordered()) {
      for (let i = 0; i < segment.starts.length; i++) {
        const line = await this.#line(segment, i, 'forward');
        if (line?.kind === 'count') keepCount(counts, line.count);
        else if (line?.kind === 'entry' && !seen.has(line.entry.id)) {
          seen.add(line.entry.id);
          entries.push(line.entry);
        }
      }
    }
    // Two lanes, each in order: merged by time, stable within a lane.
    return entries.map((e) => withCount(e, counts)).sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
  }

  /** Reads what the files gained; answers a number that moves whenever what they hold changed, so that a view of them is current while it holds. */
  async version(): Promise<number> {
    await this.#refresh();
    return this.#changes;
  }

  /**
   * The newest `limit` entries that `keep` takes, newest first, parsing no more lines than it must;
   * `fresh: false` takes the files as the last read left them (a caller that just asked for the version).
   */
  async newest(limit: number, keep: (entry: LedgerEntry) => boolean, fresh = true): Promise<LedgerEntry[]> {
    if (fresh) await this.#refresh();
    // Each lane is read backwards; the two are merged by time.
    const lanes = [...new Set(this.#ordered().map((s) => s.lane))].map((lane) => {
      const segments = this.#ordered().filter((s) => s.lane === lane).reverse();
      return { segments, at: 0, index: (segments[0]?.starts.length ?? 0) - 1, head: null as LedgerEntry | null };
    });
    const counts = new Map<string, CountLine>();
    const seen = new Set<string>();
    const pause = _pauses();
    const advance = async (lane: (typeof lanes)[number]): Promise<LedgerEntry | null> => {
      while (lane.at < lane.segments.length) {
        const segment = lane.segments[lane.at]!;
        if (lane.index < 0) {
          lane.at++;
          lane.index = (lane.segments[lane.at]?.starts.length ?? 0) - 1;
          continue;
        }
        const paused = pause();
        if (paused !== null) await paused;
        const line = await this.#line(segment, lane.index--, 'backward');
        if (line?.kind === 'count') keepCount(counts, line.count);
        else if (line?.kind === 'entry') return line.entry;
      }
      return null;
    };
    for (const lane of lanes) lane.head = await advance(lane);
    const out: LedgerEntry[] = [];
    while (out.length < limit) {
      let next: (typeof lanes)[number] | undefined;
      for (const lane of lanes) {
        if (lane.head !== null && (next === undefined || lane.head.time > next.head!.time)) next = lane;
      }
      if (next === undefined) break;
      const entry = next.head!;
      next.head = await advance(next);
      if (seen.has(entry.id)) continue;
      seen.add(entry.id);
      const counted = withCount(entry, counts);
      if (keep(counted)) out.push(counted);
    }
    return out;
  }

  // Reads what the files gained; calls made while a read is under way share it.
  #refresh(): Promise<void> {
    this.#reading ??= this.#read().finally(() => (this.#reading = null));
    return this.#reading;
  }

  #ordered(): _Segment[] {
    return [...this.#segments.values()].sort((a, b) => a.number - b.number);
  }

  // A line checked once: an entry, a count, or null for a blank or damaged one (reported once).
  async #line(segment: _Segment, index: number, way: _Way): Promise<CheckedLedgerLine | null> {
    const known = segment.checked[index];
    if (known !== undefined) return known;
    const text = await this.#text(segment, index, way);
    let checked: CheckedLedgerLine | null = null;
    if (text !== '') {
      try {
        checked = checkLedgerLine(JSON.parse(text));
      } catch {
        checked = { kind: 'bad', problem: 'not JSON' };
      }
      if (checked.kind === 'bad') {
        this.#onDamaged?.({ file: segment.file, line: index + 1, problem: checked.problem });
        checked = null;
      }
    }
    segment.checked[index] = checked;
    return checked;
  }

  // A line's text: read again from the file with its neighbours the way the reader goes, up to a
  // piece's worth, so that the lines a list walks through cost one read a piece. A segment trimmed
  // meanwhile has no lines left to give.
  async #text(segment: _Segment, index: number, way: _Way): Promise<string> {
    const known = segment.window;
    if (known !== null && index >= known.from && index < known.from + known.lines.length) {
      return known.lines[index - known.from]!;
    }
    const { starts } = segment;
    const end = (i: number) => starts[i + 1] ?? segment.offset;
    let from = index;
    let to = index;
    if (way === 'backward') { while (from > 0 && end(index) - starts[from - 1]! <= _PIECE_BYTES) from--; }
    else while (to + 1 < starts.length && end(to + 1) - starts[index]! <= _PIECE_BYTES) to++;
    const bytes = await this.#bytes(segment.file, starts[from]!, end(to));
    // Without its last newline; a file cut short leaves the lines past its end blank.
    const lines = bytes.toString('utf8', 0, Math.max(bytes.length - 1, 0)).split('\n');
    segment.window = { from, lines };
    return lines[index - from] ?? '';
  }

  async #bytes(file: string, start: number, end: number): Promise<Buffer> {
    try {
      const { handle } = await openSegment(file);
      try {
        const buffer = Buffer.allocUnsafe(end - start);
        let got = 0;
        while (got < buffer.length) {
          const { bytesRead } = await handle.read(buffer, got, buffer.length - got, start + got);
          if (bytesRead === 0) break;
          got += bytesRead;
        }
        return buffer.subarray(0, got);
      } finally {
        await handle.close();
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0);
      throw _unreadable(file, error);
    }
  }

  async #read(): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.#dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new LedgerUnreadableError(`cannot read the request ledger ${this.#dir}: ${_code(error)}`, {
          cause: error,
        });
      }
      names = [];
    }
    const present = new Map(names.flatMap((name) => {
      const m = SEGMENT.exec(name);
      return m === null ? [] : [[name, { lane: m[1]!, number: Number(m[2]) }] as const];
    }));
    for (const name of this.#segments.keys()) {
      if (!present.has(name) && this.#segments.delete(name)) this.#changes++;
    }
    for (const [name, at] of [...present].sort((a, b) => a[1].number - b[1].number)) await this.#follow(name, at);
  }

  // Reads what a segment gained since the last read.
  async #follow(name: string, at: { lane: string; number: number }): Promise<void> {
    const file = join(this.#dir, name);
    try {
      await this.#append(name, file, at);
    } catch (error) {
      // Trimmed by the server between the listing and the read: its entries are gone, as they should be.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw _unreadable(file, error);
    }
  }

  // Finds where each line the segment gained starts, reading it in pieces; nothing is decoded.
  async #append(name: string, file: string, at: { lane: string; number: number }): Promise<void> {
    const { handle, info } = await openSegment(file);
    try {
      const { size } = info;
      let segment = this.#segments.get(name);
      // A file shorter than what was read is not the one read before: start it again.
      if (segment === undefined || size < segment.offset) {
        segment = { file, ...at, offset: 0, starts: [], checked: [], window: null };
        this.#segments.set(name, segment);
        this.#changes++;
      }
      const piece = Buffer.allocUnsafe(Math.min(_PIECE_BYTES, size - segment.offset));
      // A line still being written (no newline yet) is found again from its start next time.
      let line = segment.offset;
      for (let position = segment.offset; position < size;) {
        const { bytesRead } = await handle.read(piece, 0, Math.min(piece.length, size - position), position);
        if (bytesRead === 0) break;
        const read = piece.subarray(0, bytesRead);
        for (let nl = read.indexOf(0x0a); nl !== -1; nl = read.indexOf(0x0a, nl + 1)) {
          segment.starts.push(line);
          line = position + nl + 1;
        }
        position += bytesRead;
      }
      if (line > segment.offset) {
        segment.offset = line;
        this.#changes++;
      }
    } finally {
      await handle.close();
    }
  }
}

type _Way = 'forward' | 'backward';

// A segment named like one but not one the writer makes (a link, a FIFO, a folder) is refused,
// never followed nor waited on; any other failure to read it is named.
function _unreadable(file: string, error: unknown): LedgerUnreadableError {
  const why = (error as NodeJS.ErrnoException).code === ErrorCode.NotASegment ? 'not a regular file' : _code(error);
  return new LedgerUnreadableError(`cannot read the request ledger file ${file}: ${why}`, { cause: error });
}

// The most of a segment read at once (scanned for line breaks, or decoded again and split).
const _PIECE_BYTES = 262_144;

// The longest the list of a large ledger parses in one turn of the event loop: filtered down to a
// few entries, it may parse much of the ledger, beside the requests the server answers.
const _SLICE_MS = 5;

// A pause to call between two pieces of work: once a slice is used up, a turn of the event loop
// to wait for (else null, so that most calls cost no turn of the microtask queue either).
function _pauses(): () => Promise<void> | null {
  let since = performance.now();
  return () => {
    if (performance.now() - since < _SLICE_MS) return null;
    return nextTurn().then(() => void (since = performance.now()));
  };
}

/** Keeps a count line when it is the latest of its entry's. */
export function keepCount(counts: Map<string, CountLine>, count: CountLine): void {
  const known = counts.get(count.id);
  if (known === undefined || count.count > known.count) counts.set(count.id, count);
}

/** An entry with the latest count of its coalesced refusals, as a copy (parsed lines stay as read). */
export function withCount(entry: LedgerEntry, counts: ReadonlyMap<string, CountLine>): LedgerEntry {
  const count = counts.get(entry.id);
  return count === undefined || count.count <= (entry.count ?? 1)
    ? entry
    : { ...entry, count: count.count, lastTime: count.lastTime };
}

/** The entry an entry id names, or the one entry a request id names; else why not. */
export function findEntry(
  entries: readonly LedgerEntry[],
  id: string,
): { ok: true; entry: LedgerEntry } | { ok: false; error: string } {
  const own = entries.find((e) => e.id === id);
  if (own !== undefined) return { ok: true, entry: own };
  const named = entries.filter((e) => e.requestId === id);
  if (named.length === 1) return { ok: true, entry: named[0]! };
  if (named.length > 1) {
    return {
      ok: false,
      error: `request id ${JSON.stringify(id)} names ${named.length} entries; use an entry id (${
        named.map((e) => e.id).slice(0, 3).join(', ')
      }${named.length > 3 ? ', ...' : ''})`,
    };
  }
  return {
    ok: false,
    error: `no request ledger entry has the id ${
      JSON.stringify(id)
    } (an entry id or a request id; it may have been trimmed)`,
  };
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
  if (ago !== null) {
    return now - Number(ago[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[ago[2] as 's' | 'm' | 'h' | 'd'];
  }
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
  return entries.filter((e) => entryMatches(e, filter));
}

/** Whether one entry holds to every part of `filter`. */
export function entryMatches(e: LedgerEntry, filter: EntryFilter): boolean {
  const { hook, status, code, since, until } = filter;
  if (hook !== undefined && e.hook !== hook) return false;
  if (
    status !== undefined &&
    ('exact' in status ? e.status !== status.exact : Math.floor(e.status / 100) !== status.class)
  ) return false;
  if (code !== undefined && e.code !== code) return false;
  if (filter.failed === true && !failed(e)) return false;
  if (since === undefined && until === undefined) return true;
  const time = Date.parse(e.lastTime ?? e.time);
  return (since === undefined || time >= since) && (until === undefined || Date.parse(e.time) <= until);
}

/** The stored bytes of a body. */
export function bodyBytes(body: StoredBody): Buffer {
  return body.encoding === 'utf8' ? Buffer.from(body.data, 'utf8') : Buffer.from(body.data, 'base64');
}

function _code(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  return e.code ?? String(error);
}
