/**
 * Whether transforms could read the state directory: a transform child may read everything under
 * the transforms directory, and the runtimes' permission checks pass a path through a symbolic link
 * that is already there (Node's and Deno's alike), so a link to a folder that holds the state
 * directory hands them the control secret, the journal and the ledger. `serve` refuses to start and
 * `check` fails when it is so.
 * @module
 */
import { readdir, readlink, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';

// Bounds of the walk: entries looked at, and folders deep (through links too). A transforms
// directory with a vendored dependency tree may pass them; what is left unlooked at is said.
const _WALK_MAX = 10_000;
const _DEPTH_MAX = 32;

/** What the walk found: why the state directory is exposed (`null`: it is not), and whether the walk stopped at its bounds. */
export interface StateExposure {
  problem: string | null;
  partial: boolean;
}

/**
 * Whether the state directory lies inside the transforms directory (or holds it), or a symbolic link
 * reachable from the transforms directory leads to a folder that holds the state directory, to it, or
 * into it. Compared on real paths; a state directory not made yet is judged by where it will be.
 */
export async function stateExposure(stateDir: string, transformsDir: string): Promise<StateExposure> {
  const state = await intendedRealpath(stateDir);
  // A transforms directory not made yet is judged by where it will be; nothing in it to walk yet.
  const root = await intendedRealpath(transformsDir);
  if (_overlap(state, root)) {
    const where = state === root ? 'it is' : _inside(state, root) ? 'it lies inside' : 'it holds';
    return {
      problem: `${where} the transforms directory ${transformsDir}, which transforms may read; use another`,
      partial: false,
    };
  }
  const pending: { path: string; real: string; depth: number }[] = [{ path: transformsDir, real: root, depth: 0 }];
  const walked = new Set<string>([root]);
  let seen = 0;
  let partial = false;
  while (pending.length > 0) {
    const dir = pending.shift()!;
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(dir.path, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      if (++seen > _WALK_MAX) return { problem: null, partial: true };
      const path = join(dir.path, entry.name);
      let real = join(dir.real, entry.name);
      if (entry.isSymbolicLink()) {
        const followed = await _followLink(path, state, transformsDir);
        if ('problem' in followed) return { problem: followed.problem, partial: false };
        if (followed.dir === null) continue;
        real = followed.dir;
      } else if (!entry.isDirectory()) {
        continue;
      }
      if (walked.has(real)) continue;
      if (dir.depth + 1 > _DEPTH_MAX) {
        partial = true;
        continue;
      }
      walked.add(real);
      pending.push({ path, real, depth: dir.depth + 1 });
    }
  }
  return { problem: null, partial };
}

// A link in the transforms directory: a problem when it leads to the state directory, to a folder
// that holds it or into it; else the folder it leads to, to walk on (`null`: not a folder).
async function _followLink(
  path: string,
  state: string,
  transformsDir: string,
): Promise<{ problem: string } | { dir: string | null }> {
  // A dangling link is judged by where it will lead: to the state directory once it is made, say.
  const target = await realpath(path).catch(() =>
    readlink(path).then((to) => intendedRealpath(resolve(dirname(path), to)), () => null)
  );
  if (target === null) return { dir: null };
  if (_overlap(state, target)) {
    const how = target === state ? 'it' : _inside(state, target) ? `${target}, which holds it` : `${target}, inside it`;
    return {
      problem:
        `the transforms directory ${transformsDir} holds a symbolic link ${path} to ${how}: transforms may read it through the link; remove the link or use another state directory`,
    };
  }
  return (await stat(target).then((s) => s.isDirectory(), () => false)) ? { dir: target } : { dir: null };
}

/** The real path `path` has, or will have once made: the real path of its nearest existing ancestor and the rest. */
export async function intendedRealpath(path: string): Promise<string> {
  const missing: string[] = [];
  let at = resolve(path);
  for (;;) {
    const real = await realpath(at).catch(() => null);
    if (real !== null) return join(real, ...missing);
    const up = dirname(at);
    if (up === at) return resolve(path);
    missing.unshift(basename(at));
    at = up;
  }
}

// Whether one of the two lies inside the other, or they are the same.
function _overlap(a: string, b: string): boolean {
  return a === b || _inside(a, b) || _inside(b, a);
}

function _inside(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !rel.startsWith(sep);
}

/** The warning when the walk stopped at its bounds: what lies past them was not looked at. */
export function partialWalk(transformsDir: string): string {
  return `the transforms directory ${transformsDir} has more than ${_WALK_MAX} entries or ${_DEPTH_MAX} levels: links past them were not checked for a way to the state directory`;
}
