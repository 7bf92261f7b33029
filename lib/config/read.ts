// Reading and parsing the file (JSONC).

import { readFile } from 'node:fs/promises';
import { parseJsonc } from './jsonc.ts';
import { formatIssue, type Issue, join } from '../schema.ts';

/**
 * A config file read and parsed (JSONC), or the one problem that stopped it; `unparsable` when the
 * file was read but is not JSONC (or nests too deep), so nothing in it, not even `state.dir`, is known.
 */
export type Read = { ok: true; value: unknown } | { ok: false; problems: string[]; unparsable?: true };

/** Reads and parses a config file. A missing file is a problem like any other. */
export async function readConfigFile(file: string): Promise<Read> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    return { ok: false, problems: [`cannot read ${file}: ${unreadable(error)}`] };
  }
  return parseConfigText(text, file);
}

/** Parses a config file's text (JSONC), read from `file` or sent as that file's; problems name `file`. */
export function parseConfigText(text: string, file: string): Read {
  const parsed = parseJsonc(text);
  if (!parsed.ok) return { ok: false, problems: [`${file}: ${parsed.error}`], unparsable: true };
  // Every walk over the values after this one (variables, the schema, normalising, `config get`) recurses.
  const tooDeep = deeperThan(parsed.value);
  return tooDeep === null ? parsed : { ok: false, problems: [`${file}: ${formatIssue(tooDeep)}`], unparsable: true };
}

/** How deep objects and arrays may nest in a config file (the file's top level is level 1). */
export const MAX_CONFIG_DEPTH = 64;

/**
 * The problem of the first object or array in `root` nested more than `max` levels deep, at its
 * key path, else `null`. Iterative on purpose: it must not recurse as deep as what it refuses.
 */
export function deeperThan(root: unknown, max = MAX_CONFIG_DEPTH): Issue | null {
  const stack: { value: unknown; at: string; depth: number }[] = [{ value: root, at: '', depth: 1 }];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const { value, at, depth } = next;
    if (typeof value !== 'object' || value === null) continue;
    if (depth > max) return { path: at, message: `may nest objects and arrays at most ${max} levels deep` };
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
    for (let i = entries.length - 1; i >= 0; i--) {
      stack.push({ value: entries[i]![1], at: join(at, entries[i]![0]), depth: depth + 1 });
    }
  }
  return null;
}

/** Why a file could not be read, in words (`no such file`), not an errno code. */
export function unreadable(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'is a directory';
    case 'ENOTDIR':
      return 'a part of the path is not a directory';
    default:
      return code ?? (error instanceof Error ? error.message : String(error));
  }
}
