import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
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
