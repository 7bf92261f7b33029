import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import type { CallTransform } from './mappings.ts';
import { createTransformRunner, type TransformRunner } from './transforms.ts';

/** How long a replaced worker pool keeps serving the calls that were already using it. */
const RETIRE_AFTER_MS = 10_000;

/**
 * The transform workers across reloads: started only when some mapping has a transform, their
 * module cache cleared on every reload, and replaced (the old pool retired after a grace) when
 * the transforms folder or the time budget changes.
 */
export class TransformPool {
  readonly #log: Logger;
  #runner: TransformRunner | null = null;
  #settings = '';
  #retiring = new Set<TransformRunner>();

  constructor(log: Logger) {
    this.#log = log;
  }

  /** Calls a transform on the current pool. */
  readonly call: CallTransform = (ref, input) =>
    this.#runner === null ? Promise.resolve({ ok: false, reason: 'load-failed', detail: 'no transform is configured' }) : this.#runner.run(ref, input);

  /** Applies a (re)loaded configuration. */
  configure(config: Config): void {
    const needed = config.hooks.mappings.some((m) => m.transform !== undefined);
    const settings = JSON.stringify([config.hooks.transformsDir, config.hooks.transformTimeoutMs]);
    if (this.#runner !== null && needed && settings === this.#settings) {
      this.#runner.clearCache();
      return;
    }
    if (this.#runner !== null) this.#retire(this.#runner);
    this.#runner = needed ? createTransformRunner({ root: config.hooks.transformsDir, timeoutMs: config.hooks.transformTimeoutMs }) : null;
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
    const timer = setTimeout(() => {
      this.#retiring.delete(runner);
      runner.close().catch((error: unknown) => this.#log.error('closing a retired transform pool failed', { error: String(error) }));
    }, RETIRE_AFTER_MS);
    timer.unref?.();
  }
}
