// The journal's lines, for its writer (journal.ts) and for readers alike: one JSON record a line,
// a torn last line told apart from damage in the middle, and a read that writes nothing.

import type { Buffer } from 'node:buffer';
import { type FileHandle, open as fsOpen } from 'node:fs/promises';

/** The journal's file name inside the state directory. */
export const JOURNAL_FILE = 'journal.jsonl';

/** What a read of the journal found: complete records in order, and how many middle lines were unreadable. */
export interface JournalContents {
  records: unknown[];
  /** The 1-based line number of each record, for messages about it. */
  lines: number[];
  skipped: number;
  /** The 1-based numbers of the skipped lines. */
  unreadable: number[];
}

/** A record as its journal line: JSON and a line break. */
export function encodeLine(record: object): string {
  const text: unknown = JSON.stringify(record);
  if (typeof text !== 'string') throw new TypeError(`Cannot append record: it has no JSON form: ${typeof record}`);
  return `${text}\n`;
}

/**
 * The records of a journal's bytes, in order. `end` is the length of the sound prefix: everything
 * after it is a torn last line (an unfinished write), told apart from an unreadable line in the middle.
 */
export function parseLines(buf: Buffer): JournalContents & { end: number } {
  const records: unknown[] = [];
  const lines: number[] = [];
  const unreadable: number[] = [];
  let end = buf.lastIndexOf(0x0a) + 1;
  for (let start = 0, line = 1; start < end; line++) {
    const next = buf.indexOf(0x0a, start) + 1;
    try {
      records.push(JSON.parse(buf.toString('utf8', start, next - 1)));
      lines.push(line);
    } catch {
      // An unreadable final line with nothing after it is an unfinished write, not damage in the middle.
      if (next === buf.length) {
        end = start;
        break;
      }
      unreadable.push(line);
    }
    start = next;
  }
  return { records, lines, skipped: unreadable.length, unreadable, end };
}

/** Reads a journal without writing to it (safe while a server appends); a missing file reads as empty. */
export async function readJournal(file: string): Promise<JournalContents> {
  let handle: FileHandle;
  try {
    handle = await fsOpen(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { records: [], lines: [], skipped: 0, unreadable: [] };
    throw err;
  }
  try {
    const { records, lines, skipped, unreadable } = parseLines(await handle.readFile());
    return { records, lines, skipped, unreadable };
  } finally {
    await handle.close();
  }
}
