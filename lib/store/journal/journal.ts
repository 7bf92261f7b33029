// The append-only JSON-lines journal's writer: group commit, torn-tail recovery at open, compaction.

import { constants, fstatSync, statSync } from 'node:fs';
import { mkdir, open as fsOpen, rename, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ErrorCode } from '../../errors.ts';
import { encodeLine, type JournalContents, parseLines } from './lines.ts';

/** Options of {@link Journal.open}. */
export interface JournalOptions {
  /** Clock in ms used to time fsyncs; defaults to `performance.now`. */
  now?: () => number;
  /** Opens every file and directory the journal touches; defaults to `fs/promises` `open`. */
  open?: typeof fsOpen;
}

/** Counters since the journal was opened, for metrics. */
export interface JournalStats {
  /** Append batches made durable (one write and one fsync each, or one O_DSYNC write). */
  flushes: number;
  /** Records made durable by `append`/`appendMany`. */
  records: number;
  /** Duration of the most recent fsync of a journal file (under O_DSYNC: of the batch's write), 0 before the first. */
  lastFsyncMs: number;
}

/** Result of {@link Journal.open}; `tornBytes` is the unfinished tail that was cut off (0 if none). */
export interface OpenedJournal extends JournalContents {
  journal: Journal;
  tornBytes: number;
}

/**
 * The file the journal appends to is no longer the file at its path (deleted, moved or replaced
 * while the process ran): what was just written would be lost at the next start, so it is refused.
 */
export class JournalReplacedError extends Error {
  readonly code = ErrorCode.JournalReplaced;
  constructor(file: string) {
    super(`Cannot append to ${file}: the open file is no longer the journal at that path`);
    this.name = 'JournalReplacedError';
  }
}

interface _Op {
  /** `switch`: a rewrite's temp file is written; the journal moves over to it, in queue order. */
  kind: 'append' | 'compact' | 'switch';
  /** The lines, encoded only when their batch is written: one encode per batch, no concat. */
  text: string;
  count: number;
  /** A compaction's records, serialised while they are written. */
  records?: readonly object[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** A compaction under way: its snapshot is written to a temp file while appends go on. */
interface _Rewrite {
  tmp: string;
  handle: FileHandle | null;
  /** Bytes of the snapshot in the temp file. */
  size: number;
  /** What was appended to the old file since the snapshot: it follows the snapshot into the new one. */
  tail: string[];
  /** Why writing the snapshot failed, if it did. */
  failed: unknown;
  /** The compact call's promise, settled when the journal has moved over (or has not). */
  op: _Op;
  /** Settles when the rewrite is over, either way. */
  over: Promise<void>;
}

/** About how much of a compaction's snapshot is serialised and written at a time, in UTF-16 units. */
export const SNAPSHOT_PART_CHARS = 4 * 1024 * 1024;

// Codes with which platforms (Windows, some network filesystems) refuse to open or fsync a directory.
const _DIR_SYNC_REFUSED = new Set(['EISDIR', 'EPERM', 'EACCES', 'EINVAL', 'ENOTSUP', 'EBADF']);

/**
 * Durable append-only JSON-lines log. Appends are group-committed: everything queued while a
 * flush runs goes out in the next flush with one write and one fsync. Appends and compactions
 * take effect in call order. A compaction does not hold appends up while it writes: its snapshot
 * goes to a temp file in the background, the appends made meanwhile go to the old file and are
 * remembered, and once the snapshot is durable they follow it into the temp file, which then
 * replaces the old one. Either file holds every acknowledged record at every moment.
 */
export class Journal {
  readonly file: string;
  #handle: FileHandle;
  /** Device and inode of the open file: while it is open, no other file can have them. */
  #identity: { dev: number; ino: number };
  #size: number;
  #queue: _Op[] = [];
  #pump: Promise<void> | null = null;
  #rewrite: _Rewrite | null = null;
  #closing: Promise<void> | null = null;
  #stats: JournalStats = { flushes: 0, records: 0, lastFsyncMs: 0 };
  readonly #now: () => number;
  readonly #open: typeof fsOpen;
  /** `O_DSYNC` when the journal files are opened with it, else 0. */
  readonly #dsync: number;

  private constructor(
    file: string,
    handle: FileHandle,
    size: number,
    now: () => number,
    open: typeof fsOpen,
    dsync: number,
  ) {
    this.file = file;
    this.#handle = handle;
    this.#identity = _identity(handle);
    this.#size = size;
    this.#now = now;
    this.#open = open;
    this.#dsync = dsync;
  }

  /** Opens (creating 0o700 directory and 0o600 file if missing) and reads the journal, cutting off a torn tail. */
  static async open(file: string, options: JournalOptions = {}): Promise<OpenedJournal> {
    const { now = () => performance.now(), open = fsOpen } = options;
    // With O_DSYNC a write returns once its data is durable: one thread-pool round trip per batch
    // instead of two (write, then fdatasync). Only through the real `open`, which surely passes the
    // flag to the OS; without the flag (Windows) or with an injected opener, batches are fdatasync'd.
    const dsync = open === fsOpen ? (constants.O_DSYNC ?? 0) : 0;
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    // Neither O_APPEND (Linux ignores pwrite positions under it) nor O_TRUNC.
    const handle = await open(file, constants.O_RDWR | constants.O_CREAT | dsync, 0o600);
    try {
      const buf = await handle.readFile();
      const { records, lines, skipped, unreadable, end } = parseLines(buf);
      // Cut now so the next append cannot glue onto the garbage; making that append durable makes the cut durable.
      if (end < buf.length) await handle.truncate(end);
      return {
        journal: new Journal(file, handle, end, now, open, dsync),
        records,
        lines,
        skipped,
        unreadable,
        tornBytes: buf.length - end,
      };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /** Bytes in the journal file. */
  get size(): number {
    return this.#size;
  }

  /**
   * Whether the open file still is the journal at its path. One stat of the path, compared with the
   * device and inode the open file has (fixed while it is open): a synchronous call of a few
   * microseconds, made once per batch rather than per record.
   */
  isCurrent(): boolean {
    try {
      const at = statSync(this.file, { throwIfNoEntry: false });
      return at !== undefined && at.ino === this.#identity.ino && at.dev === this.#identity.dev;
    } catch {
      return false;
    }
  }

  /** A snapshot of the counters. */
  stats(): JournalStats {
    return { ...this.#stats };
  }

  /** Appends one record as one line; resolves once it is written and fsync'd. */
  append(record: object): Promise<void> {
    return this.appendMany([record]);
  }

  /** Appends records as consecutive lines in the same flush; resolves once they are durable. */
  appendMany(records: readonly object[]): Promise<void> {
    // Not `async`: the promise of the queue is handed back as it is, one promise less per append.
    try {
      const text = records.length === 1 ? encodeLine(records[0]!) : records.map(encodeLine).join('');
      if (text !== '') return this.#enqueue('append', text, records.length);
      if (this.#closing) throw new Error('Journal is closed');
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Atomically replaces the whole file with these records; later appends land after them. The
   * records are read while they are written, a part at a time: they must not change meanwhile
   * (the store's never change in place).
   */
  async compact(records: readonly object[]): Promise<void> {
    return this.#enqueue('compact', '', records.length, records);
  }

  /** Flushes what is queued and closes the file; later appends reject. Idempotent. */
  close(): Promise<void> {
    return (this.#closing ??= this.#finish());
  }

  async #finish(): Promise<void> {
    // A rewrite under way ends with a switch it queues itself, which the pump then runs.
    while (this.#pump !== null || this.#rewrite !== null) await (this.#pump ?? this.#rewrite?.over);
    await this.#handle.close();
  }

  #enqueue(kind: 'append' | 'compact', text: string, count: number, records?: readonly object[]): Promise<void> {
    if (this.#closing) throw new Error('Journal is closed');
    return new Promise((resolve, reject) => {
      const op: _Op = { kind, text, count, resolve, reject };
      if (records !== undefined) op.records = records;
      this.#queue.push(op);
      this.#pump ??= this.#drain();
    });
  }

  async #drain(): Promise<void> {
    // One microtask lets appends issued in the same tick join the first batch.
    await null;
    for (let head = this.#queue[0]; head; head = this.#queue[0]) {
      // One rewrite at a time: a second compaction waits for the first one's switch.
      if (head.kind === 'compact' && this.#rewrite !== null) break;
      let n = 1;
      if (head.kind === 'append') { while (this.#queue[n]?.kind === 'append') n++; }
      const batch = this.#queue.splice(0, n);
      if (head.kind === 'compact') {
        this.#rewrite = this.#begin(head);
        continue;
      }
      try {
        await (head.kind === 'switch' ? this.#switch() : this.#write(batch));
        for (const op of batch) op.resolve();
      } catch (err) {
        for (const op of batch) op.reject(err);
      }
    }
    this.#pump = null;
  }

  // Writes the snapshot to the temp file in the background; when that is done (or failed), a switch
  // goes to the front of the queue, so it runs between two batches of appends.
  #begin(op: _Op): _Rewrite {
    let over = () => {};
    const rewrite: _Rewrite = {
      tmp: `${this.file}.tmp`,
      handle: null,
      size: 0,
      tail: [],
      failed: null,
      op,
      over: new Promise<void>((resolve) => (over = resolve)),
    };
    void this.#writeSnapshot(rewrite, op.records ?? []).then(() => {
      this.#queue.unshift({ kind: 'switch', text: '', count: 0, resolve: over, reject: over });
      this.#pump ??= this.#drain();
    });
    return rewrite;
  }

  // Serialised and written a part at a time: a snapshot of a large backlog neither stops the
  // event loop while it is turned into JSON nor is held in memory whole.
  async #writeSnapshot(rewrite: _Rewrite, records: readonly object[]): Promise<void> {
    try {
      // Recreated if an operator removed the whole directory: a fresh journal is how the store recovers.
      await mkdir(dirname(this.file), { recursive: true, mode: 0o700 });
      // A temp file left by a crash may carry another mode; start from a fresh 0o600 one.
      await rm(rewrite.tmp, { force: true });
      // Flagged as the journal was: this handle takes the appends after the rename.
      rewrite.handle = await this.#open(
        rewrite.tmp,
        constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | this.#dsync,
        0o600,
      );
      let size = 0;
      for (let i = 0; i < records.length;) {
        let text = '';
        while (i < records.length && text.length < SNAPSHOT_PART_CHARS) text += encodeLine(records[i++]!);
        const bytes = Buffer.from(text);
        await _writeAll(rewrite.handle, bytes, size);
        size += bytes.length;
      }
      await this.#sync(rewrite.handle);
      rewrite.size = size;
    } catch (err) {
      rewrite.failed = err;
    }
  }

  async #write(batch: _Op[]): Promise<void> {
    const text = batch.length === 1 ? batch[0]!.text : batch.map((op) => op.text).join('');
    const bytes = Buffer.from(text);
    try {
      const start = this.#now();
      await _writeAll(this.#handle, bytes, this.#size);
      if (this.#dsync === 0) await this.#sync(this.#handle);
      else this.#stats.lastFsyncMs = this.#now() - start;
      // Checked after the data is durable, so a pass means the records are in the file at the path.
      if (!this.isCurrent()) throw new JournalReplacedError(this.file);
    } catch (err) {
      // The batch is rejected as a whole, so none of it may stay; later appends then start on a line boundary.
      await this.#handle.truncate(this.#size).catch(() => {});
      throw err;
    }
    this.#size += bytes.length;
    this.#stats.flushes++;
    for (const op of batch) this.#stats.records += op.count;
    // Durable in the old file, and owed to the new one.
    this.#rewrite?.tail.push(text);
  }

  // In queue order, between two batches: the appends made since the snapshot follow it into the
  // temp file, which then takes the journal's place. The compact call settles here.
  async #switch(): Promise<void> {
    const rewrite = this.#rewrite!;
    const { op, handle } = rewrite;
    try {
      if (rewrite.failed !== null) throw rewrite.failed;
      const tail = Buffer.from(rewrite.tail.join(''));
      if (tail.length > 0) {
        await _writeAll(handle!, tail, rewrite.size);
        await this.#sync(handle!);
      }
      const identity = _identity(handle!);
      await rename(rewrite.tmp, this.file);
      // The renamed handle is the journal from here on, so appends continue in the new file.
      const old = this.#handle;
      this.#handle = handle!;
      this.#identity = identity;
      this.#size = rewrite.size + tail.length;
      this.#rewrite = null;
      // The old file is no longer the journal: a failure to close it changes nothing of the move.
      await old.close().catch(() => {});
      await this.#syncDir();
      op.resolve();
    } catch (err) {
      if (this.#rewrite === rewrite) {
        this.#rewrite = null;
        await handle?.close().catch(() => {});
        await rm(rewrite.tmp, { force: true }).catch(() => {});
      }
      op.reject(err);
    }
  }

  async #syncDir(): Promise<void> {
    let dir: FileHandle | undefined;
    try {
      dir = await this.#open(dirname(this.file), 'r');
      await dir.sync();
    } catch (err) {
      // Where directories cannot be fsync'd the rename is still atomic, just not yet durable.
      if (!_DIR_SYNC_REFUSED.has(String((err as NodeJS.ErrnoException).code))) throw err;
    } finally {
      await dir?.close();
    }
  }

  async #sync(handle: FileHandle): Promise<void> {
    const start = this.#now();
    await handle.datasync();
    this.#stats.lastFsyncMs = this.#now() - start;
  }
}

function _identity(handle: FileHandle): { dev: number; ino: number } {
  const { dev, ino } = fstatSync(handle.fd);
  return { dev, ino };
}

async function _writeAll(handle: FileHandle, bytes: Buffer, position: number): Promise<void> {
  for (let done = 0; done < bytes.length;) {
    const { bytesWritten } = await handle.write(bytes, done, bytes.length - done, position + done);
    done += bytesWritten;
  }
}
