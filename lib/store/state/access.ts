// The state directory made the server's own: created 0700, write access taken from others, a shared one
// refused.

import { chmod, mkdir, stat } from 'node:fs/promises';

/** What {@link secureStateDir} did: nothing, tightened the mode, or refused the directory. */
export type StateDirOutcome =
  | { ok: true; tightened: null | { from: number; to: number } }
  | { ok: false; reason: string };

/**
 * Makes the state directory the server's own: creates it 0700, and takes write access away from
 * group and others on an existing one, since whoever can write there can plant journal lines (events,
 * runs) or swap files under the server. A directory shared on purpose (the sticky bit, as /tmp), or
 * one whose mode this process cannot change, is refused instead. Errors other than that are thrown.
 */
export async function secureStateDir(dir: string): Promise<StateDirOutcome> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const mode = (await stat(dir)).mode & 0o7777;
  if ((mode & 0o022) === 0) return { ok: true, tightened: null };
  const shown = `0${mode.toString(8)}`;
  if ((mode & 0o1000) !== 0) {
    return {
      ok: false,
      reason: `it is shared (mode ${shown}, the sticky bit): give the server a directory of its own`,
    };
  }
  const to = mode & ~0o022;
  try {
    await chmod(dir, to);
  } catch (error) {
    return {
      ok: false,
      reason: `it is writable by others (mode ${shown}) and its mode cannot be changed: ${
        (error as NodeJS.ErrnoException).code ?? String(error)
      }`,
    };
  }
  return { ok: true, tightened: { from: mode, to } };
}
