// Test helpers: temporary directories, removed when the test (or the function) is done.
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, type TestContext } from 'node:test';
import { defer } from './_cleanup.ts';

/** A fresh directory (its real path) that goes when test `t` ends, after everything registered later. */
export async function tempDir(t: TestContext, prefix = 'spec-'): Promise<string> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), prefix)));
  defer(t, () => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs `fn` with a fresh directory (its real path) and removes the directory afterwards. */
export async function withDir<T>(fn: (dir: string) => Promise<T>, prefix = 'spec-'): Promise<T> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), prefix)));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A fresh directory (its real path) shared by every test of a file: awaited at the file's top
 * level, it goes after the file's last test.
 */
export async function fileDir(prefix = 'spec-'): Promise<string> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), prefix)));
  after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}
