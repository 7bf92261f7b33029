// The transform runner as serve and check use it: imported when a config first names a transform.
//
// The transform machinery (the child pool and what holds it across reloads) is imported when a
// config first names a transform: a service without one never loads it, and a reload that adds one does.

import type { Config } from '../config/types.ts';
import type { CallTransform } from '../hooks/mappings.ts';
import type { TransformReloader } from '../hooks/transforms/reloader.ts';
import type { Logger } from '../log.ts';

const _machinery = () => import('../hooks/transforms/reloader.ts');

/** Whether a config names a transform. */
export function usesTransforms(config: Config): boolean {
  return config.hooks.mappings.some((m) => m.transform !== undefined);
}

/** Loads every transform a config names, each in a child (checkTransforms); problems by key path; `signal` stops the check. */
export async function checkTransformsOf(config: Config, signal?: AbortSignal): Promise<string[]> {
  return usesTransforms(config) ? (await _machinery()).checkTransforms(config, signal) : [];
}

/** A running service's transforms: the reloader, built on the first configuration that names a transform. */
export interface Transforms {
  call: CallTransform;
  configure(config: Config): Promise<void>;
  close(): Promise<void>;
}

/** The service's transforms, with nothing loaded until a configuration needs it. */
export function serviceTransforms(log: Logger): Transforms {
  let reloader: TransformReloader | null = null;
  return {
    // The same answer the reloader gives without a pool: the edge asks only for mapped transforms.
    call: (ref, input) =>
      reloader?.call(ref, input) ??
        Promise.resolve({ ok: false, reason: 'load-failed', detail: 'no transform is configured' }),
    async configure(config) {
      if (reloader === null && !usesTransforms(config)) return;
      reloader ??= new (await _machinery()).TransformReloader(log);
      reloader.configure(config);
    },
    close: async () => reloader?.close(),
  };
}
