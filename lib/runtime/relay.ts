// A child's output passed on to our own at a bounded pace: a child that writes without pause
// (`yes`) is made to wait on its own writes, and never fills this process's memory.

import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

/** How fast a relayed stream is read, and how long one of its lines may be. */
export interface RelayLimits {
  /** Bytes read per second; past them the stream is paused until the second is over (the writer waits). */
  bytesPerSecond: number;
  /** Characters kept of one line; the rest of a longer line is dropped and the line ends in `…`. */
  maxLineChars: number;
}

/** 64 KiB a second, lines of up to 4,096 characters. */
export const RELAY_LIMITS: RelayLimits = Object.freeze({ bytesPerSecond: 64 * 1024, maxLineChars: 4096 });

/**
 * Passes `stream`'s lines to `write`, a chunk's whole lines in one call. Nothing is buffered past
 * one line: a line longer than the limit is cut, and a stream read faster than the limit allows is
 * paused for the rest of the second, so the kernel pipe fills and the writer blocks. The last line
 * is passed on when the stream ends, even without its newline.
 */
export function relayLines(
  stream: Readable,
  write: (text: string) => void,
  limits: RelayLimits = RELAY_LIMITS,
  now: () => number = Date.now,
): void {
  const decoder = new StringDecoder('utf8');
  let line = '';
  let cut = false;
  let windowStart = now();
  let spent = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const add = (text: string) => {
    if (cut) return;
    const room = limits.maxLineChars - line.length;
    if (text.length <= room) line += text;
    else {
      line += `${text.slice(0, room)}…`;
      cut = true;
    }
  };
  const take = (text: string) => {
    let out = '';
    let from = 0;
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', from)) {
      add(text.slice(from, end));
      out += `${line}\n`;
      line = '';
      cut = false;
      from = end + 1;
    }
    add(text.slice(from));
    if (out !== '') write(out);
  };
  stream.on('data', (chunk: Buffer) => {
    take(decoder.write(chunk));
    const at = now();
    if (at - windowStart >= 1000) {
      windowStart = at;
      spent = 0;
    }
    spent += chunk.length;
    if (spent < limits.bytesPerSecond || timer !== undefined) return;
    stream.pause();
    timer = setTimeout(() => {
      timer = undefined;
      windowStart = now();
      spent = 0;
      stream.resume();
    }, Math.max(0, windowStart + 1000 - at));
  });
  stream.once('close', () => {
    if (timer !== undefined) clearTimeout(timer);
    take(decoder.end());
    if (line !== '') write(`${line}\n`);
    line = '';
  });
}
