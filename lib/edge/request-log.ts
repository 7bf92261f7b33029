// The request line under load: which requests get a line (`log.requests`), alike refusals folded
// into one line per window, and at most `log.maxLinesPerSecond` request lines a second. A flood
// of one refusal costs a count, not a line each; whatever the traffic, the log grows by a bounded
// number of lines, and every request is still accounted for in a line, a summary or a left-out count.
import type { Client } from '../guard/address.ts';
import type { LogFields, Logger } from '../log.ts';
import type { SignatureVerdict } from '../model/ledger-entry.ts';
import { refusalKey } from './refused-alike.ts';

/** Which requests get a request line: every one, only refusals (status 400 and above), or none. */
export type RequestLines = 'all' | 'refusals' | 'none';

/** The settings of `log` that the request line reads (a `Config['log']` satisfies it). */
export interface RequestLogSettings {
  requests: RequestLines;
  maxLinesPerSecond: number;
}

/** The message of the line that counts alike refusals after the first one's line. */
export const REFUSED_ALIKE = 'refused alike';
/** The message of the line that counts request lines the per-second bound left out. */
export const LINES_LEFT_OUT = 'request lines left out';

/** How long alike refusals are folded before their count is written. */
export const FOLD_WINDOW_MS = 10_000;

/** Most alike-refusal groups held at once (distinct clients and refusals in a window); past it a refusal is not folded, only bounded. */
export const MAX_GROUPS = 4096;

/** Decides, per answered request, whether its line is written now; see {@link createRequestLog}. */
export interface RequestLog {
  /**
   * Counts an answered request and says whether its line is to be written now (the caller builds
   * and writes it, so a folded or left-out request costs no line's work). `hook` is as logged.
   */
  admit(status: number, code: unknown, hook: string | null, client: Client, signature?: SignatureVerdict): boolean;
  /** Applies new settings (a reload); what is counted so far is kept. */
  configure(settings: RequestLogSettings): void;
  /** Writes every count held now (the summaries, then what was left out), and stops the timer. */
  flush(): void;
}

export interface RequestLogOptions {
  log: Logger;
  settings: RequestLogSettings;
  /** A monotonic clock in milliseconds. */
  now?: () => number;
  windowMs?: number;
}

// Alike refusals since their last line: the first one's fields, kept for the summary.
interface _Group {
  status: number;
  code: string | undefined;
  hook: string | null;
  client: string;
  reason: string | undefined;
  count: number;
  since: number;
}

/**
 * The request log of one server (it outlives reloads). A refusal (status 400 and above) alike to
 * one logged within the window is counted, and the count written as one `refused alike` line at
 * the window's end; any line beyond `maxLinesPerSecond` in a second is counted by status and code
 * and written as one `request lines left out` line per kind at the window's end. The window's
 * timer is unref'd and runs only while something is held; `flush()` writes it all at shutdown.
 */
export function createRequestLog(options: RequestLogOptions): RequestLog {
  const { log } = options;
  const now = options.now ?? performance.now.bind(performance);
  let { requests, maxLinesPerSecond } = options.settings;
  const groups = new Map<string, _Group>();
  const room = _budget(() => maxLinesPerSecond);
  const leftOut = _leftOut(log);
  // The window's end: a summary for each group that folded anything, then one line per kind left out.
  const write = (all: boolean) => {
    const t = now();
    _summarise(groups, { log, t, all, room, leftOut });
    leftOut.write(t);
  };
  const windows = _window(options.windowMs ?? FOLD_WINDOW_MS, () => {
    write(false);
    return groups.size > 0 || leftOut.held();
  });

  return {
    admit(status, code, hook, client, signature) {
      if (requests === 'none') return false;
      const refused = status >= 400;
      if (!refused && requests === 'refusals') return false;
      const t = now();
      const shown = typeof code === 'string' ? code : undefined;
      if (refused) {
        const key = refusalKey(client.key, status, shown, hook, signature?.why);
        const group = groups.get(key);
        if (group !== undefined) {
          group.count++;
          return false;
        }
        if (groups.size < MAX_GROUPS) {
          groups.set(key, {
            status,
            code: shown,
            hook,
            client: client.address,
            reason: signature?.reason,
            count: 0,
            since: t,
          });
          windows.arm();
        }
      }
      if (room(t)) return true;
      leftOut.add(status, shown, 1, t);
      windows.arm();
      return false;
    },
    configure(settings) {
      ({ requests, maxLinesPerSecond } = settings);
    },
    flush() {
      windows.cancel();
      write(true);
    },
  };
}

// One line's room in this second's budget of `max()` lines: `room(t)` takes it when there is one.
function _budget(max: () => number): (t: number) => boolean {
  let slotEnd = Number.NEGATIVE_INFINITY;
  let used = 0;
  return (t) => {
    if (t >= slotEnd) {
      slotEnd = t + 1000;
      used = 0;
    }
    if (used >= max()) return false;
    used++;
    return true;
  };
}

/** The lines the per-second budget left out, counted by status and code until the window's end. */
interface _LeftOut {
  add(status: number, code: string | undefined, count: number, t: number): void;
  held(): boolean;
  /** One line per kind left out, and the counts start again. */
  write(t: number): void;
}

function _leftOut(log: Logger): _LeftOut {
  // By status and code ("503 ERR_UNAVAILABLE"): a handful of kinds, whatever the traffic.
  const kinds = new Map<string, { status: number; code: string | undefined; count: number }>();
  let since = 0;
  return {
    add(status, code, count, t) {
      const kind = `${status} ${code ?? ''}`;
      const held = kinds.get(kind);
      if (held !== undefined) held.count += count;
      else {
        if (kinds.size === 0) since = t;
        kinds.set(kind, { status, code, count });
      }
    },
    held: () => kinds.size > 0,
    write(t) {
      for (const { status, code, count } of kinds.values()) {
        const fields: LogFields = { status, count, seconds: _seconds(t - since) };
        if (code !== undefined) fields['code'] = code;
        log.info(LINES_LEFT_OUT, fields);
      }
      kinds.clear();
    },
  };
}

// The window's timer: armed while something is held (unref'd), it calls `end`, and again a window
// later while `end` says something is still held.
function _window(ms: number, end: () => boolean): { arm(): void; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const tick = () => {
    timer = null;
    if (end()) arm();
  };
  const arm = () => {
    if (timer !== null) return;
    timer = setTimeout(tick, ms);
    timer.unref?.();
  };
  return {
    arm,
    cancel: () => {
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  };
}

// A summary for each group that folded anything, in this second's budget (else counted as left
// out); a group that folded nothing goes, so the next such refusal gets a line of its own.
function _summarise(
  groups: Map<string, _Group>,
  { log, t, all, room, leftOut }: {
    log: Logger;
    t: number;
    all: boolean;
    room: (t: number) => boolean;
    leftOut: _LeftOut;
  },
): void {
  for (const [key, group] of groups) {
    if (group.count === 0) {
      groups.delete(key);
      continue;
    }
    if (room(t)) log.info(REFUSED_ALIKE, _summary(group, t));
    else leftOut.add(group.status, group.code, group.count, t);
    group.count = 0;
    group.since = t;
    if (all) groups.delete(key);
  }
}

function _summary(group: _Group, t: number): LogFields {
  const fields: LogFields = { status: group.status };
  if (group.code !== undefined) fields['code'] = group.code;
  if (group.hook !== null) fields['hook'] = group.hook;
  fields['client'] = group.client;
  if (group.reason !== undefined) fields['reason'] = group.reason;
  fields['count'] = group.count;
  fields['seconds'] = _seconds(t - group.since);
  return fields;
}

// Whole seconds, at least one: the span a count covers, as a person reads it.
function _seconds(ms: number): number {
  return Math.max(1, Math.round(ms / 1000));
}
