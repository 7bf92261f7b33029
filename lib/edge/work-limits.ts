// Each hook's rate limit and daily budget, asked at acceptance (after dedupe): the rate limit's
// sliding window per hook (rate-window.ts), the runs charged to each hook's days, the one notice a
// hook a day when its budget is reached, and what was limited today for status and metrics. One
// object for the life of the process: a reload changes the settings it is asked with, not its counts.

import { type Day, dayAt } from '../day.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { Budget, RateLimit } from '../hooks/limits.ts';
import type { Logger } from '../log.ts';
import type { RunRecord } from '../model/records.ts';
import { workHook } from '../model/work-hook.ts';
import type { BudgetCharge } from '../store/journal/budgets.ts';
import { RateWindow } from './rate-window.ts';

/** What the limits read of the store: the retained runs (a window's start after a restart) and the budgets' days. */
export interface LimitsStore {
  runs(): RunRecord[];
  budget(hook: string, day: string): { used: number; told: boolean };
}

export interface WorkLimitsOptions {
  store: LimitsStore;
  log: Logger;
  /** The wall clock, epoch ms. */
  now?: () => number;
}

/** Which limit held, dropped or refused a request, and what its `over` said: for the trace, metrics and status. */
export interface LimitMark {
  readonly hook: string;
  readonly by: 'rate' | 'budget';
  readonly over: string;
}

/** What a hook's rate limit made of a request. */
export type RateStep =
  | { kind: 'pass'; at: number; mark: LimitMark | null; undo: () => void }
  | { kind: 'ignored'; mark: LimitMark }
  | { kind: 'refused'; refusal: HttpError; mark: LimitMark };

/** What a hook's budget made of a request's runs: charged to a day (held until it starts, when that is a later day), or refused. */
export type BudgetStep =
  | { kind: 'pass'; charge: BudgetCharge; notBefore: number | null; mark: LimitMark | null; undo: () => void }
  | { kind: 'refused'; refusal: HttpError; mark: LimitMark };

/** The notice of a budget reached: its text for the main session, and the line that marks the day's notice posted. */
export interface BudgetNotice {
  readonly text: string;
  readonly told: BudgetCharge;
}

/** One hook's line in status: requests its rate limit caught today (UTC), and its budget's day. */
export interface HookLimitStats {
  hook: string;
  limitedToday: number;
  overBudgetToday: number;
  budget?: { day: string; used: number; runsPerDay: number; waiting: number; timeZone: string };
}

/** The rate windows, the budgets' counts and the day's tallies of every hook that sets a limit. */
export class WorkLimits {
  readonly #store: LimitsStore;
  readonly #log: Logger;
  readonly #now: () => number;
  #windows = new Map<string, RateWindow>();
  // Runs charged per hook and day: read from the store the first time a day is asked, then kept here
  // (this process is the one that charges), with the days' notices posted.
  #used = new Map<string, Map<string, number>>();
  #told = new Set<string>();
  #today = new Map<string, { day: string; limited: number; overBudget: number }>();

  constructor(options: WorkLimitsOptions) {
    this.#store = options.store;
    this.#log = options.log;
    this.#now = options.now ?? Date.now;
  }

  /** The wall clock the limits count by. */
  now(): number {
    return this.#now();
  }

  /**
   * The rate limit's step: a place in the hook's window now, or (`queue`) at the time the window
   * allows, when the request brings only runs; else dropped (`ignore`) or refused (429).
   */
  rate(hook: string, limit: RateLimit, work: { runs: number; other: boolean }): RateStep {
    const now = this.#now();
    const window = this.#window(hook, limit, now);
    const at = window.next(now);
    if (at === now) return { kind: 'pass', at, mark: null, undo: window.take(at) };
    const mark: LimitMark = { hook, by: 'rate', over: limit.over };
    this.#tally(hook, 'limited');
    if (limit.over === 'ignore') return { kind: 'ignored', mark };
    // Only runs can wait: a wake or a notify delivery past the limit is refused, as `reject` would.
    if (limit.over === 'queue' && work.runs > 0 && !work.other) {
      return { kind: 'pass', at, mark, undo: window.take(at) };
    }
    const message =
      `rate limit of hook ${hook} reached: ${limit.max} requests in ${limit.windowSeconds} s; retry later`;
    return { kind: 'refused', refusal: _tooMany(ErrorCode.RateLimited, message, at - now), mark };
  }

  /**
   * The budget's step for `runs` runs starting no earlier than `from`: charged to that day while it
   * has room, else (`wait`) to the next day, held until it starts, else refused (429). The first
   * request of a day past the budget also returns the day's notice (once a hook a day).
   */
  budget(hook: string, budget: Budget, runs: number, from: number): { step: BudgetStep; notice: BudgetNotice | null } {
    const now = this.#now();
    const day = dayAt(Math.max(now, from), budget.timeZone);
    if (this.#fits(hook, day.day, runs, budget)) return { step: this.#charge(hook, day, runs, null), notice: null };
    this.#tally(hook, 'overBudget');
    const mark: LimitMark = { hook, by: 'budget', over: budget.over };
    const notice = this.#notice(hook, day, budget);
    if (budget.over === 'wait') {
      const next = dayAt(day.end, budget.timeZone);
      if (this.#fits(hook, next.day, runs, budget)) {
        return { step: this.#charge(hook, next, runs, mark, Math.max(from, next.start)), notice };
      }
    }
    const message = `daily budget of hook ${hook} spent: ${budget.runsPerDay} runs a day` +
      (budget.over === 'wait' ? ', and the next day is spoken for' : '') + '; retry tomorrow';
    return {
      step: { kind: 'refused', refusal: _tooMany(ErrorCode.BudgetExceeded, message, day.end - now), mark },
      notice,
    };
  }

  /** Each limited hook's tallies and budget day, for status and the page; `limits` are the hooks' settings now. */
  stats(limits: ReadonlyMap<string, { readonly budget?: Budget }>): HookLimitStats[] {
    const now = this.#now();
    const utc = dayAt(now, 'UTC').day;
    return [...limits].map(([hook, { budget }]) => {
      const today = this.#today.get(hook);
      const counted = today !== undefined && today.day === utc;
      const stats: HookLimitStats = {
        hook,
        limitedToday: counted ? today.limited : 0,
        overBudgetToday: counted ? today.overBudget : 0,
      };
      if (budget !== undefined) {
        const day = dayAt(now, budget.timeZone);
        const used = this.#usedOn(hook, day.day);
        const waiting = this.#usedOn(hook, dayAt(day.end, budget.timeZone).day);
        stats.budget = { day: day.day, used, runsPerDay: budget.runsPerDay, waiting, timeZone: budget.timeZone };
      }
      return stats;
    });
  }

  // The hook's window, made at its first use from the runs the journal still holds (their requests'
  // places: a held run's start time, else its acceptance), and remade with the places it holds when
  // the settings change at a reload.
  #window(hook: string, limit: RateLimit, now: number): RateWindow {
    const windowMs = limit.windowSeconds * 1000;
    let window = this.#windows.get(hook);
    if (window !== undefined && window.max === limit.max && window.windowMs === windowMs) return window;
    window = new RateWindow(limit.max, windowMs, window?.times() ?? this.#placesOf(hook, now - windowMs));
    this.#windows.set(hook, window);
    return window;
  }

  #placesOf(hook: string, after: number): number[] {
    const places = new Map<string, number>();
    for (const run of this.#store.runs()) {
      if (workHook(run, 'agent') !== hook) continue;
      const at = Date.parse(run.notBefore ?? run.acceptedAt);
      // The runs of one request took one place.
      if (at > after) places.set(run.requestId ?? run.runId, at);
    }
    return [...places.values()];
  }

  #usedOn(hook: string, day: string): number {
    let days = this.#used.get(hook);
    if (days === undefined) this.#used.set(hook, days = new Map());
    let used = days.get(day);
    if (used === undefined) {
      used = this.#store.budget(hook, day).used;
      days.set(day, used);
      // Days long past are not asked again: keep the latest few.
      if (days.size > 4) days.delete([...days.keys()].sort()[0]!);
    }
    return used;
  }

  #fits(hook: string, day: string, runs: number, budget: Budget): boolean {
    return this.#usedOn(hook, day) + runs <= budget.runsPerDay;
  }

  #charge(hook: string, day: Day, runs: number, mark: LimitMark | null, notBefore: number | null = null): BudgetStep {
    const days = this.#used.get(hook)!;
    days.set(day.day, (days.get(day.day) ?? 0) + runs);
    let undone = false;
    const undo = () => {
      if (undone) return;
      undone = true;
      days.set(day.day, Math.max(0, (days.get(day.day) ?? runs) - runs));
    };
    return { kind: 'pass', charge: { hook, day: day.day, runs }, notBefore, mark, undo };
  }

  // The day's notice, the first time a hook's budget is passed that day (also across restarts: the
  // journal marks it), with its one log line.
  #notice(hook: string, day: Day, budget: Budget): BudgetNotice | null {
    const key = `${hook}\n${day.day}`;
    if (this.#told.has(key) || this.#store.budget(hook, day.day).told) return null;
    this.#told.add(key);
    const then = budget.over === 'wait'
      ? 'further runs wait for the next day'
      : 'further requests are refused until the day ends';
    this.#log.warn('hook budget reached', {
      hook,
      day: day.day,
      timeZone: budget.timeZone,
      runsPerDay: budget.runsPerDay,
      over: budget.over,
    });
    return {
      text: `Budget reached: hook ${hook} has used its ${budget.runsPerDay} runs for ${day.day} ` +
        `(${budget.timeZone}); ${then}.`,
      told: { hook, day: day.day, runs: 0, told: true },
    };
  }

  #tally(hook: string, what: 'limited' | 'overBudget'): void {
    const utc = dayAt(this.#now(), 'UTC').day;
    let today = this.#today.get(hook);
    if (today === undefined || today.day !== utc) {
      this.#today.set(hook, today = { day: utc, limited: 0, overBudget: 0 });
    }
    today[what]++;
  }
}

function _tooMany(code: ErrorCode, message: string, waitMs: number): HttpError {
  return new HttpError(429, code, message, {
    headers: { 'retry-after': String(Math.max(1, Math.ceil(waitMs / 1000))) },
  });
}
