// The limits a hook may set on the work it causes: `rateLimit` (requests in a sliding window) and
// `budget` (runs a day), on a mapping, `hooks.agent` and (a rate limit only) `hooks.wake`; their
// schemas with the defaults applied, and the settings of one hook looked up by its name.

import { isTimeZone } from '../day.ts';
import { literal, number, object, optional, refine, type Schema, string } from '../schema.ts';

/** What a request past a hook's rate limit gets: refused (429), its runs held until the window allows, or acknowledged and dropped. */
export const RATE_OVER = ['reject', 'queue', 'ignore'] as const;
export type RateOver = (typeof RATE_OVER)[number];

/** What runs past a hook's daily budget get: held until the next day, or refused (429). */
export const BUDGET_OVER = ['wait', 'reject'] as const;
export type BudgetOver = (typeof BUDGET_OVER)[number];

/** At most `max` requests of a hook in any `windowSeconds`. */
export interface RateLimit {
  readonly max: number;
  readonly windowSeconds: number;
  readonly over: RateOver;
}

/** At most `runsPerDay` runs of a hook charged to one calendar day in `timeZone`. */
export interface Budget {
  readonly runsPerDay: number;
  readonly over: BudgetOver;
  readonly timeZone: string;
}

/** What one hook sets: each absent when not set. */
export interface HookLimits {
  readonly rateLimit?: RateLimit;
  readonly budget?: Budget;
}

/** The most requests a window may count (each is a number held in memory while it is in the window). */
export const MAX_RATE = 10_000;

const timeZone = refine(
  string({ trim: true, nonEmpty: true }),
  (zone) => isTimeZone(zone) ? null : 'must be an IANA time zone name such as "Europe/Berlin", or "UTC"',
);

function _rateLimit(over: Schema<RateOver>): Schema<RateLimit> {
  const shape = object({
    max: number({ integer: true, min: 1, max: MAX_RATE }),
    windowSeconds: number({ integer: true, min: 1, max: 86_400 }),
    over: optional(over),
  });
  return (value, at, report) => {
    const checked = shape(value, at, report);
    return checked === undefined ? undefined : { ...checked, over: checked.over ?? 'reject' };
  };
}

/** A mapping's and `hooks.agent`'s `rateLimit`; `over` defaults to `reject`. */
export const rateLimitSchema: Schema<RateLimit> = _rateLimit(literal(...RATE_OVER));

/** `hooks.wake.rateLimit`: a wake is an event, not a run, so there is nothing to hold (`queue` is not taken). */
export const wakeRateLimitSchema: Schema<RateLimit> = _rateLimit(literal('reject', 'ignore'));

const _budget = object({
  runsPerDay: number({ integer: true, min: 1, max: 1_000_000 }),
  over: optional(literal(...BUDGET_OVER)),
  timeZone: optional(timeZone),
});

/** A mapping's and `hooks.agent`'s `budget`; `over` defaults to `wait`, `timeZone` to `UTC`. */
export const budgetSchema: Schema<Budget> = (value, at, report) => {
  const checked = _budget(value, at, report);
  return checked === undefined
    ? undefined
    : { runsPerDay: checked.runsPerDay, over: checked.over ?? 'wait', timeZone: checked.timeZone ?? 'UTC' };
};

/** What the limits are looked up in: `hooks.agent`, `hooks.wake` and the mappings. */
export interface LimitedHooks {
  readonly agent: HookLimits;
  readonly wake: Pick<HookLimits, 'rateLimit'>;
  readonly mappings: readonly (HookLimits & { readonly id: string })[];
}

const _byHook = new WeakMap<LimitedHooks, ReadonlyMap<string, HookLimits>>();

/**
 * The hooks that set a limit, by work hook name (`agent`, `wake`, a mapping's id; the first mapping
 * of an id), made once per loaded config. Empty when none is set, so a request costs nothing then.
 */
export function hookLimits(hooks: LimitedHooks): ReadonlyMap<string, HookLimits> {
  let found = _byHook.get(hooks);
  if (found !== undefined) return found;
  const made = new Map<string, HookLimits>();
  const add = (name: string, limits: HookLimits) => {
    if ((limits.rateLimit !== undefined || limits.budget !== undefined) && !made.has(name)) {
      made.set(name, {
        ...(limits.rateLimit ? { rateLimit: limits.rateLimit } : {}),
        ...(limits.budget ? { budget: limits.budget } : {}),
      });
    }
  };
  add('agent', hooks.agent);
  add('wake', hooks.wake);
  for (const mapping of hooks.mappings) add(mapping.id, mapping);
  found = made;
  _byHook.set(hooks, found);
  return found;
}
