import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The running server's pid, in the state directory so `hooks-ingress reload` can signal it; the
 * file is also the directory's lock (state-lock.ts takes it, atomically, and removes it at stop).
 */
export const PID_FILE = 'hooks-ingress.pid';

/** The text of a state directory's pid file (`null` when there is none) and the file's path. */
export async function readPidFile(stateDir: string): Promise<{ file: string; text: string | null }> {
  const file = join(stateDir, PID_FILE);
  try {
    return { file, text: (await readFile(file, 'utf8')).trim() };
  } catch {
    return { file, text: null };
  }
}
