import type { Config } from '../../config/types.ts';
import type { Logger } from '../../log.ts';
import type { CallTransform } from '../mappings.ts';
import { createTransformRunner, type TransformRunner, type TransformRunnerOptions } from './runner.ts';

/**
 * The transform children across reloads: started only when some mapping has a transform, their
 * modules loaded afresh after every reload, and the runner replaced when the transforms folder, the
 * time budget or the result cap changes (the old pool closed once the calls already using it have settled).
 */
export class TransformPool {
  readonly #log: Logger;
  #runner: TransformRunner | null = null;
  #settings = '';
  #retiring = new Set<TransformRunner>();
  // Calls not yet settled, per pool. A fixed grace would cut a call whose time budget is longer.
  #busy = new Map<TransformRunner, number>();

  constructor(log: Logger) {
    this.#log = log;
  }

  /** Calls a transform on the current pool. */
  readonly call: CallTransform = (ref, input) => {
    const runner = this.#runner;
    if (runner === null) return Promise.resolve({ ok: false, reason: 'load-failed', detail: 'no transform is configured' });
    this.#busy.set(runner, (this.#busy.get(runner) ?? 0) + 1);
    // Every call settles: the runner bounds each one by its time budget and answers them all on close.
    return runner.run(ref, input).finally(() => {
      const left = (this.#busy.get(runner) ?? 1) - 1;
      if (left > 0) this.#busy.set(runner, left);
      else {
        this.#busy.delete(runner);
        if (this.#retiring.has(runner)) this.#closeRetired(runner);
      }
    });
  };

  // A transform's console, line by line (clipped by the runner): the operator's own debugging aid.
  readonly #output = (module: string, line: string) => this.#log.warn('transform output', { module, line });

  /** Applies a (re)loaded configuration. */
  configure(config: Config): void {
    const needed = config.hooks.mappings.some((m) => m.transform !== undefined);
    const settings = JSON.stringify([config.hooks.transformsDir, config.hooks.transformTimeoutMs, config.hooks.transformMaxResultBytes]);
    if (this.#runner !== null && needed && settings === this.#settings) {
      this.#runner.clearCache();
      return;
    }
    if (this.#runner !== null) this.#retire(this.#runner);
    this.#runner = needed ? createTransformRunner({ ..._options(config), onOutput: this.#output }) : null;
    this.#settings = settings;
  }

  /** Stops every pool. */
  async close(): Promise<void> {
    const all = [...this.#retiring, ...(this.#runner === null ? [] : [this.#runner])];
    this.#runner = null;
    this.#retiring.clear();
    await Promise.all(all.map((r) => r.close()));
  }

  #retire(runner: TransformRunner): void {
    this.#retiring.add(runner);
    if (!this.#busy.has(runner)) this.#closeRetired(runner);
  }

  #closeRetired(runner: TransformRunner): void {
    this.#retiring.delete(runner);
    runner.close().catch((error: unknown) => this.#log.error('closing a retired transform pool failed', { error: String(error) }));
  }
}

/**
 * Loads every transform a config names, in children of its own, and checks that each export is a
 * function: a typo is a config problem at load, not a 500 on the first request. Problems by key path.
 */
export async function checkTransforms(config: Config): Promise<string[]> {
  const users = config.hooks.mappings.flatMap((m, i) => (m.transform === undefined ? [] : [[m.transform, i] as const]));
  if (users.length === 0) return [];
  const runner = createTransformRunner({ ..._options(config), poolSize: 1 });
  try {
    const problems: string[] = [];
    for (const [ref, i] of users) {
      const probed = await runner.probe(ref);
      if (!probed.ok) problems.push(`hooks.mappings[${i}].transform: ${probed.detail}`);
    }
    return problems;
  } finally {
    await runner.close();
  }
}

function _options(config: Config): TransformRunnerOptions {
  const { transformsDir: root, transformTimeoutMs: timeoutMs, transformMaxResultBytes: maxResultBytes } = config.hooks;
  return { root, timeoutMs, maxResultBytes };
}
