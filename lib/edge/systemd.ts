// systemd socket activation (the sd_listen_fds protocol), read from an injected environment.
import type { Env } from '../config/types.ts';

/** The first file descriptor systemd passes; the others follow it in order. */
export const LISTEN_FDS_START = 3;

/** The variables systemd sets for an activated service. */
export const LISTEN_ENV = ['LISTEN_PID', 'LISTEN_FDS', 'LISTEN_FDNAMES'] as const;

/** The `FileDescriptorName=` that marks an inherited socket as the inspector's. */
export const INSPECTOR_FD_NAME = 'inspector';

/**
 * The inherited listening sockets, in fd order from 3, each with its name from `LISTEN_FDNAMES`
 * (`''` when unnamed), when systemd started this process with some (`LISTEN_PID` equals `pid`).
 */
export function inheritedListenFds(env: Env, pid: number): { fd: number; name: string }[] {
  // LISTEN_PID guards against a child that inherited the variables but not the sockets:
  // the sockets are meant for the one process systemd exec'd.
  const owner = _count(env['LISTEN_PID']);
  if (owner === null || owner === 0 || owner !== pid) return [];
  const fds = _count(env['LISTEN_FDS']) ?? 0;
  const names = (env['LISTEN_FDNAMES'] ?? '').split(':');
  return Array.from({ length: Math.min(fds, 64) }, (_, i) => ({ fd: LISTEN_FDS_START + i, name: names[i] ?? '' }));
}

/**
 * The inherited socket to serve hooks on: the first one not named for the inspector (3 unless the
 * inspector's comes first), else `null`.
 */
export function inheritedListenFd(env: Env, pid: number): number | null {
  return inheritedListenFds(env, pid).find((s) => s.name !== INSPECTOR_FD_NAME)?.fd ?? null;
}

/** The inherited socket named `inspector` (`FileDescriptorName=inspector`), else `null`. */
export function inheritedInspectorFd(env: Env, pid: number): number | null {
  return inheritedListenFds(env, pid).find((s) => s.name === INSPECTOR_FD_NAME)?.fd ?? null;
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
