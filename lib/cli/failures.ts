// Which failures are still open, counted by root (the original request: its replays stand for it),
// from the ledger and the journal's records of replayed roots: what `requests --failed` lists, and
// what a bulk `requests replay` runs and skips, and why.

import type { LedgerEntry } from '../model/ledger-entry.ts';
import {
  deliveredResolution,
  type Resolution,
  resolutionOf,
  resolved,
  rootOf,
  type RootRecord,
  type TakenBy,
} from '../model/replays.ts';
import { failed } from '../store/ledger/read.ts';

/** The journal's records of replayed and resolved roots, by root. */
export type RootRecords = ReadonlyMap<string, RootRecord>;

/** Failed entries (by entry id) whose delivery id another request took and was accepted with, as the running server judges it. */
export type TakenIds = ReadonlyMap<string, TakenBy>;

/** What the requests commands read: the ledger's entries, the roots' records, and the delivery ids taken. */
export interface Failures {
  entries: readonly LedgerEntry[];
  roots: RootRecords;
  taken?: TakenIds;
}

/**
 * What an entry's root has come to, when it was replayed or resolved, or its delivery id was
 * taken by another request accepted since; `undefined` when none of these.
 */
export function resolutionFor(entry: LedgerEntry, roots: RootRecords, taken?: TakenIds): Resolution | undefined {
  const root = rootOf(entry);
  const record = roots.get(root);
  if (resolved(record)) return resolutionOf(record!);
  const by = taken?.get(entry.id) ?? taken?.get(root);
  if (by !== undefined) return deliveredResolution(root, by, record);
  return record === undefined ? undefined : resolutionOf(record);
}

/**
 * Whether an entry's root needs nothing more: a replay of it succeeded, it was resolved by hand,
 * its delivery id was taken by another request accepted since, or its own request (still in the
 * ledger) did not fail.
 */
export function rootResolved(entry: LedgerEntry, state: Failures, byId = _byId(state.entries)): boolean {
  const root = rootOf(entry);
  if (resolved(state.roots.get(root))) return true;
  if (state.taken !== undefined && (state.taken.has(entry.id) || state.taken.has(root))) return true;
  const own = byId.get(root);
  return own !== undefined && !failed(own);
}

/**
 * The failures `--failed` lists among `matching` (entries that passed the filters, failed ones):
 * one line per root still open, the root's own entry when it matched, else its newest replay that
 * did; with `all`, every failure, resolved or not.
 */
export function openFailures(matching: readonly LedgerEntry[], state: Failures, all = false): LedgerEntry[] {
  if (all) return [...matching];
  const byId = _byId(state.entries);
  const chosen = new Map<string, LedgerEntry>();
  for (const entry of matching) {
    if (rootResolved(entry, state, byId)) continue;
    const root = rootOf(entry);
    const held = chosen.get(root);
    if (held === undefined || held.id !== root) chosen.set(root, entry);
  }
  const keep = new Set(chosen.values());
  return matching.filter((e) => keep.has(e));
}

/**
 * Why a bulk replay leaves an entry: its root resolved, it succeeded, another entry of its root is
 * run, its timestamp was stale on arrival, its body was not kept, its delivery id was accepted already
 * (the running server says so: replay-checks.ts).
 */
export type SkipWhy = 'resolved' | 'succeeded' | 'again' | 'stale' | 'not-kept' | 'taken' | 'retried';

/** A bulk replay's plan: one entry per root to run (those among them forced), and what it skips. */
export interface ReplayPlan {
  run: LedgerEntry[];
  /** The ids of `run` that need `--force` (there only when it was given). */
  forced: string[];
  /** `detail`: the words of the one who judged it, when they say more (the request that took its delivery id). */
  skipped: { entry: LedgerEntry; why: SkipWhy; detail?: string }[];
}

/**
 * What a bulk replay of `picked` does: each root once (by the first of its entries picked), left
 * when it needs `--force` (resolved, succeeded, a signed timestamp stale on arrival) and `force` is
 * not given, or when its body was not kept.
 */
export function planReplay(picked: readonly LedgerEntry[], state: Failures, force: boolean): ReplayPlan {
  const byId = _byId(state.entries);
  const plan: ReplayPlan = { run: [], forced: [], skipped: [] };
  const seen = new Set<string>();
  for (const entry of picked) {
    const root = rootOf(entry);
    if (seen.has(root)) {
      plan.skipped.push({ entry, why: 'again' });
      continue;
    }
    seen.add(root);
    // What the server runs: the root's own bytes while the ledger has them.
    const runs = byId.get(root) ?? entry;
    if (runs.body === undefined || runs.body.truncated) {
      plan.skipped.push({ entry, why: 'not-kept' });
      continue;
    }
    // Its work goes on by retries of its run: the server refuses a replay of it, forced or not.
    if ((state.roots.get(root)?.retries?.length ?? 0) > 0) {
      plan.skipped.push({ entry, why: 'retried' });
      continue;
    }
    const needs: SkipWhy | null = resolved(state.roots.get(root))
      ? 'resolved'
      : !failed(runs)
      ? 'succeeded'
      : runs.signature?.why === 'stale-timestamp'
      ? 'stale'
      : null;
    if (needs !== null && !force) {
      plan.skipped.push({ entry, why: needs });
      continue;
    }
    plan.run.push(entry);
    if (needs !== null) plan.forced.push(entry.id);
  }
  return plan;
}

const _WHY: Record<SkipWhy, string> = {
  resolved: 'resolved already, by a replay or by hand (--force replays)',
  succeeded: 'that succeeded (--force replays)',
  again: 'already counted with their original',
  stale: 'signed too far from the clock when they arrived (--force replays, if genuine)',
  'not-kept': 'with no body kept (cannot be replayed)',
  taken: 'whose delivery id was already accepted, live or by a replay before them (--force replays)',
  retried: 'whose run was retried (runs retry goes on with them)',
};

/** The plan in one line: how many it runs, how many it skips and why. */
export function describePlan(plan: ReplayPlan): string {
  const runs = `will replay ${plan.run.length} request${plan.run.length === 1 ? '' : 's'}${
    plan.forced.length === 0 ? '' : ` (${plan.forced.length} forced)`
  }`;
  if (plan.skipped.length === 0) return runs;
  const counts = new Map<SkipWhy, number>();
  for (const { why } of plan.skipped) counts.set(why, (counts.get(why) ?? 0) + 1);
  const reasons = [...counts].map(([why, n]) => `${n} ${_WHY[why]}`);
  return `${runs}, skip ${plan.skipped.length}: ${reasons.join('; ')}`;
}

function _byId(entries: readonly LedgerEntry[]): Map<string, LedgerEntry> {
  return new Map(entries.map((e) => [e.id, e]));
}
