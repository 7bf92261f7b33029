// state.dir alone, for the commands that only read the state directory.
//
// A command that only reads the state directory reads only `state` of the config file: its other
// keys, and the variables they name, are the business of the commands that use them.

import { dirname, resolve } from 'node:path';
import { isPlainObject } from '../object.ts';
import { check, formatIssue } from '../schema.ts';
import { resolveEnv } from './env.ts';
import { readConfigFile } from './read.ts';
import { stateSchema } from './state-schema.ts';
import type { Env } from './types.ts';

/** `state.dir` of a config file (absolute, `null` when not set), with only its own `${NAME}`s resolved. */
export async function readStateDir(
  file: string,
  env: Env,
): Promise<{ ok: true; dir: string | null } | { ok: false; problems: string[]; unparsable?: true }> {
  const read = await readConfigFile(file);
  if (!read.ok) return read;
  if (!isPlainObject(read.value)) return { ok: false, problems: [`${file}: must be an object`] };
  const state = read.value['state'];
  if (state === undefined) return { ok: true, dir: null };
  const resolved = resolveEnv(state, env, 'all', 'state');
  if (resolved.missing.length > 0) return { ok: false, problems: resolved.missing.map(formatIssue) };
  const checked = check(stateSchema, resolved.value, 'state');
  if (!checked.ok) return { ok: false, problems: checked.issues.map(formatIssue) };
  return { ok: true, dir: checked.value.dir === undefined ? null : resolve(dirname(file), checked.value.dir) };
}
