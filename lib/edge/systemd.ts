// systemd socket activation (the sd_listen_fds protocol), read from an injected environment.
import type { Env } from '../config/types.ts';

/** The first file descriptor systemd passes; the others follow it in order. */
export const LISTEN_FDS_START = 3;

/** The variables systemd sets for an activated service. */
export const LISTEN_ENV = ['LISTEN_PID', 'LISTEN_FDS', 'LISTEN_FDNAMES'] as const;

/**
 * The inherited listening socket's fd (3) when systemd started this process with one
 * (`LISTEN_PID` equals `pid`, `LISTEN_FDS` >= 1), else `null`.
 */
export function inheritedListenFd(env: Env, pid: number): number | null {
  // LISTEN_PID guards against a child that inherited the variables but not the sockets:
  // the sockets are meant for the one process systemd exec'd.
  const owner = _count(env['LISTEN_PID']);
  if (owner === null || owner === 0 || owner !== pid) return null;
  const fds = _count(env['LISTEN_FDS']);
  return fds === null || fds === 0 ? null : LISTEN_FDS_START;
}

/**
 * Deletes the socket-activation variables, so that processes this one spawns (command
 * providers) do not take the sockets for theirs.
 */
export function unsetListenEnv(env: Record<string, string | undefined>): void {
  for (const name of LISTEN_ENV) delete env[name];
}

// A decimal count as sd_listen_fds reads it: digits only, no sign, no blanks.
function _count(text: string | undefined): number | null {
  return text !== undefined && /^[0-9]{1,10}$/.test(text) ? Number(text) : null;
}
