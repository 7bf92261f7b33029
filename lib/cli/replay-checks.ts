// A bulk replay's plan, read from the state directory, asks the running server (the one that holds
// the delivery ids taken, and reads the config the ids are read by) which of the requests it would
// run have a delivery id already accepted: those are skipped, and the plan says so before anything
// runs. With no server answering, the plan stands as read; the replay itself is the server's anyway.

import type { LedgerEntry } from '../model/ledger-entry.ts';
import { callServer } from '../control/client.ts';
import { REPLAY_OP } from '../control/operations.ts';
import type { ReplayCheck } from '../server/replay.ts';
import type { TakenBy } from '../model/replays.ts';
import type { ReplayPlan, TakenIds } from './failures.ts';

/** The server's checks of `ids` (none run), or `null` when no server answers. */
export async function serverChecks(stateDir: string, ids: readonly string[]): Promise<ReplayCheck[] | null> {
  if (ids.length === 0) return [];
  const answer = await callServer(stateDir, REPLAY_OP, { ids, check: true }, {
    timeoutMs: Math.min(120_000, 10_000 + 100 * ids.length),
  });
  if (answer.kind !== 'result') return null;
  const checks = (answer.result as { checks?: unknown }).checks;
  // A server from before checks answers with none: nothing is known.
  return Array.isArray(checks) &&
      checks.every((c) => typeof c === 'object' && c !== null && typeof (c as ReplayCheck).id === 'string')
    ? (checks as ReplayCheck[])
    : null;
}

/**
 * The plan with the requests whose delivery id is taken (by a request on record, or by one the plan
 * runs before them) moved to what it skips; with `force`, those taken on record run all the same,
 * counted as forced, and those taken by one the plan runs before them are still skipped.
 */
export function withTaken(plan: ReplayPlan, checks: readonly ReplayCheck[] | null, force: boolean): ReplayPlan {
  if (checks === null) return plan;
  const taken = new Map(checks.filter((c) => c.needsForce === 'taken').map((c) => [c.id, c.skip]));
  const inRun = new Set(
    checks.filter((c) => c.needsForce === 'taken' && typeof c.takenInRun === 'string').map((c) => c.id),
  );
  if (taken.size === 0) return plan;
  // Forced, a second copy of a delivery the plan runs a copy of before it would run twice: it is skipped all the same.
  const skips = (e: LedgerEntry) => taken.has(e.id) && (!force || inRun.has(e.id));
  const forced = force ? plan.run.filter((e) => taken.has(e.id) && !inRun.has(e.id)).map((e) => e.id) : [];
  const skipped = plan.run.filter(skips).map((entry) => {
    const detail = taken.get(entry.id);
    return { entry, why: 'taken' as const, ...(detail === undefined ? {} : { detail }) };
  });
  return {
    run: plan.run.filter((e) => !skips(e)),
    forced: [...new Set([...plan.forced, ...forced])],
    skipped: [...plan.skipped, ...skipped],
  };
}

/** The plan's skipped requests whose judge said more, one line each (`skipped ID: why`). */
export function skipLines(plan: ReplayPlan): string[] {
  return plan.skipped.flatMap((s) => (s.detail === undefined ? [] : [`skipped ${s.entry.id}: ${s.detail}`]));
}

/**
 * The failed entries among `failures` whose delivery id another request took and was accepted with
 * (the provider's retry accepted live, or a replay of another copy), as the running server judges
 * them; empty when no server answers, and the failures stand as read. `entries` name the taker's entry.
 */
export async function takenByOthers(
  stateDir: string,
  failures: readonly LedgerEntry[],
  entries: readonly LedgerEntry[],
): Promise<TakenIds> {
  const taken = new Map<string, TakenBy>();
  if (failures.length === 0) return taken;
  const checks = await serverChecks(stateDir, failures.map((e) => e.id));
  if (checks === null) return taken;
  const byRequest = new Map(entries.map((e) => [e.requestId, e]));
  const own = new Map(failures.map((e) => [e.id, e.requestId]));
  for (const check of checks) {
    const requestId = check.takenBy;
    if (typeof requestId !== 'string' || requestId === own.get(check.id) || check.takenInRun !== undefined) continue;
    const taker = byRequest.get(requestId);
    taken.set(check.id, {
      requestId,
      ...(taker === undefined ? {} : { entry: taker.id }),
      live: taker?.replayOf === undefined,
    });
  }
  return taken;
}
