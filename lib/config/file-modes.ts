// What the files a config names let other local users do: write the config, a transform or the
// deno binary transforms run on (and so run their code in the server's name), or read a secret
// written into the config. `check` and
// `serve` say so, one line each, naming the path and its mode; nothing is changed.
import { lstat, readdir, readFile, realpath, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { isCredentialHeader, isSecretKey } from '../guard/credentials.ts';
import { parseJsonc } from './jsonc.ts';
import type { Config } from './types.ts';

// A string naming an environment variable is not a secret written into the file.
const _REFERENCE = /\$\{[A-Za-z_][A-Za-z0-9_]*\}/;
// How many entries of the transforms directory are looked at for symbolic links; a bound, not a rule.
const _WALK_MAX = 10_000;

/** The file-mode warnings for a loaded config, one line each. */
export async function fileModeWarnings(config: Config): Promise<string[]> {
  const warnings: string[] = [];
  if (config.file !== null) {
    const mode = await _mode(config.file);
    if (mode !== null && (mode & 0o022) !== 0) {
      warnings.push(
        `${config.file} is ${_writable(mode)} (mode ${
          _octal(mode)
        }): whoever can write it decides the token and runs transforms and commands as this server; chmod go-w it`,
      );
    }
    if (mode !== null && (mode & 0o004) !== 0) {
      const keys = await literalSecrets(config.file);
      if (keys.length > 0) {
        warnings.push(
          `${config.file} is world-readable (mode ${_octal(mode)}) and holds a secret in ${keys.join(', ')}: ` +
            'chmod o-r it, or write ${NAME} there and pass the value in the environment (or use hooks.tokenFile)',
        );
      }
    }
  }
  // Whoever can write the binary runs native code as the server, outside any sandbox; warned about
  // whether or not a mapping names a transform today (a reload may add one).
  const deno = config.hooks.transformRuntime === 'deno' ? config.hooks.transformDenoPath : null;
  const denoMode = deno === null ? null : await _mode(deno);
  if (denoMode !== null && (denoMode & 0o022) !== 0) {
    warnings.push(
      `${deno} (the deno binary of hooks.transformRuntime "deno") is ${_writable(denoMode)} (mode ${
        _octal(denoMode)
      }): whoever can write it runs native code as this server, outside the transform sandbox; chmod go-w it`,
    );
  }
  if (!config.hooks.mappings.some((m) => m.transform !== undefined)) return warnings;
  const root = config.hooks.transformsDir;
  const mode = await _mode(root);
  if (mode !== null && (mode & 0o022) !== 0) {
    warnings.push(
      `${root} is ${_writable(mode)} (mode ${
        _octal(mode)
      }): whoever can write it runs code in every transform call; chmod go-w it`,
    );
  }
  for (
    const module of new Set(
      config.hooks.mappings.flatMap((m) => (m.transform === undefined ? [] : [m.transform.module])),
    )
  ) {
    const moduleMode = await _mode(module);
    if (moduleMode !== null && (moduleMode & 0o022) !== 0) {
      warnings.push(`${module} is ${_writable(moduleMode)} (mode ${_octal(moduleMode)}): chmod go-w it`);
    }
  }
  for (const [link, target] of await linksOutside(root)) {
    warnings.push(
      `${link} is a symbolic link to ${target}, outside the transforms directory: every transform can read it through the link`,
    );
  }
  return warnings;
}

/** The key paths of the config file whose values are secrets written into it (not `${NAME}` references). */
export async function literalSecrets(file: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return [];
  }
  const parsed = parseJsonc(text);
  if (!parsed.ok) return [];
  const found: string[] = [];
  const walk = (value: unknown, at: string, secret: boolean): void => {
    if (typeof value === 'string') {
      if (secret && value.trim() !== '' && !_REFERENCE.test(value)) found.push(at);
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => walk(item, `${at}[${i}]`, secret));
    } else if (typeof value === 'object' && value !== null) {
      const headers = at.endsWith('.headers');
      for (const [key, item] of Object.entries(value)) {
        walk(
          item,
          at === '' ? key : `${at}.${key}`,
          secret || isSecretKey(key) || (headers && isCredentialHeader(key)),
        );
      }
    }
  };
  walk(parsed.value, '', false);
  return found;
}

/**
 * Symbolic links inside `root` that lead outside it, with their targets. A transform child may read
 * anything under the directory, and the runtimes' permission checks follow a link that is already
 * there (Node's and Deno's alike): the target is readable through it.
 */
export async function linksOutside(root: string): Promise<[string, string][]> {
  const found: [string, string][] = [];
  const pending = [root];
  let seen = 0;
  while (pending.length > 0 && seen < _WALK_MAX) {
    const dir = pending.pop()!;
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      if (++seen > _WALK_MAX) break;
      const path = join(dir, name);
      const info = await lstat(path).catch(() => null);
      if (info === null) continue;
      if (info.isDirectory()) pending.push(path);
      if (!info.isSymbolicLink()) continue;
      const target = await realpath(path).catch(() => null);
      if (target !== null && _outside(root, target)) found.push([path, target]);
    }
  }
  return found;
}

function _outside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '..' || rel.startsWith(`..${sep}`) || rel.startsWith(sep);
}

async function _mode(path: string): Promise<number | null> {
  try {
    return (await stat(path)).mode & 0o7777;
  } catch {
    return null;
  }
}

function _writable(mode: number): string {
  return (mode & 0o002) !== 0 ? 'world-writable' : 'group-writable';
}

function _octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}
