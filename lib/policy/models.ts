// The one reading of a model name (alias → provider/model) and the model allowlist.

import { type Decision, echo } from './decision.ts';

/** `agents.defaults.models`: the allowlist of `provider/model` keys, each with an optional alias. */
export type Models = Readonly<Record<string, { alias?: string }>>;

/** A model named as `provider/model`, split. */
export interface ModelRef {
  /** The `provider/model` key. */
  key: string;
  provider: string;
  model: string;
}

/**
 * The one place a model name is read: an alias from `agents.defaults.models` stands for its
 * `provider/model` key, any other name for itself. `null` when the result is not `provider/model`.
 */
export function resolveModel(name: string, models: Models): ModelRef | null {
  const lower = name.toLowerCase();
  const key = Object.entries(models).find(([, e]) => e.alias?.toLowerCase() === lower)?.[0] ?? name;
  const slash = key.indexOf('/');
  if (slash <= 0 || slash === key.length - 1) return null;
  return { key, provider: key.slice(0, slash), model: key.slice(slash + 1) };
}

/**
 * Checks a requested model against the `agents.defaults.models` allowlist (when it has entries)
 * and turns an alias into its `provider/model` key.
 */
export function allowModel(model: string | undefined, models: Models): Decision<string | undefined> {
  if (model === undefined) return { ok: true, value: undefined };
  const entries = Object.entries(models);
  if (entries.length === 0) return { ok: true, value: model };
  const lower = model.toLowerCase();
  const hit = entries.find(([key, entry]) => key.toLowerCase() === lower || entry.alias?.toLowerCase() === lower);
  if (hit === undefined) return { ok: false, error: `model not allowed: ${echo(model)}` };
  return { ok: true, value: hit[0] };
}
