// Finding a few entries of the request ledger by their ids, for what runs in the server beside
// the requests it answers: a replay, the inspector's view of one entry. A ledger at its bounds is
// tens of MiB; read and parsed whole it held the event loop for hundreds of milliseconds. Here
// each segment is read through one buffer of a fixed size (every read a turn of the loop, so a
// request waits at most for the work on one piece), and of each line only what the writer puts
// first is looked at: the entry's id and request id, and when asked the entry it replays. Only
// the lines that name what is looked for are parsed. Nothing is kept between two calls: a lookup
// costs a read of the files, which the page cache usually holds, and no memory in between.

import { type FileHandle, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode } from '../../errors.ts';
import type { LedgerEntry } from '../../model/ledger-entry.ts';
import { type CheckedLedgerLine, checkLedgerLine, type CountLine, LEDGER_DIR, openSegment, SEGMENT } from './entry.ts';
import { type DamagedLine, findEntry, keepCount, LedgerUnreadableError, withCount } from './read.ts';

/** What {@link findEntries} looks for. */
export interface EntryQuery {
  /** Entry ids or request ids: each entry whose id or request id is one of them. */
  ids?: Iterable<string>;
  /** Entry ids: each entry that is a replay of one of them. */
  replaysOf?: Iterable<string>;
}

/** The piece of a segment read at once: what a lookup may hold the event loop for is the work on one piece. */
export const PIECE_BYTES = 262_144;

// What the writer puts first in a line: an entry's id then its request id, a count's kind then its
// entry's id (both ids short and plain, never escaped by the writer but read as JSON strings here).
const _ENTRY = Buffer.from('{"id":"');
const _REQUEST = Buffer.from(',"requestId":"');
const _COUNT = Buffer.from('{"t":"count","id":"');
// Inside a JSON string a quote is escaped, so these bytes are a member's name, never text a request sent.
const _REPLAY_OF = Buffer.from(',"replayOf":"');

/**
 * The entries whose id or request id is one of `query.ids`, or that replay one of
 * `query.replaysOf`, with the counts of coalesced entries applied, oldest first. A line that names
 * one of them but is damaged is left out and passed to `onDamaged`; an unreadable folder or file is
 * a {@link LedgerUnreadableError}. A line's ids are looked for in its first {@link PIECE_BYTES}
 * bytes, where the writer puts them.
 */
export async function findEntries(
  stateDir: string,
  query: EntryQuery,
  onDamaged?: (damaged: DamagedLine) => void,
): Promise<LedgerEntry[]> {
  const scan = new _Scan(query, onDamaged);
  const dir = join(stateDir, LEDGER_DIR);
  for (const name of await _segments(dir)) await scan.file(join(dir, name));
  return scan.found();
}

/** The entry an entry id names, or the one entry a request id names, with its count (see {@link findEntry}). */
export async function lookupEntry(
  stateDir: string,
  id: string,
  onDamaged?: (damaged: DamagedLine) => void,
): Promise<{ ok: true; entry: LedgerEntry } | { ok: false; error: string }> {
  return findEntry(await findEntries(stateDir, { ids: [id] }, onDamaged), id);
}

// The segment files, in the order they were begun.
async function _segments(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new LedgerUnreadableError(`cannot read the request ledger ${dir}: ${_code(error)}`, { cause: error });
  }
  const numbered = names.flatMap((name) => {
    const m = SEGMENT.exec(name);
    return m === null ? [] : [{ name, n: Number(m[2]) }];
  });
  return numbered.sort((a, b) => a.n - b.n).map((s) => s.name);
}

// One lookup: what is wanted, and what was found so far.
class _Scan {
  // As the writer spells them: JSON-escaped, as Latin-1 text of their UTF-8 bytes, so that a slice
  // of a line's bytes compares with them without decoding it.
  readonly #ids: Set<string>;
  readonly #replaysOf: Set<string>;
  readonly #onDamaged: ((damaged: DamagedLine) => void) | undefined;
  readonly #entries = new Map<string, LedgerEntry>();
  readonly #counts = new Map<string, CountLine>();
  /** The ids of the entries found, as spelled in a line: their later count lines are read too. */
  readonly #own = new Set<string>();

  constructor(query: EntryQuery, onDamaged: ((damaged: DamagedLine) => void) | undefined) {
    this.#ids = new Set([...(query.ids ?? [])].map(_spelled));
    this.#replaysOf = new Set([...(query.replaysOf ?? [])].map(_spelled));
    this.#onDamaged = onDamaged;
  }

  found(): LedgerEntry[] {
    const entries = [...this.#entries.values()].map((e) => withCount(e, this.#counts));
    // Two lanes, each in order: merged by time, stable within a lane.
    return entries.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
  }

  async file(file: string): Promise<void> {
    let opened: Awaited<ReturnType<typeof openSegment>>;
    try {
      opened = await openSegment(file);
    } catch (error) {
      // Trimmed by the server since the listing: its entries are gone, as they should be.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      const why = (error as NodeJS.ErrnoException).code === ErrorCode.NotASegment ? 'not a regular file' : _code(error);
      throw new LedgerUnreadableError(`cannot read the request ledger file ${file}: ${why}`, { cause: error });
    }
    const { handle, info } = opened;
    try {
      await this.#lines(handle, file, info.size);
    } catch (error) {
      throw new LedgerUnreadableError(`cannot read the request ledger file ${file}: ${_code(error)}`, { cause: error });
    } finally {
      await handle.close();
    }
  }

  // The segment's lines up to `size` (what it held when opened; a last line without its line
  // break is being written and is left for a later lookup). Each piece starts at a line's start.
  async #lines(handle: FileHandle, file: string, size: number): Promise<void> {
    const buf = Buffer.allocUnsafe(PIECE_BYTES);
    let pos = 0;
    let line = 1;
    while (pos < size) {
      const { bytesRead } = await handle.read(buf, 0, Math.min(PIECE_BYTES, size - pos), pos);
      if (bytesRead === 0) return;
      const piece = buf.subarray(0, bytesRead);
      let at = 0;
      let replay = this.#replaysOf.size === 0 ? -1 : piece.indexOf(_REPLAY_OF);
      for (let end = piece.indexOf(10); end !== -1; end = piece.indexOf(10, at)) {
        let replays = false;
        for (; replay !== -1 && replay < end; replay = piece.indexOf(_REPLAY_OF, replay + 1)) {
          replays ||= this.#replaying(piece, replay, end);
        }
        const wanted = this.#wanted(piece, at, end, replays);
        if (wanted !== 'no') this.#take(piece.toString('utf8', at, end), wanted === 'named', file, line);
        at = end + 1;
        line++;
      }
      if (at > 0) {
        pos += at;
        continue;
      }
      // A piece without a line break: the last line, still being written, or a line longer than
      // the buffer (a large body), judged by its start and read whole only when it is wanted.
      if (pos + bytesRead >= size) return;
      let replays = false;
      for (; replay !== -1; replay = piece.indexOf(_REPLAY_OF, replay + 1)) {
        replays ||= this.#replaying(piece, replay, piece.length);
      }
      const wanted = this.#wanted(piece, 0, piece.length, replays);
      const end = await _lineEnd(handle, buf, pos + bytesRead, size);
      if (end === -1) return;
      // A long line the writer did not make is not read whole to find out what it is.
      if (wanted === 'named') this.#take(await _text(handle, pos, end), true, file, line);
      pos = end + 1;
      line++;
    }
  }

  // Whether the line in `piece` from `start` to `end` is to be parsed: 'named' when its ids name
  // what is wanted, 'unknown' when it is not a line as the writer makes them (a hand edit: parsed
  // to see), 'no' otherwise.
  #wanted(piece: Buffer, start: number, end: number, replays: boolean): 'named' | 'unknown' | 'no' {
    if (start === end) return 'no';
    if (_startsWith(piece, start, end, _ENTRY)) {
      const from = start + _ENTRY.length;
      const to = _stringEnd(piece, from, end);
      if (to !== -1 && _startsWith(piece, to + 1, end, _REQUEST)) {
        const id = piece.toString('latin1', from, to);
        const requestFrom = to + 1 + _REQUEST.length;
        const requestTo = _stringEnd(piece, requestFrom, end);
        const named = replays || this.#ids.has(id) ||
          (requestTo !== -1 && this.#ids.has(piece.toString('latin1', requestFrom, requestTo)));
        return named ? 'named' : 'no';
      }
    } else if (_startsWith(piece, start, end, _COUNT)) {
      const from = start + _COUNT.length;
      const to = _stringEnd(piece, from, end);
      if (to !== -1) return this.#own.has(piece.toString('latin1', from, to)) ? 'named' : 'no';
    }
    return 'unknown';
  }

  // Whether the replayOf member at `at` names a wanted entry.
  #replaying(piece: Buffer, at: number, end: number): boolean {
    const from = at + _REPLAY_OF.length;
    const to = _stringEnd(piece, from, end);
    return to !== -1 && this.#replaysOf.has(piece.toString('latin1', from, to));
  }

  // A line parsed and kept when it is what was looked for; a damaged one is reported only when
  // its ids named what was looked for (a stray line is no news to someone looking up an entry).
  #take(text: string, named: boolean, file: string, line: number): void {
    let checked: CheckedLedgerLine;
    try {
      checked = checkLedgerLine(JSON.parse(text));
    } catch {
      checked = { kind: 'bad', problem: 'not JSON' };
    }
    if (checked.kind === 'bad') {
      if (named) this.#onDamaged?.({ file, line, problem: checked.problem });
    } else if (checked.kind === 'count') {
      if (this.#entries.has(checked.count.id)) keepCount(this.#counts, checked.count);
    } else {
      const { entry } = checked;
      const wanted = this.#ids.has(_spelled(entry.id)) || this.#ids.has(_spelled(entry.requestId)) ||
        (entry.replayOf !== undefined && this.#replaysOf.has(_spelled(entry.replayOf)));
      if (!wanted || this.#entries.has(entry.id)) return;
      this.#entries.set(entry.id, entry);
      this.#own.add(_spelled(entry.id));
    }
  }
}

// An id as the writer spells it in a line (see _Scan).
function _spelled(id: string): string {
  return Buffer.from(JSON.stringify(id).slice(1, -1), 'utf8').toString('latin1');
}

function _startsWith(piece: Buffer, start: number, end: number, prefix: Buffer): boolean {
  if (end - start < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (piece[start + i] !== prefix[i]) return false;
  return true;
}

// Where the JSON string whose text begins at `from` ends (its closing quote), before `end`; -1 if not.
function _stringEnd(piece: Buffer, from: number, end: number): number {
  for (let at = piece.indexOf(0x22, from); at !== -1 && at < end; at = piece.indexOf(0x22, at + 1)) {
    let slashes = 0;
    while (at - slashes - 1 >= from && piece[at - slashes - 1] === 0x5c) slashes++;
    if (slashes % 2 === 0) return at;
  }
  return -1;
}

// Where the line that goes on at `from` ends (its line break), read on through `buf`; -1 if not before `size`.
async function _lineEnd(handle: FileHandle, buf: Buffer, from: number, size: number): Promise<number> {
  for (let pos = from; pos < size;) {
    const { bytesRead } = await handle.read(buf, 0, Math.min(buf.length, size - pos), pos);
    if (bytesRead === 0) return -1;
    const at = buf.subarray(0, bytesRead).indexOf(10);
    if (at !== -1) return pos + at;
    pos += bytesRead;
  }
  return -1;
}

// The text of the bytes from `start` to `end`.
async function _text(handle: FileHandle, start: number, end: number): Promise<string> {
  const bytes = Buffer.allocUnsafe(end - start);
  const { bytesRead } = await handle.read(bytes, 0, bytes.length, start);
  return bytes.toString('utf8', 0, bytesRead);
}

function _code(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  return e.code ?? String(error);
}
