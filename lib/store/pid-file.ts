import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The running server's pid, written in the state directory so `hooks-ingress reload` can signal it. */
export const PID_FILE = 'hooks-ingress.pid';

/** Writes this process's pid into the state directory. */
export async function writePidFile(stateDir: string, pid: number): Promise<string> {
  const file = join(stateDir, PID_FILE);
  await writeFile(file, `${pid}\n`, { mode: 0o600 });
  return file;
}

/** The text of a state directory's pid file (`null` when there is none) and the file's path. */
export async function readPidFile(stateDir: string): Promise<{ file: string; text: string | null }> {
  const file = join(stateDir, PID_FILE);
  try {
    return { file, text: (await readFile(file, 'utf8')).trim() };
  } catch {
    return { file, text: null };
  }
}

/** Removes the pid file (a server that stops). */
export async function removePidFile(file: string): Promise<void> {
  await rm(file, { force: true });
}
