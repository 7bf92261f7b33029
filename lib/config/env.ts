// `${NAME}` in the config file's strings: the one place variables are read.

import { type Issue, join, Unjudged } from '../schema.ts';
import type { Env } from './types.ts';

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Which keys' variables a reader needs: every key, or one key path and what lies under it. */
export type EnvScope = 'all' | { key: string };

/** A config value with its variables resolved where needed. */
export interface Resolved {
  value: unknown;
  /** A needed variable that is not set, at the key that names it. */
  missing: Issue[];
  /** Keys left holding their `${NAME}` text, unjudged, because a variable is not set and the reader does not need them. */
  unresolved: string[];
}

/** Replaces `${NAME}` by the environment variable NAME in the keys `scope` needs; elsewhere a missing one is left as written. */
export function resolveEnv(value: unknown, env: Env, scope: EnvScope = 'all', at = ''): Resolved {
  const out: Resolved = { value: undefined, missing: [], unresolved: [] };
  out.value = _walk(value, at, env, scope, out);
  return out;
}

/** Replaces every `${NAME}` inside string values by the environment variable NAME, reporting each missing one. */
export function substituteEnv(value: unknown, at: string, env: Env, issues: Issue[]): unknown {
  const out: Resolved = { value: undefined, missing: [], unresolved: [] };
  const substituted = _walk(value, at, env, 'all', out);
  issues.push(...out.missing);
  return substituted;
}

/** Whether key path `path` is `key` or lies under it. */
export function within(path: string, key: string): boolean {
  return path === key || path.startsWith(`${key}.`) || path.startsWith(`${key}[`);
}

function _walk(value: unknown, at: string, env: Env, scope: EnvScope, out: Resolved): unknown {
  if (typeof value === 'string') return _string(value, at, env, scope, out);
  if (Array.isArray(value)) return value.map((v, i) => _walk(v, join(at, i), env, scope, out));
  if (typeof value === 'object' && value !== null) {
    const result: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) result[k] = _walk(v, join(at, k), env, scope, out);
    return result;
  }
  return value;
}

function _string(text: string, at: string, env: Env, scope: EnvScope, out: Resolved): string | Unjudged {
  const unset = [...text.matchAll(VARIABLE)].map((m) => m[1]!).filter((name) => env[name] === undefined);
  if (unset.length > 0 && scope !== 'all' && !within(at, scope.key)) {
    out.unresolved.push(at);
    return new Unjudged(text);
  }
  for (const name of new Set(unset)) out.missing.push({ path: at, message: `environment variable ${name} is not set` });
  return text.replace(VARIABLE, (_, name: string) => env[name] ?? '');
}
