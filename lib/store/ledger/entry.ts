import { constants, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { ErrorCode } from '../../errors.ts';
import { array, boolean, check, formatIssue, literal, number, object, optional, record, string, typeName, type Schema } from '../../schema.ts';

// What one request ledger entry holds, and the check every line read back passes before the
// reader believes it (a ledger file is input like any other: a hand edit, a torn write).

/** Why a signature did not verify, as the ledger keeps it: the kind, the header at fault, the measured skew of a stale timestamp. */
export interface SignatureVerdict {
  scheme: string;
  ok: boolean;
  /** `missing-header`, `bad-signature`, `stale-timestamp`, `no-secret`. */
  why?: SignatureWhy;
  header?: string;
  /** Seconds the signed timestamp was from the server's clock (positive: in the past). */
  skewSeconds?: number;
  /** The refusal as the client read it (header and rule, never a value). */
  reason?: string;
}

export const SIGNATURE_WHY = ['missing-header', 'bad-signature', 'stale-timestamp', 'no-secret'] as const;
export type SignatureWhy = (typeof SIGNATURE_WHY)[number];

/** A stored body: the bytes kept (UTF-8 text, else base64), how many arrived, whether the rest was cut. */
export interface StoredBody {
  encoding: 'utf8' | 'base64';
  data: string;
  /** Bytes that arrived. */
  bytes: number;
  truncated: boolean;
}

/** Why no body is kept. */
export const BODY_OMITTED = ['metadata-only', 'opted-out', 'not-read', 'ledger-cap'] as const;
export type BodyOmitted = (typeof BODY_OMITTED)[number];

/** What a request became. */
export interface Became {
  /** Main-session events (their seq). */
  events?: number[];
  runs?: string[];
  /** Forward mode's outbox entries. */
  outbox?: string[];
  /** A retry answered from the first request's record: that request's id, when known. */
  duplicateOf?: string;
  /** Filtered out (200 ignored), or the transform skipped it (204). */
  ignored?: boolean;
  skipped?: boolean;
  /** A provider's set-up handshake (Meta's subscription check, Slack's URL verification). */
  handshake?: string;
}

/** The lanes of the ledger: each has its own budget. */
export type Lane = 'authenticated' | 'unauthenticated';

/** One request as the ledger keeps it. */
export interface LedgerEntry {
  /** The entry's own id: random, assigned by the server. */
  id: string;
  /** The request id (`X-Request-Id`, the log's `id`): the client may choose it, so it need not be unique. */
  requestId: string;
  time: string;
  method: string;
  path: string;
  /** The query as received, with credential-like values redacted; absent when empty. */
  query?: string;
  /** The hook name after `hooks.path` (`''` for the base path); absent outside a hook. */
  hook?: string;
  mapping?: string;
  client: string;
  lane: Lane;
  /** How the request authenticated, if it did: `token` (hook or gmail token), `signature`, or `none`. */
  auth: 'token' | 'signature' | 'none';
  headers: Record<string, string | string[]>;
  /** Headers were left out: a coalesced refusal keeps at most 2 KiB of them. */
  headersTruncated?: boolean;
  body?: StoredBody;
  bodyOmitted?: BodyOmitted;
  signature?: SignatureVerdict;
  status: number;
  /** The stable error code of a failure. */
  code?: string;
  /** The error message the client got. */
  error?: string;
  became?: Became;
  durationMs: number;
  /** The entry this one replays. */
  replayOf?: string;
  /** Refusals of one client coalesced into this entry within the window: how many, and the last one's time. */
  count?: number;
  lastTime?: string;
}

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
  outbox: optional(array(text)),
  duplicateOf: optional(text),
  ignored: optional(boolean),
  skipped: optional(boolean),
  handshake: optional(text),
});
const headerValue: Schema<string | string[]> = (value, at, report) => {
  if (typeof value === 'string' || (Array.isArray(value) && value.every((v) => typeof v === 'string'))) return value as string | string[];
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
  body: optional(object({ encoding: literal('utf8', 'base64'), data: text, bytes: number({ integer: true, min: 0 }), truncated: boolean })),
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
  durationMs: number({ min: 0 }),
  replayOf: optional(text),
  count: optional(number({ integer: true, min: 1 })),
  lastTime: optional(text),
});
const countShape = object({ t: literal('count'), id: string({ nonEmpty: true }), count: number({ integer: true, min: 1 }), lastTime: text });

/** A ledger line read back: an entry, a count, or what was wrong with it. */
export type CheckedLedgerLine = { kind: 'entry'; entry: LedgerEntry } | { kind: 'count'; count: CountLine } | { kind: 'bad'; problem: string };

/** Checks one parsed line of a ledger file. */
export function checkLedgerLine(value: unknown): CheckedLedgerLine {
  if ((value as { t?: unknown } | null)?.t === 'count') {
    const counted = check(countShape, value);
    return counted.ok ? { kind: 'count', count: counted.value as CountLine } : { kind: 'bad', problem: counted.issues.map(formatIssue).slice(0, 3).join('; ') };
  }
  const checked = check(entryShape, value);
  return checked.ok ? { kind: 'entry', entry: checked.value as LedgerEntry } : { kind: 'bad', problem: checked.issues.map(formatIssue).slice(0, 3).join('; ') };
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
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'ELOOP' ? notASegment(file, error) : error;
  });
  const info = await handle.stat().catch(async (error: unknown) => {
    await handle.close();
    throw error;
  });
  if (info.isFile()) return { handle, info };
  await handle.close();
  throw notASegment(file);
}

/** How a new segment is made: created here and now (never one already there, nor through a link), appended to. */
export const SEGMENT_NEW = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** The error of a file named like a segment that is not a regular file (a link, a FIFO, a folder): it is no segment. */
export function notASegment(file: string, cause?: unknown): Error {
  return Object.assign(new Error(`Cannot read ledger segment ${file}: it is not a regular file (a symbolic link, a FIFO or a folder); it is left alone`, cause === undefined ? {} : { cause }), { code: ErrorCode.NotASegment });
}

/** The file-name initial of a lane. */
export function laneInitial(lane: Lane): 'a' | 'u' {
  return lane === 'authenticated' ? 'a' : 'u';
}
