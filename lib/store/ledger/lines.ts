// The request ledger's lines: what of a request's body is kept and how (text or base64), an
// entry written as one line of a segment, and a segment's lines counted back when a later
// process opens the ledger.

import { isUtf8 } from 'node:buffer';
import type { LedgerEntry } from '../../model/ledger-entry.ts';
import type { JsonBytes } from './json-bytes.ts';
import { openSegment } from './entry.ts';

/** A body as it will be stored: the bytes kept, as text or not, and how many arrived. */
export interface KeptBody {
  bytes: Buffer;
  /** UTF-8 text (stored as it is), else base64. */
  text: boolean;
  size: number;
  truncated: boolean;
}

/**
 * The body as stored: UTF-8 text when it is text without control characters other than line
 * breaks and tabs (it reads back as written), else base64; cut at `cap` bytes, marked. Nothing is
 * kept under a cap of 0, and the entry says so.
 */
export function keepBody(entry: LedgerEntry, body: Buffer, cap: number): KeptBody | undefined {
  if (cap <= 0) {
    entry.bodyOmitted = 'ledger-cap';
    return undefined;
  }
  const cut = body.length > cap ? body.subarray(0, cap) : body;
  const truncated = cut.length < body.length;
  let kept = cut;
  // A cut body may end inside a character, which is then left off.
  if (truncated) {
    for (let drop = 1; drop <= 3 && !isUtf8(kept) && drop <= cut.length; drop++) {
      kept = cut.subarray(0, cut.length - drop);
    }
  }
  const text = isUtf8(kept) && !_controls(kept);
  return { bytes: text ? kept : cut, text, size: body.length, truncated };
}

// Whether the bytes hold a control character other than tab, line feed and carriage return.
function _controls(bytes: Buffer): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if ((b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) || b === 0x7f) return true;
  }
  return false;
}

/** The most bytes of headers (names and values) a coalesced refusal's entry keeps, in memory and in its line. */
export const REFUSAL_HEADER_BYTES = 2048;

/**
 * Keeps at most `max` bytes of the entry's headers, in their order: a header that does not fit in
 * what is left is left out (a smaller one after it may still fit), and the entry says so.
 */
export function capHeaders(entry: LedgerEntry, max: number): void {
  let used = 0;
  let cut = false;
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(entry.headers)) {
    const size = name.length + (typeof value === 'string' ? value.length : value.reduce((n, v) => n + v.length, 0));
    if (used + size > max) {
      cut = true;
      continue;
    }
    used += size;
    if (name === '__proto__') {
      Object.defineProperty(kept, name, { value, enumerable: true, writable: true, configurable: true });
    } else kept[name] = value;
  }
  if (!cut) return;
  entry.headers = kept;
  entry.headersTruncated = true;
}

// The writer puts an entry's time third, after its two ids (short, without quotes or escapes).
const _TIME = /^\{"id":"[^"\\]*","requestId":"[^"\\]*","time":"([^"\\]*)"/;

// The time of a segment's first entry, when its first line says it: the line parsed when it was
// read whole, else the time at its start (a line holding a body of hundreds of KiB, or a damaged
// segment that is one line of many MiB, is never held whole).
function _firstTime(line: Buffer, whole: boolean): number | null {
  try {
    const time = whole
      ? (JSON.parse(line.toString('utf8')) as { time?: unknown }).time
      : _TIME.exec(line.toString('latin1', 0, 1024))?.[1];
    const ms = typeof time === 'string' ? Date.parse(time) : Number.NaN;
    return Number.isNaN(ms) ? null : ms;
  } catch {
    return null;
  }
}

/**
 * A segment's size, lines and first entry's time (else its file's), read through one buffer of a
 * fixed size: the segments of a ledger at its bounds are tens of MiB, never held at once, and of
 * the first line no more than that buffer is kept.
 */
export async function scanSegment(file: string): Promise<{ bytes: number; count: number; firstMs: number }> {
  const { handle, info } = await openSegment(file);
  try {
    const buf = Buffer.allocUnsafe(262_144);
    const first: Buffer[] = [];
    let firstBytes = 0;
    let firstDone = false;
    let count = 0;
    for (
      let read = await handle.read(buf, 0, buf.length, null);
      read.bytesRead > 0;
      read = await handle.read(buf, 0, buf.length, null)
    ) {
      const chunk = buf.subarray(0, read.bytesRead);
      let at = chunk.indexOf(10);
      if (!firstDone) {
        const part = at === -1 ? chunk : chunk.subarray(0, at);
        if (firstBytes < buf.length) first.push(Buffer.from(part.subarray(0, buf.length - firstBytes)));
        firstBytes += part.length;
        firstDone = at !== -1;
      }
      for (; at !== -1; at = chunk.indexOf(10, at + 1)) count++;
    }
    return {
      bytes: info.size,
      count,
      firstMs: _firstTime(Buffer.concat(first), firstBytes <= buf.length) ?? info.mtimeMs,
    };
  } finally {
    await handle.close();
  }
}

/**
 * An entry's line (without its line break) written into `out`, the body kept (if any) as its last
 * member. One too large for a segment (`room` bytes) loses its headers and body, so no single line
 * can push a lane past its bytes.
 */
export function writeEntryLine(out: JsonBytes, entry: LedgerEntry, kept: KeptBody | undefined, room: number): void {
  const start = out.used;
  out.byte(0x7b);
  const any = out.members(entry as unknown as Record<string, unknown>, false);
  if (kept !== undefined) {
    out.ascii(any ? ',"body":{"encoding":' : '"body":{"encoding":');
    if (kept.text) {
      out.ascii('"utf8","data":');
      out.text(kept.bytes);
    } else {
      out.ascii('"base64","data":"');
      out.ascii(kept.bytes.toString('base64'));
      out.byte(0x22);
    }
    out.ascii(`,"bytes":${kept.size},"truncated":${kept.truncated}}`);
  }
  out.byte(0x7d);
  // The line break is the caller's: +1.
  if (out.used - start + 1 > room) {
    out.used = start;
    const { body: _b, headers: _h, ...rest } = entry;
    out.value({ ...rest, headers: {}, bodyOmitted: 'ledger-cap' });
  }
}
