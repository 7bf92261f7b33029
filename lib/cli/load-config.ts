// What each command needs of the config (NEEDS), loading it so, with its problems and warnings on stderr.

import { loadConfig } from '../config/load.ts';
import { locateConfig } from '../config/locate.ts';
import type { Config, ConfigResult } from '../config/types.ts';
import { type Io, messagePrefix } from './io.ts';
import { checkTransformsOf } from '../server/transforms.ts';

/** What the commands that read the config take from the command line. */
export interface ConfigFlags {
  config?: string;
  'state-dir'?: string;
}

/**
 * What a command needs of the config file:
 * - `all`: every key valid and every `${NAME}` set; `warnings` says whether the command prints them;
 * - `key`: every key valid, but only the variables inside the key asked for (`config get KEY`);
 * - `state`: where the state directory is, and nothing else (`state.dir` and its variables).
 */
export type Need = { of: 'all'; warnings: boolean } | { of: 'key' } | { of: 'state' };

/** Each command's need: the one place it is decided. A command not listed needs everything and prints no warnings. */
export const NEEDS: Readonly<Record<string, Need>> = {
  serve: { of: 'all', warnings: true },
  check: { of: 'all', warnings: true },
  send: { of: 'all', warnings: false },
  sign: { of: 'all', warnings: false },
  'config get': { of: 'key' },
  events: { of: 'state' },
  runs: { of: 'state' },
  outbox: { of: 'state' },
  requests: { of: 'state' },
  // With a server running only the state directory; tried here, the whole config is read anyway.
  try: { of: 'state' },
  reload: { of: 'state' },
  status: { of: 'state' },
  inspect: { of: 'state' },
};

/** The need of the command `io` runs. */
export function needOf(io: Pick<Io, 'command'>): Need {
  return (io.command !== undefined && Object.hasOwn(NEEDS, io.command) ? NEEDS[io.command] : undefined) ??
    { of: 'all', warnings: false };
}

/**
 * Loads the config the flags and environment name, as the running command needs it (`key`: the
 * key path `config get` reads); prints every problem once on stderr, and warnings where the command shows them.
 */
export async function loadConfigFor(
  flags: ConfigFlags,
  io: Io,
  options: { transforms?: boolean; key?: string } = {},
): Promise<Config | null> {
  const { path } = locateConfig(flags.config, io.env);
  const need = needOf(io);
  const scope = need.of === 'key' && options.key !== undefined ? { key: options.key } : 'all';
  const result = await readConfig(flags, io, options.transforms ?? false, scope);
  const name = messagePrefix(io);
  if (!result.ok) {
    printInvalid(io, path, result.problems);
    return null;
  }
  if (need.of === 'all' && need.warnings) {
    for (const key of result.ignored) io.stderr(`${name}: ${key} is not used by hooks-ingress (ignored)\n`);
    for (const warning of result.warnings) io.stderr(`${name}: warning: ${warning}\n`);
  }
  return result.config;
}

/** Prints a config's problems on stderr, under one line naming the file. */
export function printInvalid(io: Io, path: string, problems: readonly string[]): void {
  io.stderr(`${messagePrefix(io)}: invalid config ${path}:\n${problems.map((p) => `  ${p}\n`).join('')}`);
}

/** Loads the config, and (for the commands that will run them) loads its transforms too; `signal` stops that check. */
export async function readConfig(
  flags: ConfigFlags,
  io: Io,
  transforms = true,
  scope: 'all' | { key: string } = 'all',
  signal?: AbortSignal,
): Promise<ConfigResult> {
  const result = await loadConfig(locateConfig(flags.config, io.env).path, io.env, scope);
  if (!result.ok || !transforms) return result;
  const problems = await checkTransformsOf(result.config, signal);
  return problems.length === 0 ? result : { ok: false, problems };
}
