/**
 * The hook a piece of work belongs to, for work control (lanes, pause, coalescing, limits): a
 * mapped request's mapping `id`, else the built-in `agent` (POST /hooks/agent) or `wake` (POST
 * /hooks/wake). A run's `hook` field is the request's path name, which summaries quote; this is
 * the name its controls are keyed by.
 */

/** The built-in hooks' names: `/agent`'s runs and `/wake`'s events. */
export type BuiltInHook = 'agent' | 'wake';

/** The hook `x` counts under: its mapping's id, else the built-in hook of its kind. */
export function workHook(x: { readonly mapping?: string | undefined }, kind: BuiltInHook): string {
  return x.mapping ?? kind;
}

/** What a hook may set to control its runs (`hooks.agent`, a mapping): each absent when not set. */
export interface WorkControl {
  /** Runs of the hook in flight at once. */
  readonly concurrency?: number;
  /** Runs of the hook waiting or executing; past it the hook answers 503. */
  readonly maxQueued?: number;
  /** A mapping's coalescing window (lib/hooks/coalesce.ts); `/agent` takes none. */
  readonly coalesce?: { readonly windowSeconds: number; readonly maxWaitSeconds: number; readonly messages: string };
}

/** The hooks section as work control reads it: `/agent`'s settings and the mappings'. */
export interface WorkHooks {
  readonly agent: WorkControl;
  readonly mappings: readonly (WorkControl & { readonly id: string })[];
}

const _controls = new WeakMap<WorkHooks, ReadonlyMap<string, WorkControl>>();

/**
 * The hooks that set a control, by name: `agent` for `hooks.agent`, each mapping by its id (the
 * first of two mappings with one id, and `hooks.agent` before a mapping named `agent`). Made once
 * per loaded config; empty when nothing is set, so a caller can skip its work.
 */
export function workControls(hooks: WorkHooks): ReadonlyMap<string, WorkControl> {
  let controls = _controls.get(hooks);
  if (controls !== undefined) return controls;
  const made = new Map<string, WorkControl>();
  if (_sets(hooks.agent)) made.set('agent', hooks.agent);
  for (const mapping of hooks.mappings) {
    if (_sets(mapping) && !made.has(mapping.id)) made.set(mapping.id, mapping);
  }
  controls = made;
  _controls.set(hooks, controls);
  return controls;
}

function _sets(control: WorkControl): boolean {
  return control.concurrency !== undefined || control.maxQueued !== undefined;
}
