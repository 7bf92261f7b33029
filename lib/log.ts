// The JSON-lines logger, its line format (and the ISO time text the journal and ledger share), the
// per-turn line buffer serve writes stderr through, and warnings and errors bounded per message (ten
// a second, the rest counted).

import { setImmediate } from 'node:timers';

/** Fields of a log line; values must never carry a token or a request body. */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

/** One JSON object per line on a stream: what journald and log shippers read best. */
export interface Logger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** Turns one record into one line, newline included; `time` is in ms since the epoch. */
export type LogFormat = (time: number, level: string, message: string, fields: LogFields) => string;

// Epoch milliseconds as ISO 8601 text, as Date's toISOString writes it, without going through it on
// the hot path: V8's toISOString formats through a general date printer, some 7,000 instructions a
// call (callgrind, Node 20), and an accepted wake takes three (its journal line, its ledger entry,
// its log line). The day's text is made once per day; the time of day is arithmetic.

const _DAY = 86_400_000;
// Past this (the year 10000) toISOString writes a six-digit year: left to it, as are times before 1970.
const _FAST_UNTIL = 253_402_300_800_000;

const _TWO = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));
const _THREE = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));

let _dayStart = Number.NaN;
let _dayText = '';
// Many lines come to a millisecond under load: the last one's text is reused.
let _lastTime = Number.NaN;
let _lastIso = '';

/** `time` (ms since the epoch) as toISOString writes it (a RangeError for an invalid time, as it throws). */
export function isoTime(time: number): string {
  if (time !== _lastTime) {
    _lastIso = _format(time);
    _lastTime = time;
  }
  return _lastIso;
}

function _format(time: number): string {
  if (!(time >= 0 && time < _FAST_UNTIL)) return new Date(time).toISOString();
  // A Date keeps whole milliseconds (a fraction is cut off, as here).
  const ms = Math.floor(time);
  let inDay = ms - _dayStart;
  if (!(inDay >= 0 && inDay < _DAY)) {
    _dayStart = ms - (ms % _DAY);
    _dayText = new Date(_dayStart).toISOString().slice(0, 11);
    inDay = ms - _dayStart;
  }
  const milli = inDay % 1000;
  const seconds = (inDay - milli) / 1000;
  const s = seconds % 60;
  const minutes = (seconds - s) / 60;
  const m = minutes % 60;
  const h = (minutes - m) / 60;
  return `${_dayText}${_TWO[h]}:${_TWO[m]}:${_TWO[s]}.${_THREE[milli]}Z`;
}

/** `{"time":ISO,"level":…,"msg":…,…fields}` on one line. */
export const formatJson: LogFormat = (time, level, message, fields) => {
  // A field named like a fixed key would replace that key's value in place: the general path keeps that.
  if ('time' in fields || 'level' in fields || 'msg' in fields) {
    return `${JSON.stringify({ time: isoTime(time), level, msg: message, ...fields })}\n`;
  }
  // The fixed keys written directly, the fields in one stringify: no merged object per line.
  const rest = JSON.stringify(fields);
  const head = `{"time":"${isoTime(time)}","level":${JSON.stringify(level)},"msg":${JSON.stringify(message)}`;
  return rest.length === 2 ? `${head}}\n` : `${head},${rest.slice(1)}\n`;
};

/** A logger writing one line per record through `write`, stamped by `now`, shaped by `format`. */
export function createLogger(
  write: (line: string) => void,
  now: () => number = Date.now,
  format: LogFormat = formatJson,
): Logger {
  const emit = (level: string, message: string, fields: LogFields = {}) => write(format(now(), level, message, fields));
  return {
    info: (message, fields) => emit('info', message, fields),
    warn: (message, fields) => emit('warn', message, fields),
    error: (message, fields) => emit('error', message, fields),
  };
}

/** Lines held for one write; see {@link bufferLines}. */
export interface LineBuffer {
  /** Takes a line (or any text) to be written, in order, with the rest of this turn's. */
  write(text: string): void;
  /** Writes what is held now, synchronously when the sink is. */
  flush(): void;
}

/** Past this many characters held, the buffer is written at once rather than at the end of the turn. */
export const LINE_BUFFER_MAX = 64 * 1024;

/**
 * Collects what is written during one event-loop turn and hands it to `sink` as one chunk when the
 * turn's I/O is done (setImmediate), or at once past `maxChars`. A synchronous write per request
 * line cost a fifth of a 401; one per turn costs that once for every request the turn served.
 * Order is kept: text reaches the sink in the order it was written. What is held when the process
 * dies without running JavaScript again (SIGKILL, an OOM kill, a native abort) is lost: at most
 * one turn's lines. `flushOnExit` covers a normal exit and a fatal JavaScript error.
 */
export function bufferLines(sink: (text: string) => void, maxChars = LINE_BUFFER_MAX): LineBuffer {
  let held = '';
  let scheduled = false;
  const flush = () => {
    if (held === '') return;
    const text = held;
    held = '';
    sink(text);
  };
  const onTurnEnd = () => {
    scheduled = false;
    flush();
  };
  return {
    write(text) {
      held += text;
      if (held.length >= maxChars) return flush();
      if (!scheduled) {
        scheduled = true;
        setImmediate(onTurnEnd);
      }
    },
    flush,
  };
}

/**
 * Flushes `buffer` synchronously when the process exits and when an uncaught error is about to end
 * it (before Node prints the error, so the lines leading up to it come first). Returns the undo.
 */
export function flushOnExit(buffer: LineBuffer, proc: Pick<NodeJS.Process, 'on' | 'off'> = process): () => void {
  const flush = () => buffer.flush();
  proc.on('exit', flush);
  proc.on('uncaughtExceptionMonitor', flush);
  return () => {
    proc.off('exit', flush);
    proc.off('uncaughtExceptionMonitor', flush);
  };
}

// Warnings and errors under a flood: every kind is written, but not one line per occurrence when
// the same message comes faster than a person can read it (a lockout from thousands of addresses,
// an unexpected error on every request). Past the bound a message is counted, and the count is
// written once per window, at the message's own level. Info lines pass as they come (the request
// line has its own bound, lib/edge/request-log.ts).

/** Lines of one warning or error message written in one second at most; the rest are counted. */
export const MAX_ALIKE_PER_SECOND = 10;

/** The message of the line that counts the warnings or errors of one message left out. */
export const LEFT_OUT = 'log lines left out';

/** How often the counts of what was left out are written. */
export const LEFT_OUT_WINDOW_MS = 10_000;

// Messages are the code's own constants, so there are few; past this many, the rest pass unbounded.
const _MAX_MESSAGES = 1024;

/** A logger that bounds its warnings and errors per message; see {@link boundWarnings}. */
export interface BoundedLogger extends Logger {
  /** Writes the counts held now and stops the timer (at shutdown). */
  flush(): void;
}

export interface BoundOptions {
  /** A monotonic clock in milliseconds. */
  now?: () => number;
  windowMs?: number;
}

interface _Message {
  level: 'warn' | 'error';
  message: string;
  slotEnd: number;
  used: number;
  leftOut: number;
  since: number;
}

/**
 * `log` with its warnings and errors bounded: at most {@link MAX_ALIKE_PER_SECOND} lines of one
 * level and message a second; the others are counted and written as one `log lines left out` line
 * per message (with `message`, `count`, `seconds`) at the end of the window. The timer is unref'd
 * and runs only while a count is held.
 */
export function boundWarnings(log: Logger, options: BoundOptions = {}): BoundedLogger {
  const now = options.now ?? performance.now.bind(performance);
  const windowMs = options.windowMs ?? LEFT_OUT_WINDOW_MS;
  const messages = new Map<string, _Message>();
  let timer: ReturnType<typeof setTimeout> | null = null;

  const write = () => {
    const t = now();
    for (const held of messages.values()) {
      if (held.leftOut === 0) continue;
      const fields: LogFields = {
        message: held.message,
        count: held.leftOut,
        seconds: Math.max(1, Math.round((t - held.since) / 1000)),
      };
      log[held.level](LEFT_OUT, fields);
      held.leftOut = 0;
    }
  };
  const tick = () => {
    timer = null;
    write();
  };
  const pass = (level: 'warn' | 'error', message: string, fields?: LogFields) => {
    const t = now();
    const key = `${level} ${message}`;
    let held = messages.get(key);
    if (held === undefined) {
      if (messages.size >= _MAX_MESSAGES) return log[level](message, fields);
      held = { level, message, slotEnd: t + 1000, used: 0, leftOut: 0, since: t };
      messages.set(key, held);
    } else if (t >= held.slotEnd) {
      held.slotEnd = t + 1000;
      held.used = 0;
    }
    if (held.used < MAX_ALIKE_PER_SECOND) {
      held.used++;
      return log[level](message, fields);
    }
    if (held.leftOut === 0) held.since = t;
    held.leftOut++;
    if (timer === null) {
      timer = setTimeout(tick, windowMs);
      timer.unref?.();
    }
  };
  return {
    info: (message, fields) => log.info(message, fields),
    warn: (message, fields) => pass('warn', message, fields),
    error: (message, fields) => pass('error', message, fields),
    flush() {
      if (timer !== null) clearTimeout(timer);
      timer = null;
      write();
    },
  };
}
