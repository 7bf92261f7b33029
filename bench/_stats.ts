// From the rounds to one figure each: the median over the valid runs of a case.
import type { Run } from './_wrk.ts';

/** The median, NaN values left out; NaN when none is left. */
export function median(values: number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** A case's figures: the median of each over its rounds; `valid` when every round was. */
export interface Figures {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  cpuUs: number;
  valid: boolean;
}

/** The median of each figure over the valid rounds (all rounds when none is valid). */
export function figures(runs: Run[]): Figures {
  const valid = runs.filter((r) => r.problems.length === 0);
  const use = valid.length > 0 ? valid : runs;
  return {
    rps: median(use.map((r) => r.rps)),
    p50Ms: median(use.map((r) => r.p50Ms)),
    p99Ms: median(use.map((r) => r.p99Ms)),
    cpuUs: median(use.map((r) => r.cpuUs ?? Number.NaN)),
    valid: valid.length === runs.length && runs.length > 0,
  };
}
