// real-path containment of the transforms directory and modules.

import { lstat, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';

/**
 * Why a path was refused: it leaves the root, it (or the root) is missing, it is not a regular
 * file, or the file system would not resolve it (a symlink loop, a permission).
 */
export type ContainmentCode = 'outside' | 'missing' | 'not-a-file' | 'unresolvable';

/** A real path inside the root, or a short sentence saying why not (to follow a config key path). */
export type Containment =
  | { ok: true; path: string }
  | { ok: false; code: ContainmentCode; reason: string };

/**
 * Resolves `target` (relative to `root`, or absolute) to a real path and checks that it stays
 * inside the real root. A target that does not exist yet is judged by its nearest existing ancestor.
 */
export async function resolveInside(root: string, target: string): Promise<Containment> {
  try {
    return await _resolveInside(root, target);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    return _fail('unresolvable', `cannot be resolved: ${code}`);
  }
}

/** Like `resolveInside`, and the target must exist and be a regular file (a module to load). */
export async function resolveModule(root: string, target: string): Promise<Containment> {
  const found = await resolveInside(root, target);
  if (!found.ok) return found;
  const stats = await stat(found.path).catch(() => null);
  if (stats === null) return _fail('missing', 'does not exist');
  if (!stats.isFile()) return _fail('not-a-file', 'is not a regular file');
  return found;
}

async function _resolveInside(root: string, target: string): Promise<Containment> {
  const realRoot = await _realpath(root);
  if (realRoot === null) return _fail('missing', 'the transforms root does not exist');
  let existing = resolve(realRoot, target);
  const missing: string[] = [];
  let real = await _realpath(existing);
  while (real === null) {
    // Something is there that cannot be followed: a dangling symlink could later point anywhere.
    if (await _exists(existing)) return _fail('missing', 'is a broken symbolic link');
    missing.unshift(basename(existing));
    existing = dirname(existing);
    real = await _realpath(existing);
  }
  const path = join(real, ...missing);
  const prefix = realRoot.endsWith(sep) ? realRoot : realRoot + sep;
  if (path !== realRoot && !path.startsWith(prefix)) {
    return _fail('outside', 'resolves outside the transforms root');
  }
  return { ok: true, path };
}

async function _realpath(path: string): Promise<string | null> {
  try {
    return await realpath(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // ENOTDIR: a file stands where a directory is named, so the rest does not exist either.
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error; // ELOOP, EACCES: reported by resolveInside
  }
}

async function _exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

function _fail(code: ContainmentCode, reason: string): Containment {
  return { ok: false, code, reason };
}
