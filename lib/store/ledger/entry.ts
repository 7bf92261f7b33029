// The check every ledger line read back passes before the reader believes it (a ledger file is
// input like any other: a hand edit, a torn write), over the entry of lib/model/ledger-entry.ts;
// the ledger's folder and its segments' names.

import { constants, type Stats } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { ErrorCode } from '../../errors.ts';
import { CAUSE_KINDS } from '../../model/cause.ts';
import { BODY_OMITTED, type Lane, type LedgerEntry, SIGNATURE_WHY } from '../../model/ledger-entry.ts';
import {
  array,
  boolean,
  check,
  formatIssue,
  literal,
  number,
  object,
  optional,
  record,
  type Schema,
  string,
  typeName,
} from '../../schema.ts';

/** A later count of a coalesced entry. */
export interface CountLine {
  t: 'count';
  id: string;
  count: number;
  lastTime: string;
}

const text = string();
const became = object({
  events: optional(array(number({ integer: true, min: 0 }))),
  runs: optional(array(text)),
  joined: optional(array(text)),
  outbox: optional(array(text)),
  deliveries: optional(array(text)),
  held: optional(array(number({ integer: true, min: 1 }))),
  duplicateOf: optional(text),
  ignored: optional(boolean),
  skipped: optional(boolean),
  limited: optional(boolean),
  heldUntil: optional(text),
  handshake: optional(text),
});
const headerValue: Schema<string | string[]> = (value, at, report) => {
  if (typeof value === 'string' || (Array.isArray(value) && value.every((v) => typeof v === 'string'))) {
    return value as string | string[];
  }
  report.issues.push({ path: at, message: `must be a string or a list of strings, got ${typeName(value)}` });
  return undefined;
};
const entryShape = object({
  id: string({ nonEmpty: true }),
  requestId: text,
  time: text,
  method: text,
  path: text,
  query: optional(text),
  hook: optional(text),
  mapping: optional(text),
  client: text,
  lane: literal('authenticated', 'unauthenticated'),
  auth: literal('token', 'signature', 'none'),
  headers: record(headerValue),
  headersTruncated: optional(boolean),
  body: optional(
    object({
      encoding: literal('utf8', 'base64'),
      data: text,
      bytes: number({ integer: true, min: 0 }),
      truncated: boolean,
    }),
  ),
  bodyOmitted: optional(literal(...BODY_OMITTED)),
  signature: optional(
    object({
      scheme: text,
      ok: boolean,
      why: optional(literal(...SIGNATURE_WHY)),
      header: optional(text),
      skewSeconds: optional(number({ integer: true })),
      reason: optional(text),
    }),
  ),
  status: number({ integer: true, min: 100, max: 599 }),
  code: optional(text),
  error: optional(text),
  became: optional(became),
  cause: optional(object({ kind: literal(...CAUSE_KINDS), text, at: optional(text) })),
  durationMs: number({ min: 0 }),
  replayOf: optional(text),
  credential: optional(text),
  count: optional(number({ integer: true, min: 1 })),
  lastTime: optional(text),
});
const countShape = object({
  t: literal('count'),
  id: string({ nonEmpty: true }),
  count: number({ integer: true, min: 1 }),
  lastTime: text,
});

/** A ledger line read back: an entry, a count, or what was wrong with it. */
export type CheckedLedgerLine = { kind: 'entry'; entry: LedgerEntry } | { kind: 'count'; count: CountLine } | {
  kind: 'bad';
  problem: string;
};

/** Checks one parsed line of a ledger file. */
export function checkLedgerLine(value: unknown): CheckedLedgerLine {
  if ((value as { t?: unknown } | null)?.t === 'count') {
    const counted = check(countShape, value);
    return counted.ok
      ? { kind: 'count', count: counted.value as CountLine }
      : { kind: 'bad', problem: counted.issues.map(formatIssue).slice(0, 3).join('; ') };
  }
  const checked = check(entryShape, value);
  return checked.ok
    ? { kind: 'entry', entry: checked.value as LedgerEntry }
    : { kind: 'bad', problem: checked.issues.map(formatIssue).slice(0, 3).join('; ') };
}

/** The ledger's folder inside the state directory. */
export const LEDGER_DIR = 'ledger';

/** A lane's segment files: `<lane initial>-<number>.jsonl`, numbered in the order they were begun. */
// Numbered from 1, written without leading zeros: `a-01.jsonl` is no segment (it would be
// counted as 1, and deleting segment 1 would remove `a-1.jsonl`, never it).
export const SEGMENT = /^([au])-([1-9]\d{0,14})\.jsonl$/;

/**
 * A segment opened to be read, and what its file is: never through a symbolic link, and without
 * waiting for a writer (a FIFO named like a segment would hold the open forever); anything but a
 * regular file is refused with {@link notASegment}'s error.
 */
export async function openSegment(file: string): Promise<{ handle: FileHandle; info: Stats }> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
    (error: NodeJS.ErrnoException) => {
      throw error.code === 'ELOOP' ? notASegment(file, error) : error;
    },
  );
  const info = await handle.stat().catch(async (error: unknown) => {
    await handle.close();
    throw error;
  });
  if (info.isFile()) return { handle, info };
  await handle.close();
  throw notASegment(file);
}

/** How a new segment is made: created here and now (never one already there, nor through a link), appended to. */
export const SEGMENT_NEW = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_EXCL |
  constants.O_NOFOLLOW;

/** The error of a file named like a segment that is not a regular file (a link, a FIFO, a folder): it is no segment. */
export function notASegment(file: string, cause?: unknown): Error {
  return Object.assign(
    new Error(
      `Cannot read ledger segment ${file}: it is not a regular file (a symbolic link, a FIFO or a folder); it is left alone`,
      cause === undefined ? {} : { cause },
    ),
    { code: ErrorCode.NotASegment },
  );
}

/** The file-name initial of a lane. */
export function laneInitial(lane: Lane): 'a' | 'u' {
  return lane === 'authenticated' ? 'a' : 'u';
}
