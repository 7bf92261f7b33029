// The server's side of `hooks-ingress requests resolve` and of the inspector's Resolve button: a
// failure marked resolved without replaying it (what can never be fixed), in the journal beside
// the replays' outcomes. Its name, RESOLVE_OP, is in lib/control/operations.ts.

import { ErrorCode, HttpError } from '../errors.ts';
import { resolvedChange, type RootChange, succeeded } from '../model/replays.ts';
import type { Store } from '../store/journal/store.ts';
import type { Ledger } from '../store/ledger/ledger.ts';
import { failed } from '../store/ledger/read.ts';
import type { Claims } from './claims.ts';
import { lookUp } from './replay.ts';

/** What the CLI sends. */
export interface ResolveArgs {
  ids: string[];
}

/** One result per id, in order: the root marked resolved, or why not. */
export type ResolveResult = { id: string; ok: true; root: string; resolvedAt: string } | {
  id: string;
  ok: false;
  code: string;
  error: string;
};

/** What the operation works with in the server. */
export interface ResolveParts {
  stateDir: string;
  ledger: Pick<Ledger, 'flush'> | null;
  store: Pick<Store, 'root' | 'commit'>;
  /** The roots a replay runs now: one of them is not resolved under it. */
  claims: Claims;
  now?: () => number;
}

/**
 * Marks the root of each id (an entry id or a request id; a replay's root is the request it
 * replays) resolved by hand, all in one journal line. A root that succeeded, is resolved already,
 * did not fail, or is being replayed now is left as it is, and says so.
 */
export function resolveOperation(parts: ResolveParts): (args: unknown) => Promise<{ results: ResolveResult[] }> {
  return async (raw) => {
    const ids = _ids(raw);
    await parts.ledger?.flush();
    const { named } = await lookUp(parts.stateDir, ids);
    const time = new Date((parts.now ?? Date.now)()).toISOString();
    const results: ResolveResult[] = [];
    const changes = new Map<string, RootChange>();
    // From the records' reading to the commit, no await: a replay claims nothing in between.
    for (const id of ids) {
      const found = named(id);
      if (!found.ok) {
        results.push({ id, ok: false, code: ErrorCode.NotFound, error: found.error });
        continue;
      }
      const { entry, root } = found;
      if (changes.has(root)) {
        results.push({ id, ok: true, root, resolvedAt: time });
        continue;
      }
      const record = parts.store.root(root);
      const why = parts.claims.held(root)
        ? `a replay of entry ${root} is running now`
        : record?.state === 'succeeded' && (record.retries?.length ?? 0) > 0
        ? `entry ${root} is resolved already: its run was retried`
        : record?.state === 'succeeded'
        ? `entry ${root} is resolved already: a replay of it succeeded`
        : record?.state === 'resolved'
        ? `entry ${root} was marked resolved already, at ${record.resolvedAt ?? record.time}`
        : entry.id === root && !failed(entry) && succeeded(entry.status)
        ? `entry ${root} did not fail: there is nothing to resolve`
        : null;
      if (why !== null) {
        results.push({ id, ok: false, code: ErrorCode.NotReplayable, error: why });
        continue;
      }
      changes.set(root, resolvedChange(root, time));
      results.push({ id, ok: true, root, resolvedAt: time });
    }
    if (changes.size > 0) await parts.store.commit({ roots: [...changes.values()] });
    return { results };
  };
}

function _ids(raw: unknown): string[] {
  const ids = (raw as { ids?: unknown } | null)?.ids;
  if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => typeof id === 'string' && id !== '')) {
    throw new HttpError(400, ErrorCode.InvalidPayload, 'ids: must be a non-empty list of entry ids');
  }
  return ids as string[];
}
