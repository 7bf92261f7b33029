// The request ledger's writer. Diagnostic, never on an acknowledgement's path: entries are queued
// in memory and written in batches (one write per lane per batch, no fsync on the way), so a
// request pays for its line made into the batch's buffer, never for a file operation. What the
// ledger holds is bounded per lane by count, bytes and age; a lane is a series of append-only
// segment files, and trimming drops the oldest whole segment, so nothing is ever rewritten. The
// last batch (up to ~1 s of entries) can be lost in a crash; the journal, not the ledger, holds
// what was acknowledged. How an entry becomes a line, and a segment is counted back, is in
// ledger-lines.ts; this file is the state machine of the lanes, their batches, segments and bounds
// (a write decides which segment a line goes to, which segments go, and when to sync), kept whole
// past ~350 lines so that one reading shows every way its state changes.

import { createHash } from 'node:crypto';
import { type FileHandle, mkdir, open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Lane, LedgerEntry } from '../../model/ledger-entry.ts';
import type { LedgerConfig, LedgerLane } from './config.ts';
import { JsonBytes } from './json-bytes.ts';
import { capHeaders, keepBody, type KeptBody, REFUSAL_HEADER_BYTES, scanSegment, writeEntryLine } from './lines.ts';
import { LEDGER_DIR, SEGMENT, SEGMENT_NEW } from './entry.ts';

/** Options of {@link Ledger.open}. */
export interface LedgerOptions {
  config: LedgerConfig;
  /** The wall clock in epoch milliseconds. */
  now?: () => number;
  /** Told about a write or trim that failed (the ledger goes on; the server never stops for it). */
  onError?: (error: unknown) => void;
  /** How long an entry waits in memory before its batch is written; at most 500 ms. */
  flushMs?: number;
}

interface _Segment {
  n: number;
  bytes: number;
  count: number;
  /** When its oldest entry was written (ms): the segment goes once that is past the age bound. */
  firstMs: number;
}

/**
 * Lines waiting for the next write, as UTF-8 bytes in one buffer (off the JavaScript heap, so the
 * garbage collector neither scans nor copies them), with the end of each line: negative for a
 * count line, which adds no entry.
 */
interface _Batch {
  out: JsonBytes;
  ends: number[];
}

interface _Lane {
  initial: 'a' | 'u';
  segments: _Segment[];
  /** The open file, and the segment it is. */
  handle: FileHandle | null;
  open: _Segment | null;
  /** Lines made since the last write. */
  batch: _Batch | null;
  /** The buffer of the last batch written, reused for the next: no allocation (nor growth) per batch in a steady flow. */
  spare: Buffer | null;
  /** Coalesced entries whose count changed since their line (or last count line) was made. */
  counts: Set<_Coalesced>;
  dirty: boolean;
}

/**
 * One coalescing window: its entry's id and counters only (the entry is made into its line at once),
 * so a flood of refusals holds a few dozen bytes per window, never a request's headers.
 */
interface _Coalesced {
  id: string;
  count: number;
  lane: _Lane;
  until: number;
  lastMs: number;
}

// A coalescing key as held: a longer one (a long hook name) as its digest.
function _compact(key: string): string {
  return key.length > KEY_MAX ? createHash('sha256').update(key).digest('base64') : key;
}

/** The largest batch buffer kept for reuse once written (a steady 20,000 entries/s of 600 bytes fill 1.2 MB in a batch). */
const SPARE_MAX = 2 * 1024 * 1024;

/** A segment file found at open, by its name. */
interface _Found {
  name: string;
  initial: 'a' | 'u';
  n: number;
}

/** Most coalescing windows held at once (distinct clients refused within a window); past it, the expired ones go. */
const MAX_COALESCED = 4096;

/** The longest coalescing key kept as it is; a longer one (a long hook name) is kept as its digest. */
const KEY_MAX = 128;

/** The request ledger of a state directory (see the module comment). */
export class Ledger {
  readonly dir: string;
  #config: LedgerConfig;
  readonly #now: () => number;
  readonly #onError: (error: unknown) => void;
  readonly #flushMs: number;
  readonly #lanes: Record<Lane, _Lane>;
  #next: number;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #syncTimer: ReturnType<typeof setTimeout> | null = null;
  #expiry: ReturnType<typeof setInterval>;
  #writing: Promise<void> = Promise.resolve();
  #coalesced = new Map<string, _Coalesced>();
  #closed = false;
  /** Segments an earlier process wrote, not counted yet (see open). */
  #found: _Found[] | null;
  /** Settles once they are counted, ahead of the writes queued behind the count. */
  readonly #counted: Promise<void>;
  #countDone: () => void = () => {};

  private constructor(dir: string, options: LedgerOptions, found: _Found[], next: number) {
    this.dir = dir;
    this.#config = options.config;
    this.#now = options.now ?? Date.now;
    this.#onError = options.onError ?? (() => {});
    this.#flushMs = Math.min(options.flushMs ?? 100, 500);
    const lane = (initial: 'a' | 'u'): _Lane => ({
      initial,
      segments: [],
      handle: null,
      open: null,
      batch: null,
      spare: null,
      counts: new Set(),
      dirty: false,
    });
    this.#lanes = { authenticated: lane('a'), unauthenticated: lane('u') };
    this.#next = next;
    this.#found = found.length > 0 ? found : null;
    this.#counted = this.#found === null ? Promise.resolve() : new Promise((resolve) => (this.#countDone = resolve));
    // Age is enforced on a slow beat too, so a quiet ledger still forgets on time.
    this.#expiry = setInterval(() => void this.#serial(() => this.#expire()), 60_000);
    this.#expiry.unref?.();
  }

  /**
   * Opens the ledger under `<stateDir>/ledger` (0700); a new segment is begun for this process.
   * What the segments already there hold (a ledger at its bounds is tens of MiB) is read at the
   * ledger's first file operation, not before a server can answer: the first batch, the minute's
   * age check, or {@link Ledger.counted}. A batch waits for it, so the bounds count every segment.
   */
  static async open(stateDir: string, options: LedgerOptions): Promise<Ledger> {
    const dir = join(stateDir, LEDGER_DIR);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const found: _Found[] = [];
    for (const name of await readdir(dir)) {
      const m = SEGMENT.exec(name);
      if (m !== null) found.push({ name, initial: m[1] as 'a' | 'u', n: Number(m[2]) });
    }
    return new Ledger(dir, options, found, found.reduce((next, f) => Math.max(next, f.n + 1), 1));
  }

  /**
   * Resolves once the segments an earlier process wrote are counted (and those past the age bound
   * gone), beginning the count if no file operation has: not after the writes and syncs queued
   * behind it, so status never waits for a slow disk's sync.
   */
  counted(): Promise<void> {
    if (this.#found !== null) void this.#serial(() => Promise.resolve());
    return this.#counted;
  }

  /** New bounds (a reload); they apply from the next batch. */
  reconfigure(config: LedgerConfig): void {
    this.#config = config;
  }

  /** Queues an entry; `body` is kept up to `bodyCap` bytes (the lane's cap at most), the rest marked cut. */
  record(entry: LedgerEntry, body?: Buffer, bodyCap = 0): void {
    if (this.#closed) return;
    // Made into its line now: bytes in the batch's buffer (off the heap) cost the garbage collector
    // nothing, where the entry's objects (and the request's body and headers) would be kept alive until then.
    const limits = entry.lane === 'authenticated' ? this.#config : this.#config.unauthenticated;
    const kept = body === undefined
      ? undefined
      : keepBody(entry, body, Math.min(bodyCap, limits.maxBodyBytes, Math.floor(limits.maxBytes / 16)));
    _putEntry(this.#lanes[entry.lane], entry, kept, _segmentBytes(limits));
    this.#soon();
  }

  /**
   * A refusal counted into the entry of the same `key` (client and refusal) within its coalescing
   * window: a flood costs a count, not an entry each. Returns the entry's id, or `null` when no
   * window of `key` is open (then the caller makes the entry and opens one with {@link Ledger.hold}).
   */
  count(key: string): string | null {
    if (this.#closed) return null;
    const now = this.#now();
    const held = this.#coalesced.get(_compact(key));
    if (held === undefined || now >= held.until) return null;
    held.count++;
    held.lastMs = now;
    held.lane.counts.add(held);
    this.#soon();
    return held.id;
  }

  /**
   * Opens the coalescing window of `key` with its first refusal's entry (which keeps at most
   * {@link REFUSAL_HEADER_BYTES} of headers); returns the entry's id.
   */
  hold(key: string, entry: LedgerEntry): string {
    // A refusal answered while the server stops: an entry for its log line, held by no lane (a
    // lane held it past close() would open a segment that nothing closes).
    if (this.#closed) return entry.id;
    const now = this.#now();
    const compact = _compact(key);
    if (this.#coalesced.size >= MAX_COALESCED) this.#forgetExpired(now);
    capHeaders(entry, REFUSAL_HEADER_BYTES);
    entry.count = 1;
    // Made into its line now, as record() does: the entry dies young (a flood's entries held until
    // the batch would outlive the collector's nursery and swell the old heap); later refusals of
    // the window follow as count lines.
    const lane = this.#lanes[entry.lane];
    _putEntry(
      lane,
      entry,
      undefined,
      _segmentBytes(entry.lane === 'authenticated' ? this.#config : this.#config.unauthenticated),
    );
    const coalesced: _Coalesced = {
      id: entry.id,
      count: 1,
      lane,
      until: now + this.#config.coalesceSeconds * 1000,
      lastMs: now,
    };
    // A window that was there, expired, goes now: the map keeps the newest window last, which the
    // oldest-first sweep in #forgetExpired relies on.
    this.#coalesced.delete(compact);
    if (this.#coalesced.size < MAX_COALESCED) this.#coalesced.set(compact, coalesced);
    this.#soon();
    return entry.id;
  }

  /** Writes what is queued now; resolves once it is in the files. */
  flush(): Promise<void> {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    return this.#serial(() => this.#write());
  }

  /** Writes what is queued, syncs and closes the files. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#expiry);
    await this.flush();
    if (this.#syncTimer !== null) clearTimeout(this.#syncTimer);
    await this.#serial(async () => {
      for (const lane of Object.values(this.#lanes)) {
        const handle = lane.handle;
        lane.handle = null;
        if (handle !== null) await handle.datasync().finally(() => handle.close()).catch(this.#onError);
      }
    });
  }

  /** Entries and bytes of both lanes together, for status. */
  size(): { entries: number; bytes: number } {
    const { authenticated: a, unauthenticated: u } = this.stats();
    return { entries: a.entries + u.entries, bytes: a.bytes + u.bytes };
  }

  /** Segment counts and bytes per lane, and the bytes its batch buffers hold in memory, for tests and metrics. */
  stats(): Record<Lane, { segments: number; entries: number; bytes: number; buffered: number }> {
    const of = (lane: _Lane) => ({
      segments: lane.segments.length,
      entries: _sum(lane.segments, 'count'),
      bytes: _sum(lane.segments, 'bytes'),
      buffered: (lane.batch?.out.buf.length ?? 0) + (lane.spare?.length ?? 0),
    });
    return { authenticated: of(this.#lanes.authenticated), unauthenticated: of(this.#lanes.unauthenticated) };
  }

  #soon(): void {
    if (this.#timer !== null) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#serial(() => this.#write());
    }, this.#flushMs);
    this.#timer.unref?.();
  }

  // One file operation at a time, in order, the first of them after counting what is already
  // there; a failure is reported and the next one goes on.
  #serial(work: () => Promise<void>): Promise<void> {
    this.#writing = this.#writing
      .then(async () => {
        if (this.#found !== null) await this.#count();
        await work();
      })
      .catch(this.#onError);
    return this.#writing;
  }

  // The bytes, entries and first entry's time of the segments an earlier process wrote, then the
  // age bound over them. One that cannot be read is reported and left out of the bounds.
  async #count(): Promise<void> {
    const found = this.#found ?? [];
    this.#found = null;
    try {
      for (const { name, initial, n } of found) {
        try {
          const { bytes, count, firstMs } = await scanSegment(join(this.dir, name));
          (initial === 'a' ? this.#lanes.authenticated : this.#lanes.unauthenticated).segments.push({
            n,
            bytes,
            count,
            firstMs,
          });
        } catch (error) {
          this.#onError(error);
        }
      }
      for (const lane of Object.values(this.#lanes)) lane.segments.sort((a, b) => a.n - b.n);
      await this.#expire();
    } finally {
      this.#countDone();
    }
  }

  async #write(): Promise<void> {
    const now = this.#now();
    for (const [name, lane] of Object.entries(this.#lanes) as [Lane, _Lane][]) {
      const limits = name === 'authenticated' ? this.#config : this.#config.unauthenticated;
      const batch = this.#take(lane);
      if (batch === null) continue;
      await this.#append(lane, batch, limits, now);
      // A buffer a burst grew stays only while it is of an ordinary batch's size: at rest the
      // ledger holds at most this much per lane, whatever the largest burst was.
      lane.spare = batch.out.buf.length <= SPARE_MAX ? batch.out.buf : null;
    }
    await this.#expire();
    this.#syncSoon();
  }

  // What a lane has to write: the lines made since the last write, then a count line for each
  // coalesced entry whose count changed since.
  #take(lane: _Lane): _Batch | null {
    for (const held of lane.counts) {
      const batch = _batch(lane);
      batch.out.value({ t: 'count', id: held.id, count: held.count, lastTime: new Date(held.lastMs).toISOString() });
      _endLine(batch, false);
    }
    lane.counts.clear();
    const batch = lane.batch;
    lane.batch = null;
    return batch;
  }

  // Lines go into the lane's current segment while it has room, then into new ones; the oldest
  // segments go first while the lane (with what is about to be written) is over its count or bytes.
  async #append(lane: _Lane, batch: _Batch, limits: LedgerLane, now: number): Promise<void> {
    const room = _segmentBytes(limits);
    const roomCount = Math.max(1, Math.ceil(limits.maxEntries / 4));
    // A segment spans at most an eighth of the age bound, so dropping it whole forgets little early.
    const span = (this.#config.maxAgeSeconds * 1000) / 8;
    const chunks: { segment: _Segment; start: number; end: number }[] = [];
    // A process appends only to segments it began: an older one may end in a torn line.
    let current = lane.open ?? undefined;
    let chunk: (typeof chunks)[number] | undefined;
    let start = 0;
    for (const mark of batch.ends) {
      const end = Math.abs(mark);
      const bytes = end - start;
      if (
        current === undefined || current.bytes + bytes > room || current.count + 1 > roomCount ||
        now - current.firstMs > span
      ) {
        current = { n: this.#next++, bytes: 0, count: 0, firstMs: now };
        lane.segments.push(current);
        chunk = undefined;
      }
      if (chunk === undefined || chunk.segment !== current) chunks.push(chunk = { segment: current, start, end });
      chunk.end = end;
      current.bytes += bytes;
      current.count += mark > 0 ? 1 : 0;
      start = end;
    }
    // Over budget with the new lines counted: the oldest segments go (a batch larger than the
    // whole budget loses its own oldest part, which is then never written).
    const dropped = new Set<_Segment>();
    while (
      lane.segments.length > 1 &&
      (_sum(lane.segments, 'bytes') > limits.maxBytes || _sum(lane.segments, 'count') > limits.maxEntries)
    ) {
      const oldest = lane.segments.shift()!;
      dropped.add(oldest);
      await this.#remove(lane, oldest);
    }
    for (const { segment, start: from, end } of chunks) {
      if (dropped.has(segment)) continue;
      if (lane.handle === null || segment !== lane.open) await this.#switch(lane, segment);
      await lane.handle!.write(batch.out.buf, from, end - from);
      lane.dirty = true;
    }
  }

  async #switch(lane: _Lane, segment: _Segment): Promise<void> {
    const old = lane.handle;
    lane.handle = null;
    if (old !== null) await old.datasync().finally(() => old.close()).catch(this.#onError);
    lane.handle = await open(this.#file(lane.initial, segment.n), SEGMENT_NEW, 0o600);
    lane.open = segment;
  }

  async #remove(lane: _Lane, segment: _Segment): Promise<void> {
    if (lane.open === segment) {
      const handle = lane.handle;
      lane.handle = null;
      lane.open = null;
      await handle?.close().catch(this.#onError);
    }
    await rm(this.#file(lane.initial, segment.n), { force: true });
  }

  // Segments whose oldest entry is past the age bound go (the open one included): nothing older is kept.
  async #expire(): Promise<void> {
    const oldest = this.#now() - this.#config.maxAgeSeconds * 1000;
    for (const lane of Object.values(this.#lanes)) {
      while (lane.segments.length > 0 && lane.segments[0]!.firstMs < oldest) {
        await this.#remove(lane, lane.segments.shift()!);
      }
    }
  }

  // Within a second of being written a batch is synced: on disk, not only in the page cache.
  #syncSoon(): void {
    if (this.#syncTimer !== null) return;
    this.#syncTimer = setTimeout(() => {
      this.#syncTimer = null;
      void this.#serial(async () => {
        for (const lane of Object.values(this.#lanes)) {
          if (!lane.dirty || lane.handle === null) continue;
          lane.dirty = false;
          await lane.handle.datasync();
        }
      });
    }, 900);
    this.#syncTimer.unref?.();
  }

  // The windows that ended go, oldest first, up to the first still open (they were made in order;
  // a reload's new window length may leave a few for a later sweep). One whose count is not
  // written yet stays for that.
  #forgetExpired(now: number): void {
    for (const [key, held] of this.#coalesced) {
      if (held.until > now) break;
      if (!held.lane.counts.has(held)) this.#coalesced.delete(key);
    }
  }

  #file(initial: 'a' | 'u', n: number): string {
    return join(this.dir, `${initial}-${n}.jsonl`);
  }
}

// The lane's batch, begun on the last written batch's buffer when there is one.
function _batch(lane: _Lane): _Batch {
  if (lane.batch !== null) return lane.batch;
  const spare = lane.spare;
  lane.spare = null;
  return (lane.batch = { out: new JsonBytes(spare ?? Buffer.allocUnsafeSlow(65_536)), ends: [] });
}

// Ends the line just written: its line break, and where it ends.
function _endLine(batch: _Batch, entry: boolean): void {
  batch.out.byte(0x0a);
  batch.ends.push(entry ? batch.out.used : -batch.out.used);
}

// An entry's line, with the body kept (if any), into the lane's batch.
function _putEntry(lane: _Lane, entry: LedgerEntry, kept: KeptBody | undefined, room: number): void {
  const batch = _batch(lane);
  writeEntryLine(batch.out, entry, kept, room);
  _endLine(batch, true);
}

// A lane is kept in at least four segments, so trimming drops at most a quarter of it at once.
function _segmentBytes(limits: LedgerLane): number {
  return Math.max(4096, Math.floor(limits.maxBytes / 4));
}

function _sum(segments: readonly _Segment[], key: 'bytes' | 'count'): number {
  let total = 0;
  for (const s of segments) total += s[key];
  return total;
}
