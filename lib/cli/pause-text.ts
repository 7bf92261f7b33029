// What `pause` and `status` say of a paused hook: since when, until when, what it holds, how long its
// oldest item has waited.

import type { PausedHook } from '../server/pauses.ts';

/** One paused hook as a line: since when, until when, what it holds, how long its oldest has waited. */
export function pausedLine(p: PausedHook, now: number): string {
  const oldest = p.oldest === undefined ? '' : `, oldest waiting ${waitedFor(p.oldest, now)}`;
  return `${p.hook}: paused since ${p.since}${p.until === undefined ? '' : ` until ${p.until}`}; ${
    holds(p)
  } waiting${oldest}`;
}

/** How long ago `time` was, as `4m 10s`. */
export function waitedFor(time: string, now: number): string {
  const seconds = Math.max(0, Math.floor((now - Date.parse(time)) / 1000));
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  return h > 0 ? `${h}h ${m}m` : m > 0 ? `${m}m ${seconds % 60}s` : `${seconds}s`;
}

/** What a paused hook holds, as `2 runs, 1 wake, 0 outbox entries`. */
export function holds(p: Pick<PausedHook, 'runs' | 'wakes' | 'outbox'>): string {
  return `${_count(p.runs, 'run')}, ${_count(p.wakes, 'wake')}, ${_count(p.outbox, 'outbox entry', 'outbox entries')}`;
}

function _count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
