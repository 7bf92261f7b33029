// The run queue's load per work hook (lib/model/work-hook.ts): runs waiting and runs executing,
// kept as runs come and go, for the lanes (lane.ts), a hook's backlog bound, status and /metrics.

/** One hook's runs: waiting in the queue, and executing. */
export interface HookLoad {
  queued: number;
  running: number;
}

/** Counts of runs per work hook; a hook with none is left out. */
export class HookLoads {
  readonly #queued = new Map<string, number>();
  readonly #running = new Map<string, number>();

  /** Runs executing, by hook. */
  get running(): ReadonlyMap<string, number> {
    return this.#running;
  }

  /** A run of `hook` joined the queue. */
  queued(hook: string): void {
    _add(this.#queued, hook, 1);
  }

  /** A waiting run of `hook` started executing. */
  started(hook: string): void {
    _add(this.#queued, hook, -1);
    _add(this.#running, hook, 1);
  }

  /** A waiting run of `hook` left the queue without starting (`hooks-ingress drop`). */
  left(hook: string): void {
    _add(this.#queued, hook, -1);
  }

  /** An executing run of `hook` ended. */
  finished(hook: string): void {
    _add(this.#running, hook, -1);
  }

  /** The queue was emptied (the runner stops). */
  dropQueued(): void {
    this.#queued.clear();
  }

  /** Runs of `hook` waiting or executing: what its `maxQueued` counts. */
  depthOf(hook: string): number {
    return (this.#queued.get(hook) ?? 0) + (this.#running.get(hook) ?? 0);
  }

  /** Every hook with a run waiting or executing, by name. */
  snapshot(): Map<string, HookLoad> {
    const loads = new Map<string, HookLoad>();
    for (const [hook, queued] of this.#queued) loads.set(hook, { queued, running: 0 });
    for (const [hook, running] of this.#running) {
      const load = loads.get(hook);
      if (load === undefined) loads.set(hook, { queued: 0, running });
      else load.running = running;
    }
    return loads;
  }
}

function _add(counts: Map<string, number>, hook: string, by: number): void {
  const n = (counts.get(hook) ?? 0) + by;
  if (n > 0) counts.set(hook, n);
  else counts.delete(hook);
}
