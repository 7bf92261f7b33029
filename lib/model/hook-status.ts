/**
 * What `status`, `/metrics` and the inspector page show of each hook's work (lib/model/work-hook.ts
 * names the hooks): its runs executing and waiting, and the controls it sets. Each work control
 * adds its own field here, `null` where it has nothing to say.
 */

import { type WorkControl, workControls, type WorkHooks } from './work-hook.ts';

/** One hook's work now. */
export interface HookStatus {
  hook: string;
  /** Its runs executing. */
  running: number;
  /** Its runs waiting in the run queue. */
  queued: number;
  /** Its lane, as configured: `null` when it sets none. */
  concurrency: number | null;
  maxQueued: number | null;
  /** Its coalescing windows open now: pending runs still taking the requests of their key. */
  coalescing?: number;
  /** Its `coalesce`, as configured: `null` when it sets none. */
  coalesce?: { windowSeconds: number; maxWaitSeconds: number; messages: string } | null;
  /** Its pause (`hooks-ingress pause`), present only while it is paused: its runs waiting are `queued`. */
  paused?: HookPause;
}

/** A paused hook's pause and what it holds besides its queued runs. */
export interface HookPause {
  since: string;
  /** When the pause ends by itself (`pause --for`). */
  until?: string;
  /** Wakes held out of their session. */
  wakes: number;
  /** Forward mode's outbox entries waiting. */
  outbox: number;
  /** When the oldest thing it holds arrived (ISO); absent when it holds nothing. */
  oldest?: string;
}

/** The statuses with each paused hook's pause (a paused hook a reload removed added at the end). */
export function withPauses(
  statuses: readonly HookStatus[],
  pauses: readonly (HookPause & { hook: string })[],
): HookStatus[] {
  if (pauses.length === 0) return [...statuses];
  const byHook = new Map(pauses.map(({ hook, ...pause }) => [hook, pause]));
  const out = statuses.map((s) => (byHook.has(s.hook) ? { ...s, paused: byHook.get(s.hook)! } : s));
  for (const [hook, paused] of byHook) {
    if (!statuses.some((s) => s.hook === hook)) {
      out.push({ hook, running: 0, queued: 0, concurrency: null, maxQueued: null, paused });
    }
  }
  return out;
}

/**
 * Every hook the config names, `agent` and `wake` first and then the mappings in their order, and
 * any other hook that still has runs (its mapping removed by a reload), each with its load.
 */
export function hookStatuses(
  hooks: WorkHooks,
  loads: ReadonlyMap<string, { readonly queued: number; readonly running: number }>,
  windows: ReadonlyMap<string, number> = _NONE,
): HookStatus[] {
  const names = new Set(['agent', 'wake']);
  for (const mapping of hooks.mappings) names.add(mapping.id);
  for (const hook of [...loads.keys()].sort()) names.add(hook);
  const controls = workControls(hooks);
  const coalescing = new Map(hooks.mappings.flatMap((m) => (m.coalesce === undefined ? [] : [[m.id, m.coalesce]])));
  return [...names].map((hook) => {
    const load = loads.get(hook);
    const control = controls.get(hook);
    return {
      hook,
      running: load?.running ?? 0,
      queued: load?.queued ?? 0,
      concurrency: control?.concurrency ?? null,
      maxQueued: control?.maxQueued ?? null,
      coalescing: windows.get(hook) ?? 0,
      coalesce: _window(coalescing.get(hook)),
    };
  });
}

const _NONE: ReadonlyMap<string, number> = new Map();

function _window(c: WorkControl['coalesce']): NonNullable<HookStatus['coalesce']> | null {
  return c === undefined
    ? null
    : { windowSeconds: c.windowSeconds, maxWaitSeconds: c.maxWaitSeconds, messages: c.messages };
}
