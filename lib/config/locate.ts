// Where the config file, the state directory and the deno binary for transforms are.

import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import type { Config, Env } from './types.ts';

/** Where the config file is: `--config`, else `$HOOKS_INGRESS_CONFIG`, else the XDG default. */
export function locateConfig(flag: string | undefined, env: Env): { path: string; implicit: boolean } {
  if (flag !== undefined) return { path: resolve(flag), implicit: false };
  if (env['HOOKS_INGRESS_CONFIG']) return { path: resolve(env['HOOKS_INGRESS_CONFIG']), implicit: false };
  const base = env['XDG_CONFIG_HOME'] || join(env['HOME'] || homedir(), '.config');
  return { path: join(base, 'hooks-ingress', 'config.json'), implicit: true };
}

/** Where the state lives: `--state-dir`, else `state.dir`, else `$STATE_DIRECTORY`, else the XDG default. */
export function locateStateDir(flag: string | undefined, config: Pick<Config, 'stateDir'> | null, env: Env): string {
  if (flag !== undefined) return resolve(flag);
  if (config !== null && config.stateDir !== null) return config.stateDir;
  // systemd passes a colon-separated list when a unit names several state directories.
  const systemd = env['STATE_DIRECTORY']?.split(':')[0];
  if (systemd) return systemd;
  const base = env['XDG_STATE_HOME'] || join(env['HOME'] || homedir(), '.local', 'state');
  return join(base, 'hooks-ingress');
}

/**
 * The deno binary transform children run on: the configured path, else this process's own when it
 * runs on Deno, else the first executable `deno` on PATH. `null` when there is none.
 */
export async function locateDeno(configured: string | null, env: Env): Promise<string | null> {
  if (configured !== null) return (await _executable(configured)) ? configured : null;
  const self = (globalThis as { Deno?: { execPath(): string } }).Deno?.execPath();
  if (self !== undefined) return self;
  for (const dir of (env['PATH'] ?? '').split(delimiter)) {
    // An empty or relative PATH entry would name a binary by the working directory of the moment.
    if (!dir.startsWith('/')) continue;
    const candidate = join(dir, 'deno');
    if (await _executable(candidate)) return candidate;
  }
  return null;
}

async function _executable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
