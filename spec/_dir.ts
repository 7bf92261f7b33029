// Test helpers: temporary directories, removed when the test (or the function) is done.
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, type TestContext } from 'node:test';
import { defer } from './_cleanup.ts';

/** A fresh directory (its real path) that goes when test `t` ends, after everything registered later. */
export async function tempDir(t: TestContext, prefix = 'spec-'): Promise<string> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), prefix)));
  defer(t, () => removeDir(dir));
  return dir;
}

// What a removal meets when a process it races has just written into the tree (ENOTEMPTY: a file
// made between the walk and the rmdir), or still holds something open for a moment after it died.
const _TRANSIENT = new Set(['ENOTEMPTY', 'EBUSY', 'EPERM']);

/**
 * Removes `dir` and everything in it, and tries again a few times (about 5 s in all) when a
 * process that wrote into it a moment ago left the walk behind; anything else fails at once.
 */
export async function removeDir(dir: string): Promise<void> {
  for (let attempt = 1;; attempt++) {
    try {
      return await rm(dir, { recursive: true, force: true });
    } catch (error) {
      if (attempt >= 20 || !_TRANSIENT.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25 * attempt));
    }
  }
}

/** Runs `fn` with a fresh directory (its real path) and removes the directory afterwards. */
export async function withDir<T>(fn: (dir: string) => Promise<T>, prefix = 'spec-'): Promise<T> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), prefix)));
  try {
    return await fn(dir);
  } finally {
    await removeDir(dir);
  }
}

/**
 * A fresh directory (its real path) shared by every test of a file: awaited at the file's top
 * level, it goes after the file's last test.
 */
export async function fileDir(prefix = 'spec-'): Promise<string> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), prefix)));
  after(() => removeDir(dir));
  return dir;
}
