// SIGUSR1 ignored on Node (it would open Node's debugger, its inspector), for serve and check.
//
// On Node, SIGUSR1 opens Node's debugger (its "inspector", not this program's page) on 127.0.0.1:9229, and whoever connects to it runs code in
// the server. Any process of the server's user can send that signal, a transform child on Node
// among them (its permission model does not cover signals, nor the socket it would then connect
// to). A listener of our own replaces Node's handler, so the signal opens nothing;
// `--disable-sigusr1` would do the same, but exists only from Node 22.14.

import process from 'node:process';
import type { Logger } from '../log.ts';

/** How often, at most, an ignored SIGUSR1 is logged: a flood of them must not flood the log. */
export const SIGUSR1_LOG_EVERY_MS = 60_000;

/** Where the inspector question is decided: the runtime, its command line, and a clock. */
export interface DebuggerSignalOptions {
  isNode?: boolean;
  /** The node flags the process started with (`process.execArgv` and `NODE_OPTIONS`). */
  nodeFlags?: readonly string[];
  now?: () => number;
}

/**
 * Makes SIGUSR1 open no inspector, unless the node command line asked for one (`--inspect…`):
 * then the operator is debugging on purpose, and Node's own handling stays. Logs the first
 * ignored signal, then at most one line a minute with how many came. Returns the release.
 */
export function ignoreDebuggerSignal(log: Logger, options: DebuggerSignalOptions = {}): () => void {
  const { isNode = !('Deno' in globalThis), nodeFlags = _nodeFlags(), now = Date.now } = options;
  if (!isNode) return () => {};
  const asked = nodeFlags.find((flag) => /^--inspect(?:-brk|-wait|-port)?(?:=|$)/.test(flag));
  if (asked !== undefined) {
    log.warn('SIGUSR1 opens the inspector: the node command line asks for it', { flag: asked.replace(/=.*/, '') });
    return () => {};
  }
  let loggedAt = -Infinity;
  let unlogged = 0;
  const onSignal = () => {
    unlogged++;
    if (now() - loggedAt < SIGUSR1_LOG_EVERY_MS) return;
    log.warn('SIGUSR1 ignored: the inspector is not opened by a signal', { signals: unlogged });
    loggedAt = now();
    unlogged = 0;
  };
  process.on('SIGUSR1', onSignal);
  return () => void process.off('SIGUSR1', onSignal);
}

function _nodeFlags(): string[] {
  return [...process.execArgv, ...(process.env['NODE_OPTIONS'] ?? '').split(/\s+/).filter((flag) => flag !== '')];
}
