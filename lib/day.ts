// Calendar days in an IANA time zone: the day an instant falls in, when that day starts and when the
// next one does (a day of 23 or 25 hours across a DST change, a midnight the clocks skip), and
// whether a zone name is one the runtime knows. A budget per day counts in these days.

/** A calendar day in a time zone: its date (`YYYY-MM-DD`) and the instants it starts and ends (epoch ms, end exclusive). */
export interface Day {
  readonly day: string;
  readonly start: number;
  readonly end: number;
}

const _formats = new Map<string, Intl.DateTimeFormat>();
// The last day looked up per zone: the requests of one day find it without asking Intl again.
const _last = new Map<string, Day>();

/** Whether `timeZone` is an IANA zone name (or `UTC`) the runtime's Intl knows. */
export function isTimeZone(timeZone: string): boolean {
  try {
    _format(timeZone);
    return true;
  } catch {
    return false;
  }
}

/** The day `ms` falls in, in `timeZone`; a RangeError for a zone the runtime does not know. */
export function dayAt(ms: number, timeZone: string): Day {
  const last = _last.get(timeZone);
  if (last !== undefined && ms >= last.start && ms < last.end) return last;
  const date = _dateOf(ms, timeZone);
  let found: Day = { day: date, start: dayStart(date, timeZone), end: dayStart(nextDate(date), timeZone) };
  // Clocks set back across midnight (a fall-back at 00:00) show the day before again for an hour:
  // a day, once begun, does not go back.
  if (ms >= found.end) {
    const next = nextDate(date);
    found = { day: next, start: found.end, end: dayStart(nextDate(next), timeZone) };
  }
  _last.set(timeZone, found);
  return found;
}

/** The date after `day` (`YYYY-MM-DD`), by the calendar alone. */
export function nextDate(day: string): string {
  const [y, m, d] = day.split('-').map(Number) as [number, number, number];
  return new Date(Date.UTC(y, m - 1, d + 1)).toISOString().slice(0, 10);
}

/**
 * The first instant of `day` in `timeZone`: its local midnight, or where the clocks skip midnight
 * (a DST change at 00:00), the instant of the change, when the day begins at 01:00.
 */
export function dayStart(day: string, timeZone: string): number {
  const [y, m, d] = day.split('-').map(Number) as [number, number, number];
  const midnight = Date.UTC(y, m - 1, d);
  // Within a day of midnight the zone has at most two offsets (changes are months apart).
  const before = _offset(midnight - 30 * 3_600_000, timeZone);
  const after = _offset(midnight + 30 * 3_600_000, timeZone);
  const fits = [midnight - before, midnight - after].filter((t) => t + _offset(t, timeZone) === midnight);
  if (fits.length > 0) return Math.min(...fits);
  // Midnight is in a gap: the day starts when the new offset does, found between the two candidates.
  let lo = midnight - after;
  let hi = midnight - before;
  while (hi - lo > 1_000) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (_offset(mid, timeZone) === after) hi = mid;
    else lo = mid;
  }
  return hi;
}

// The local wall clock minus UTC at `ms`, in ms (whole seconds: zones' offsets are).
function _offset(ms: number, timeZone: string): number {
  const second = Math.floor(ms / 1_000) * 1_000;
  const parts = _parts(second, timeZone);
  return Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second) - second;
}

function _dateOf(ms: number, timeZone: string): string {
  const { year, month, day } = _parts(ms, timeZone);
  return `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

function _parts(ms: number, timeZone: string): Record<'year' | 'month' | 'day' | 'hour' | 'minute' | 'second', number> {
  const out = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0 };
  for (const part of _format(timeZone).formatToParts(ms)) {
    if (part.type in out) out[part.type as keyof typeof out] = Number(part.value);
  }
  return out;
}

function _format(timeZone: string): Intl.DateTimeFormat {
  let format = _formats.get(timeZone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    _formats.set(timeZone, format);
  }
  return format;
}
