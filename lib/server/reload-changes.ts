// What a reload changed, told without a secret: which endpoints and mappings came, went or changed
// (and which of a mapping's keys), which transform modules' files changed (by content digest), where
// secrets were added, removed or replaced (by digest, named by key path), and which new values wait
// for the next start.

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { relative } from 'node:path';
import type { Config } from '../config/types.ts';
import { isSecretKey } from '../guard/credentials.ts';
import type { ReloadChanges } from './reloads.ts';

/** A config as a reload compares it: the config, and a content digest of each transform module it names. */
export interface Loaded {
  config: Config;
  /** By module path relative to the transforms directory (`ci.mjs`); `unreadable` when the file could not be read. */
  transforms: ReadonlyMap<string, string>;
}

/** Digests the transform modules `config` names (their files as they are now), for {@link reloadChanges}. */
export async function loaded(config: Config): Promise<Loaded> {
  const modules = [
    ...new Set(config.hooks.mappings.flatMap((m) => (m.transform === undefined ? [] : [m.transform.module]))),
  ];
  const digests = await Promise.all(
    modules.map(async (module) => [relative(config.hooks.transformsDir, module), await _digestOf(module)] as const),
  );
  return { config, transforms: new Map(digests) };
}

/** What changed from `before` to `after`. */
export function reloadChanges(before: Loaded, after: Loaded): ReloadChanges {
  const secretsBefore = secretDigests(before.config);
  const secretsAfter = secretDigests(after.config);
  const mappingsBefore = before.config.hooks.mappings.map((m) => m.id);
  const mappingsAfter = after.config.hooks.mappings.map((m) => m.id);
  return {
    hooks: _diff(hookPaths(before.config), hookPaths(after.config)),
    mappings: { ..._diff(mappingsBefore, mappingsAfter), changed: mappingChanges(before.config, after.config) },
    transforms: {
      ..._diff([...before.transforms.keys()], [...after.transforms.keys()]),
      changed: _changed(before.transforms, after.transforms),
    },
    secrets: {
      ..._diff([...secretsBefore.keys()], [...secretsAfter.keys()]),
      changed: _changed(secretsBefore, secretsAfter),
    },
  };
}

/** Whether two loaded configs are the same in every key and every transform module's content (the file each came from aside). */
export function sameConfig(a: Loaded, b: Loaded): boolean {
  const key = (l: Loaded) => _canonical([{ ...l.config, file: null }, [...l.transforms].sort()], 0);
  return key(a) === key(b);
}

/** Each mapping in both configs whose keys differ, with those keys: `github (textTemplate, filter)`. Values are compared, never shown. */
export function mappingChanges(before: Config, after: Config): string[] {
  const was = new Map(before.hooks.mappings.map((m) => [m.id, m as unknown as Record<string, unknown>]));
  const changed: string[] = [];
  for (const mapping of after.hooks.mappings) {
    const old = was.get(mapping.id);
    if (old === undefined) continue;
    const now = mapping as unknown as Record<string, unknown>;
    const keys = [...new Set([...Object.keys(old), ...Object.keys(now)])].sort().filter((key) =>
      _canonical(old[key], 0) !== _canonical(now[key], 0)
    );
    if (keys.length > 0) changed.push(`${mapping.id} (${keys.join(', ')})`);
  }
  return changed;
}

/** The endpoint paths a config serves: /wake and /agent, and each mapping's path, under hooks.path. */
export function hookPaths(config: Config): string[] {
  if (!config.hooks.enabled) return [];
  const base = config.hooks.path.replace(/\/+$/, '');
  const names = [
    'wake',
    'agent',
    ...config.hooks.mappings.flatMap((m) => (m.match.path === undefined ? [] : [m.match.path])),
  ];
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
    for (const [key, child] of Object.entries(value)) {
      visit(child, path === '' ? key : `${path}.${key}`, secret || isSecretKey(key), depth + 1);
    }
  };
  visit({ ...config.hooks, mappings: undefined }, 'hooks', false, 0);
  for (const mapping of config.hooks.mappings) visit(mapping, `hooks.mappings[${mapping.id}]`, false, 0);
  visit(config.providers, 'providers', false, 0);
  visit(config.channels, 'channels', false, 0);
  visit(config.gateway, 'gateway', false, 0);
  return found;
}

/**
 * The keys a running server reads only at its start, by key path, with the value a reload compares:
 * a reload reports a change to one of them and does not apply it. The one list: reload's verdict,
 * hooks-ingress(1), hooks-ingress.json(5) and docs/operations.md name these keys (a spec holds them to it).
 */
export const RESTART_KEYS: readonly {
  key: string;
  of: (config: Config) => unknown;
  when?: (config: Config) => boolean;
}[] = [
  { key: 'gateway.bind', of: (c) => c.gateway.bind },
  { key: 'gateway.port', of: (c) => c.gateway.port },
  { key: 'state.dir', of: (c) => c.stateDir },
  { key: 'agents.defaults.heartbeat.every', of: (c) => c.agents.heartbeatEveryMs },
  { key: 'hooks.idempotencyTtlSeconds', of: (c) => c.hooks.idempotencyTtlSeconds },
  // On or off only: its other keys apply.
  { key: 'hooks.forward', of: (c) => c.hooks.forward === null },
  // The inspector's listener and sessions are made once, at the start; turned on or off, it is its port that changed.
  { key: 'inspector.port', of: (c) => c.inspector?.port ?? null },
  { key: 'inspector.bind', of: (c) => c.inspector?.bind, when: (c) => c.inspector !== null },
  { key: 'inspector.allowNonLoopback', of: (c) => c.inspector?.allowNonLoopback, when: (c) => c.inspector !== null },
  { key: 'inspector.idleMinutes', of: (c) => c.inspector?.idleMinutes, when: (c) => c.inspector !== null },
  // The Gmail watcher is started with its arguments once: its settings, and whether it runs.
  {
    key: 'hooks.gmail',
    of: (c) => _canonical([c.hooks.gmail, c.hooks.enabled && c.hooks.presets.includes('gmail')], 0),
  },
];

/** The keys of {@link RESTART_KEYS} whose values differ between the config a server started with and `after`. */
export function needsRestart(started: Config, after: Config): string[] {
  const differs = ({ of, when }: (typeof RESTART_KEYS)[number]) =>
    (when === undefined || (when(started) && when(after))) && _canonical(of(started), 0) !== _canonical(of(after), 0);
  return RESTART_KEYS.filter(differs).map(({ key }) => key);
}

function _diff(before: readonly string[], after: readonly string[]): { added: string[]; removed: string[] } {
  const was = new Set(before);
  const is = new Set(after);
  return { added: [...is].filter((x) => !was.has(x)), removed: [...was].filter((x) => !is.has(x)) };
}

// The names in both maps whose digests differ.
function _changed(before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): string[] {
  return [...after].filter(([name, digest]) => before.has(name) && before.get(name) !== digest).map(([name]) => name);
}

async function _digestOf(file: string): Promise<string> {
  try {
    return createHash('sha256').update(await readFile(file)).digest('hex');
  } catch {
    return 'unreadable';
  }
}

// A value as text that two equal values share: keys sorted, sets as sorted lists, patterns as their
// source. A value met only in memory (a function) counts as equal to any other of its kind.
function _canonical(value: unknown, depth: number): string {
  if (depth > 32) return '…';
  if (value === undefined) return 'undefined';
  if (typeof value === 'function') return 'function';
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  if (value instanceof RegExp) return String(value);
  if (Array.isArray(value)) return `[${value.map((v) => _canonical(v, depth + 1)).join(',')}]`;
  if (value instanceof Set) return `set[${[...value].map((v) => _canonical(v, depth + 1)).sort().join(',')}]`;
  if (value instanceof Map) {
    return `map{${
      [...value].map(([k, v]) => `${_canonical(k, depth + 1)}:${_canonical(v, depth + 1)}`).sort().join(',')
    }}`;
  }
  const keys = Object.keys(value).sort();
  return `{${
    keys.map((k) => `${JSON.stringify(k)}:${_canonical((value as Record<string, unknown>)[k], depth + 1)}`).join(',')
  }}`;
}
