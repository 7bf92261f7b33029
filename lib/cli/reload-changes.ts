import { createHash } from 'node:crypto';
import type { Config } from '../config/types.ts';
import { isSecretKey } from '../guard/credentials.ts';
import type { ReloadChanges } from './reloads.ts';

// What a reload changed, told without a secret: which endpoints and mappings came and went, and
// where secrets were added, removed or replaced (compared by digest, named by key path).


/** What changed from `before` to `after`. */
export function reloadChanges(before: Config, after: Config): ReloadChanges {
  const secretsBefore = secretDigests(before);
  const secretsAfter = secretDigests(after);
  return {
    hooks: _diff(hookPaths(before), hookPaths(after)),
    mappings: _diff(before.hooks.mappings.map((m) => m.id), after.hooks.mappings.map((m) => m.id)),
    secrets: {
      ..._diff([...secretsBefore.keys()], [...secretsAfter.keys()]),
      changed: [...secretsAfter].filter(([path, digest]) => secretsBefore.has(path) && secretsBefore.get(path) !== digest).map(([path]) => path),
    },
  };
}

/** The endpoint paths a config serves: /wake and /agent, and each mapping's path, under hooks.path. */
export function hookPaths(config: Config): string[] {
  if (!config.hooks.enabled) return [];
  const base = config.hooks.path.replace(/\/+$/, '');
  const names = ['wake', 'agent', ...config.hooks.mappings.flatMap((m) => (m.match.path === undefined ? [] : [m.match.path]))];
  return [...new Set(names)].map((name) => `${base}/${name}`);
}

/** Every secret of a config by key path (mappings named by id), with a digest of its value. */
export function secretDigests(config: Config): Map<string, string> {
  const found = new Map<string, string>();
  const visit = (value: unknown, path: string, secret: boolean, depth: number) => {
    if (depth > 32) return;
    if (typeof value === 'string') {
      if (secret && value !== '') found.set(path, createHash('sha256').update(value).digest('hex'));
      return;
    }
    if (Array.isArray(value)) {
      value.forEach((item, i) => visit(item, `${path}[${i}]`, secret, depth + 1));
      return;
    }
    // Plain records only: templates, sets and compiled patterns hold no configured secret.
    if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) return;
    for (const [key, child] of Object.entries(value)) visit(child, path === '' ? key : `${path}.${key}`, secret || isSecretKey(key), depth + 1);
  };
  visit({ ...config.hooks, mappings: undefined }, 'hooks', false, 0);
  for (const mapping of config.hooks.mappings) visit(mapping, `hooks.mappings[${mapping.id}]`, false, 0);
  visit(config.providers, 'providers', false, 0);
  visit(config.channels, 'channels', false, 0);
  visit(config.gateway, 'gateway', false, 0);
  return found;
}

/**
 * The keys whose new values a reload does not apply (they take effect at the next start), by key
 * path: the listener's address, the state directory, the heartbeat's interval, the idempotency
 * window, and forward mode turned on or off.
 */
export function needsRestart(before: Config, after: Config): string[] {
  const changed: [string, unknown, unknown][] = [
    ['gateway.bind', before.gateway.bind, after.gateway.bind],
    ['gateway.port', before.gateway.port, after.gateway.port],
    ['state.dir', before.stateDir, after.stateDir],
    ['agents.defaults.heartbeat.every', before.agents.heartbeatEveryMs, after.agents.heartbeatEveryMs],
    ['hooks.idempotencyTtlSeconds', before.hooks.idempotencyTtlSeconds, after.hooks.idempotencyTtlSeconds],
    ['hooks.forward', before.hooks.forward === null, after.hooks.forward === null],
  ];
  return changed.filter(([, was, is]) => was !== is).map(([path]) => path);
}

function _diff(before: readonly string[], after: readonly string[]): { added: string[]; removed: string[] } {
  const was = new Set(before);
  const is = new Set(after);
  return { added: [...is].filter((x) => !was.has(x)), removed: [...was].filter((x) => !is.has(x)) };
}
