// The runs charged to hooks' daily budgets as the journal keeps them: each commit that accepts
// runs of a hook with a budget adds them to the day they are charged to, and the day the budget was
// reached is marked once (its notice posted). Counted from the lines, not from the retained runs, so
// a spent budget survives a restart and a compaction whatever became of the runs.

/** Runs charged to one hook's day, or (with `told`) the notice of the day's budget posted. */
export interface BudgetCharge {
  /** The work hook (a mapping's id, `agent`). */
  hook: string;
  /** The calendar day in the budget's time zone, `YYYY-MM-DD`. */
  day: string;
  /** Runs added to the day (0 when the line only marks the notice). */
  runs: number;
  told?: boolean;
}

// Days kept per hook: today, the next day runs may wait for, and the one before (a clock near midnight).
const _DAYS_KEPT = 3;

/** Each hook's charged runs per day, from the journal's lines; only the latest days of a hook are kept. */
export class Budgets {
  #days = new Map<string, Map<string, { runs: number; told: boolean }>>();

  /** Adds a line's charges (also at open, as the journal is replayed). */
  apply(charges: readonly BudgetCharge[] | undefined): void {
    // Most lines charge nothing: they cost no iteration here.
    if (charges === undefined) return;
    for (const { hook, day, runs, told } of charges) {
      let days = this.#days.get(hook);
      if (days === undefined) this.#days.set(hook, days = new Map());
      const kept = days.get(day) ?? { runs: 0, told: false };
      days.set(day, { runs: kept.runs + runs, told: kept.told || told === true });
      if (days.size > _DAYS_KEPT) {
        const oldest = [...days.keys()].sort()[0]!;
        days.delete(oldest);
      }
    }
  }

  /** Takes back a line's charges: it never reached the disk. */
  forget(charges: readonly BudgetCharge[] | undefined): void {
    if (charges === undefined) return;
    for (const { hook, day, runs, told } of charges) {
      const kept = this.#days.get(hook)?.get(day);
      if (kept === undefined) continue;
      this.#days.get(hook)!.set(day, { runs: Math.max(0, kept.runs - runs), told: kept.told && told !== true });
    }
  }

  /** The runs charged to a hook's day. */
  used(hook: string, day: string): number {
    return this.#days.get(hook)?.get(day)?.runs ?? 0;
  }

  /** Whether the notice of a hook's day was posted. */
  told(hook: string, day: string): boolean {
    return this.#days.get(hook)?.get(day)?.told ?? false;
  }

  /** Every kept day as one charge each: what a compacted journal holds. */
  snapshot(): BudgetCharge[] {
    return [...this.#days].flatMap(([hook, days]) =>
      [...days].map(([day, { runs, told }]) => (told ? { hook, day, runs, told } : { hook, day, runs }))
    );
  }
}
