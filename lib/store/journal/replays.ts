// The roots the journal knows: per original request that was replayed or resolved by hand, its
// state and replays (lib/model/replays.ts), rebuilt from the journal's `roots` lines at open and
// by the CLI's reader alike, and bounded as the rest of the journal is.

import { MAX_ATTEMPTS, type ReplayAttempt, type RootChange, type RootRecord, succeeded } from '../../model/replays.ts';

/** How many roots are kept at least; the one changed longest ago goes first. */
export const MAX_ROOTS = 10_000;

/**
 * How many roots are kept when the ledger holds at most `ledgerEntries` entries: never fewer, so
 * a root resolved by hand is not forgotten (and listed as failed again) while an entry of it is
 * still in the ledger; each kept root has an entry there, so memory stays bounded as the ledger is.
 */
export function rootBound(ledgerEntries: number): number {
  return Math.max(MAX_ROOTS, ledgerEntries);
}

/** The roots' records, kept in the order of their last change (the oldest first). */
export class Roots {
  readonly #records = new Map<string, RootRecord>();
  readonly #max: number;

  constructor(max = MAX_ROOTS) {
    this.#max = max;
  }

  get size(): number {
    return this.#records.size;
  }

  /** One root's record, if it is kept. */
  get(root: string): RootRecord | null {
    return this.#records.get(root) ?? null;
  }

  /** Every kept record, the one changed longest ago first. */
  list(): RootRecord[] {
    return [...this.#records.values()];
  }

  /** Applies a line's changes; each changed record becomes the newest. */
  apply(changes: readonly RootChange[] | undefined): void {
    for (const change of changes ?? []) {
      const old = this.#records.get(change.root);
      this.#records.delete(change.root);
      this.#records.set(change.root, applyChange(old, change));
      if (this.#records.size > this.#max) this.#records.delete(this.#records.keys().next().value!);
    }
  }

  /** The records `changes` would touch, as they are now: what {@link restore} puts back. */
  before(changes: readonly RootChange[] | undefined): Map<string, RootRecord | undefined> | null {
    // Most lines change no root: nothing to keep, and nothing made per request.
    if (changes === undefined || changes.length === 0) return null;
    return new Map(changes.map((c) => [c.root, this.#records.get(c.root)]));
  }

  /** Puts records back as {@link before} saw them (their line never reached the disk). */
  restore(saved: ReadonlyMap<string, RootRecord | undefined> | null): void {
    if (saved === null) return;
    for (const [root, record] of saved) {
      if (record === undefined) this.#records.delete(root);
      else this.#records.set(root, record);
    }
  }

  /** Drops the records last changed before `cutoff` (epoch ms): no entry of theirs is left to replay. */
  trim(cutoff: number): void {
    for (const [root, record] of this.#records) {
      if (Date.parse(record.time) >= cutoff) break;
      this.#records.delete(root);
    }
  }

  /** Each record as the change that makes it again: what a compacted journal holds. */
  changes(): RootChange[] {
    return this.list().map(({ root, state, replays, retries, resolvedAt, time }) => ({
      root,
      state,
      ...(replays.length === 0 ? {} : { replays }),
      ...(retries === undefined || retries.length === 0 ? {} : { retries }),
      ...(resolvedAt === undefined ? {} : { resolvedAt }),
      time,
    }));
  }
}

/** A record after a change: the state the change carries, its replays added (bounded), its resolution by hand. */
export function applyChange(old: RootRecord | undefined, change: RootChange): RootRecord {
  const replays = _bounded([...(old?.replays ?? []), ...(change.replays ?? [])]);
  const resolvedAt = change.resolvedAt ?? old?.resolvedAt;
  const retries = [...(old?.retries ?? []), ...(change.retries ?? [])].slice(-MAX_ATTEMPTS);
  return {
    root: change.root,
    state: change.state,
    replays,
    ...(retries.length === 0 ? {} : { retries }),
    ...(resolvedAt === undefined ? {} : { resolvedAt }),
    time: change.time,
  };
}

/**
 * The roots of a journal's lines, as the CLI reads them without opening the journal for writing.
 * It does not know the ledger's bound, so it keeps every root the lines name: they are in memory
 * already, and the server's compaction writes back only the ones it kept.
 */
export function rootsOf(lines: Iterable<{ t: string; roots?: RootChange[] }>): Roots {
  const roots = new Roots(Number.POSITIVE_INFINITY);
  for (const line of lines) if (line.t === 'commit') roots.apply(line.roots);
  return roots;
}

// The newest MAX_ATTEMPTS, the first success always among them: it is what resolved the root.
function _bounded(replays: ReplayAttempt[]): ReplayAttempt[] {
  if (replays.length <= MAX_ATTEMPTS) return replays;
  const first = replays.find((r) => succeeded(r.status));
  const newest = replays.slice(-MAX_ATTEMPTS);
  if (first === undefined || newest.includes(first)) return newest;
  return [first, ...newest.slice(1)];
}
