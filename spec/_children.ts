// Test helper: the runtimes transform children run on here. Under Node, both the server's own and
// Deno (hooks.transformRuntime "deno", with the deno binary of node_modules); under Deno, Deno only.
import { fileURLToPath } from 'node:url';
import { currentRuntime, type Runtime } from '../lib/hooks/transforms/child.ts';

/** The deno binary the specs hand a Node server as hooks.transformDenoPath. */
export const DENO_PATH = fileURLToPath(new URL('../node_modules/.bin/deno', import.meta.url));

/** Each runtime a transform child can run on from this test process, by name. */
export const CHILD_RUNTIMES: readonly { name: string; runtime: Runtime }[] = currentRuntime().kind === 'deno'
  ? [{ name: 'deno', runtime: currentRuntime() }]
  : [
    { name: 'node', runtime: currentRuntime() },
    { name: 'deno', runtime: { kind: 'deno', execPath: DENO_PATH } },
  ];
