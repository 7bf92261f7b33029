import { locateConfig, locateStateDir } from '../config/locate.ts';
import { readStateDir } from '../config/state-dir.ts';
import type { ConfigFlags } from './load-config.ts';
import { exists, messagePrefix, type Io } from './io.ts';

// The commands that only read the state directory (NEEDS' `state` in load-config.ts) find it here,
// apart from the config's loading and validation, which they neither need nor import.

/**
 * The state directory a reading command looks in: `--state-dir`, else the config file's
 * `state.dir` (no other key read, no other variable needed), else its default place.
 */
export async function stateDirFor(flags: ConfigFlags, io: Io): Promise<string | null> {
  if (flags['state-dir'] !== undefined) return locateStateDir(flags['state-dir'], null, io.env);
  const located = locateConfig(flags.config, io.env);
  if (located.implicit && !(await exists(located.path))) return locateStateDir(undefined, null, io.env);
  const read = await readStateDir(located.path, io.env);
  if (!read.ok) {
    io.stderr(`${messagePrefix(io)}: invalid config ${located.path}:\n${read.problems.map((p) => `  ${p}\n`).join('')}`);
    return null;
  }
  return locateStateDir(undefined, { stateDir: read.dir }, io.env);
}

/** The state directory of {@link stateDirFor} when a server has used it; `null` after saying why not (stderr). */
export async function usedStateDir(flags: ConfigFlags, io: Io): Promise<string | null> {
  const dir = await stateDirFor(flags, io);
  if (dir === null) return null;
  if (!(await exists(dir))) {
    io.stderr(`${messagePrefix(io)}: state directory ${dir} does not exist (no server has used it)\n`);
    return null;
  }
  return dir;
}
