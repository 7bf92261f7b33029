import { checkTransforms } from '../hooks/transforms/reloader.ts';
import { loadConfig } from '../config/load.ts';
import { locateConfig, locateStateDir } from '../config/locate.ts';
import type { Config, ConfigResult } from '../config/types.ts';
import { exists, messagePrefix, type Io } from './io.ts';

/** What the commands that read the config take from the command line. */
export interface ConfigFlags {
  config?: string;
  'state-dir'?: string;
}

/** Loads the config the flags and environment name; prints every problem (and ignored key) on stderr. */
export async function loadConfigFor(flags: ConfigFlags, io: Io, options: { transforms?: boolean } = {}): Promise<Config | null> {
  const { path } = locateConfig(flags.config, io.env);
  const result = await readConfig(flags, io, options.transforms ?? false);
  const name = messagePrefix(io);
  if (!result.ok) {
    io.stderr(`${name}: invalid config ${path}:\n${result.problems.map((p) => `  ${p}\n`).join('')}`);
    return null;
  }
  for (const key of result.ignored) io.stderr(`${name}: ${key} is not used by hooks-ingress (ignored)\n`);
  for (const warning of result.warnings) io.stderr(`${name}: warning: ${warning}\n`);
  return result.config;
}

/** Loads the config, and (for the commands that will run them) loads its transforms too. */
export async function readConfig(flags: ConfigFlags, io: Io, transforms = true): Promise<ConfigResult> {
  const result = await loadConfig(locateConfig(flags.config, io.env).path, io.env);
  if (!result.ok || !transforms) return result;
  const problems = await checkTransforms(result.config);
  return problems.length === 0 ? result : { ok: false, problems };
}

/** The state directory a reading command looks in; without a config file it still has its default place. */
export async function stateDirFor(flags: ConfigFlags, io: Io): Promise<string | null> {
  if (flags['state-dir'] !== undefined) return flags['state-dir'];
  const located = locateConfig(flags.config, io.env);
  let config: Config | null = null;
  if (!located.implicit || (await exists(located.path))) {
    config = await loadConfigFor(flags, io);
    if (config === null) return null;
  }
  return locateStateDir(undefined, config, io.env);
}
