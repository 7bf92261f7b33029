// What is checked before a child is started for a module: a module no child could load is
// answered at once, as the call's result, and costs no child.

import { extname } from 'node:path';
import process from 'node:process';
import type { Containment } from '../../guard/contain.ts';
import { rootProblem, type Runtime } from './child.ts';
import type { TransformResult } from './protocol.ts';

/**
 * Why a child on `runtime` cannot load the module `found` names, or `null` when it can: the
 * module must lie inside the root (its real path), be JavaScript, or TypeScript where the runtime
 * strips types, and the root must be one the child's permission flags can name exactly.
 */
export function loadRefusal(found: Containment, root: string, runtime: Runtime): TransformResult | null {
  if (!found.ok) {
    return { ok: false, reason: found.code === 'outside' ? 'escaped' : 'load-failed', detail: found.reason };
  }
  return _unsupported(found.path, runtime) ?? _rootRefused(root, runtime);
}

function _unsupported(path: string, runtime: Runtime): TransformResult | null {
  const extension = extname(path);
  if (extension === '.js' || extension === '.mjs') return null;
  if (extension === '.ts' || extension === '.mts') {
    if (runtime.kind === 'deno' || _canStripTypes()) return null;
    const detail = `this runtime cannot load TypeScript (Node ${process.versions.node}): ` +
      'precompile the transform to .js, run on Node >= 22.18 or Deno, or set hooks.transformRuntime to "deno"';
    return { ok: false, reason: 'unsupported-ts', detail };
  }
  const detail = `only .js, .mjs and .ts modules can be transforms, not ${extension || 'a file without extension'}`;
  return { ok: false, reason: 'load-failed', detail };
}

// Whether a Node child (started with the server's own flags) strips types.
function _canStripTypes(): boolean {
  // process.features.typescript (Node >= 22.10) says whether stripping is on, which the version
  // alone does not: 22.6 to 22.17 need --experimental-strip-types, and it can be turned off.
  const features = process.features as { typescript?: unknown };
  return Boolean(features.typescript);
}

function _rootRefused(root: string, runtime: Runtime): TransformResult | null {
  const problem = rootProblem(root, runtime);
  return problem === null ? null : { ok: false, reason: 'load-failed', detail: problem };
}
