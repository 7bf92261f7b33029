// The work of each hook as `status` prints it: one line per hook with something to say, the idle rest counted.

import type { HookStatus } from '../model/hook-status.ts';
import { waitedFor } from './pause-text.ts';

/**
 * One line per hook that has runs or sets a control (`ci: 1 running, 3 queued (concurrency 1,
 * maxQueued 20)`), then how many hooks are idle with nothing set (`all 3 hooks idle, no control set`). Each work control adds its part
 * to {@link _parts} (what the hook is doing) or {@link _settings} (what it sets).
 */
export function hookLines(hooks: readonly HookStatus[], now = Date.now()): string[] {
  const lines: string[] = [];
  let idle = 0;
  for (const hook of hooks) {
    const parts = _parts(hook, now);
    const settings = _settings(hook);
    if (parts.length === 0 && settings.length === 0) {
      idle++;
      continue;
    }
    const said = parts.length === 0 ? 'idle' : parts.join(', ');
    lines.push(`${hook.hook}: ${said}${settings.length === 0 ? '' : ` (${settings.join(', ')})`}`);
  }
  if (idle > 0 && lines.length === 0) {
    lines.push(`${idle === 1 ? 'the one hook' : `all ${idle} hooks`} idle, no control set`);
  } else if (idle > 0) lines.push(`${idle} other hook${idle === 1 ? '' : 's'} idle, no control set`);
  return lines;
}

// What the hook is doing now; empty when nothing.
function _parts(hook: HookStatus, now: number): string[] {
  const parts: string[] = [];
  const { paused } = hook;
  if (paused !== undefined) {
    parts.push(`paused since ${paused.since}${paused.until === undefined ? '' : ` until ${paused.until}`}`);
  }
  if (hook.running > 0) parts.push(`${hook.running} running`);
  if (hook.queued > 0) parts.push(`${hook.queued} queued`);
  const open = hook.coalescing ?? 0;
  if (open > 0) parts.push(`${open} coalescing window${open === 1 ? '' : 's'} open`);
  if (paused === undefined) return parts;
  if (paused.wakes > 0) parts.push(`${paused.wakes} wake${paused.wakes === 1 ? '' : 's'} held`);
  if (paused.outbox > 0) parts.push(`${paused.outbox} outbox entr${paused.outbox === 1 ? 'y' : 'ies'} waiting`);
  if (paused.oldest !== undefined) parts.push(`oldest waiting ${waitedFor(paused.oldest, now)}`);
  return parts;
}

// The controls the hook sets.
function _settings(hook: HookStatus): string[] {
  const settings: string[] = [];
  if (hook.concurrency !== null) settings.push(`concurrency ${hook.concurrency}`);
  if (hook.maxQueued !== null) settings.push(`maxQueued ${hook.maxQueued}`);
  if (hook.coalesce !== undefined && hook.coalesce !== null) settings.push(_coalesce(hook.coalesce));
  return settings;
}

function _coalesce(c: NonNullable<HookStatus['coalesce']>): string {
  return `coalesce ${c.windowSeconds}s quiet, at most ${c.maxWaitSeconds}s, ${c.messages} message${
    c.messages === 'all' ? 's' : ''
  }`;
}
