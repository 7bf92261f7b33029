// The commands that only read the state directory (NEEDS' `state` in load-config.ts) find it here,
// apart from the config's loading and validation, which they neither need nor import. A config
// file that cannot be parsed (an edit in progress) must not blind them while the server, which
// keeps the config it loaded, goes on serving: they read the default place instead, and say so.

import { locateConfig, locateStateDir } from '../config/locate.ts';
import { readStateDir } from '../config/state-dir.ts';
import type { ConfigFlags } from './load-config.ts';
import { exists, type Io, messagePrefix } from './io.ts';

/** How {@link stateDirFor} treats a config file it cannot parse. */
export interface StateDirOptions {
  /**
   * `true` (the reading commands): read the default state directory, after two warnings on stderr.
   * `false` (commands that change what the server does: reload, try): fail, naming the problem.
   */
  unparsable?: boolean;
}

/**
 * The state directory a reading command looks in: `--state-dir`, else the config file's
 * `state.dir` (no other key read, no other variable needed), else its default place.
 */
export async function stateDirFor(flags: ConfigFlags, io: Io, options: StateDirOptions = {}): Promise<string | null> {
  if (flags['state-dir'] !== undefined) return locateStateDir(flags['state-dir'], null, io.env);
  const located = locateConfig(flags.config, io.env);
  if (located.implicit && !(await exists(located.path))) return locateStateDir(undefined, null, io.env);
  const read = await readStateDir(located.path, io.env);
  if (!read.ok && read.unparsable === true && options.unparsable !== false) {
    const dir = locateStateDir(undefined, null, io.env);
    const prefix = messagePrefix(io);
    // The problem is the parser's own line (file, line, column, rule): no text of the file.
    io.stderr(
      `${prefix}: warning: cannot parse config ${read.problems.join('; ')}\n` +
        `${prefix}: warning: a state directory the config file may name (state.dir) was not used: reading ${dir} (--state-dir chooses another)\n`,
    );
    return dir;
  }
  if (!read.ok) {
    io.stderr(
      `${messagePrefix(io)}: invalid config ${located.path}:\n${read.problems.map((p) => `  ${p}\n`).join('')}`,
    );
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
