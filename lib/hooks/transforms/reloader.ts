// Holds the child pool across reloads: modules loaded afresh, pool replaced when its settings change;
// checkTransforms at load.

import type { Logger } from '../../log.ts';
import { createTransformChildPool, type TransformChildPool } from './child-pool.ts';
import type { TransformChildPoolOptions } from './pool-options.ts';
import type { TransformInput, TransformRef, TransformResult } from './protocol.ts';
import { currentRuntime, type Runtime } from './child.ts';

/** What the transform runner reads of the config: the mappings' transforms and the `hooks.transform*` settings. */
export interface TransformsConfig {
  hooks: {
    mappings: readonly { transform?: TransformRef }[];
    /** The real path transforms load from. */
    transformsDir: string;
    transformTimeoutMs: number;
    transformMaxResultBytes: number;
    transformRuntime: 'server' | 'deno';
    transformDenoPath: string | null;
  };
}

/**
 * Holds the transform child pool (child-pool.ts) of the current configuration across reloads: a pool
 * is started only when some mapping has a transform, its modules are loaded afresh after every
 * reload, and it is replaced when the transforms folder, the time budget, the result cap or the runtime changes
 * (the old pool closed once the calls already using it have settled).
 */
export class TransformReloader {
  readonly #log: Logger;
  #pool: TransformChildPool | null = null;
  #settings = '';
  #retiring = new Set<TransformChildPool>();
  // Calls not yet settled, per pool. A fixed grace would cut a call whose time budget is longer.
  #busy = new Map<TransformChildPool, number>();

  constructor(log: Logger) {
    this.#log = log;
  }

  /** Calls a transform on the current child pool (what mappings know as their CallTransform). */
  readonly call = (ref: TransformRef, input: TransformInput): Promise<TransformResult> => {
    const pool = this.#pool;
    if (pool === null) {
      return Promise.resolve({ ok: false, reason: 'load-failed', detail: 'no transform is configured' });
    }
    this.#busy.set(pool, (this.#busy.get(pool) ?? 0) + 1);
    // Every call settles: the child pool bounds each one by its time budget and answers them all on close.
    return pool.run(ref, input).finally(() => {
      const left = (this.#busy.get(pool) ?? 1) - 1;
      if (left > 0) this.#busy.set(pool, left);
      else {
        this.#busy.delete(pool);
        if (this.#retiring.has(pool)) this.#closeRetired(pool);
      }
    });
  };

  // A transform's console, line by line (clipped by the child pool): the operator's own debugging aid.
  readonly #output = (module: string, line: string) => this.#log.warn('transform output', { module, line });

  /** Applies a (re)loaded configuration. */
  configure(config: TransformsConfig): void {
    const needed = config.hooks.mappings.some((m) => m.transform !== undefined);
    const { transformsDir, transformTimeoutMs, transformMaxResultBytes, transformRuntime, transformDenoPath } =
      config.hooks;
    const settings = JSON.stringify([
      transformsDir,
      transformTimeoutMs,
      transformMaxResultBytes,
      transformRuntime,
      transformDenoPath,
    ]);
    if (this.#pool !== null && needed && settings === this.#settings) {
      this.#pool.clearCache();
      return;
    }
    if (this.#pool !== null) this.#retire(this.#pool);
    this.#pool = needed ? createTransformChildPool({ ..._options(config), onOutput: this.#output }) : null;
    this.#settings = settings;
  }

  /** Closes the current child pool and every retired one. */
  async close(): Promise<void> {
    const all = [...this.#retiring, ...(this.#pool === null ? [] : [this.#pool])];
    this.#pool = null;
    this.#retiring.clear();
    await Promise.all(all.map((r) => r.close()));
  }

  #retire(pool: TransformChildPool): void {
    this.#retiring.add(pool);
    if (!this.#busy.has(pool)) this.#closeRetired(pool);
  }

  #closeRetired(pool: TransformChildPool): void {
    this.#retiring.delete(pool);
    pool.close().catch((error: unknown) =>
      this.#log.error('closing a retired transform pool failed', { error: String(error) })
    );
  }
}

/**
 * Loads every transform a config names, in children of its own, and checks that each export is a
 * function: a typo is a config problem at load, not a 500 on the first request. Problems by key path.
 */
export async function checkTransforms(config: TransformsConfig, signal?: AbortSignal): Promise<string[]> {
  const users = config.hooks.mappings.flatMap((m, i) => (m.transform === undefined ? [] : [[m.transform, i] as const]));
  if (users.length === 0) return [];
  const pool = createTransformChildPool({ ..._options(config), poolSize: 1 });
  // A stopping server does not wait for a reload's check: its child is ended at once.
  const onAbort = () => void pool.close();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const problems: string[] = [];
    for (const [ref, i] of users) {
      if (signal?.aborted) return ['the check was stopped'];
      const probed = await pool.probe(ref);
      if (!probed.ok) problems.push(`hooks.mappings[${i}].transform: ${probed.detail}`);
    }
    return problems;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await pool.close();
  }
}

function _options(config: TransformsConfig): TransformChildPoolOptions {
  const { transformsDir: root, transformTimeoutMs: timeoutMs, transformMaxResultBytes: maxResultBytes } = config.hooks;
  return { root, timeoutMs, maxResultBytes, runtime: transformRuntime(config) };
}

/** The runtime transform children run on under this config. */
export function transformRuntime(config: TransformsConfig): Runtime {
  const { transformRuntime: kind, transformDenoPath } = config.hooks;
  // Loading the config found the binary (config/load.ts): a 'deno' config without one does not load.
  return kind === 'deno' && transformDenoPath !== null
    ? { kind: 'deno', execPath: transformDenoPath }
    : currentRuntime();
}
