// The hooks the owner paused, the wakes they hold, and the requests whose waiting work was dropped, as
// the journal keeps them: a pause is a line (it survives a restart and kill -9), a held wake is a line
// of its own until its hook resumes (it then joins its session, in the same line that ends the pause)
// or is dropped, and a drop names each request it discarded work of.

import type { SessionEvent } from '../../model/records.ts';

/** A paused hook: since when, and until when when the pause was given an end (`pause --for`). */
export interface Pause {
  hook: string;
  since: string;
  until?: string;
}

/** A change to a hook's pause, as one journal line carries it: paused (again, with a new end), or resumed. */
export type PauseChange = (Pause & { paused: true }) | { hook: string; paused: false };

/**
 * A wake a paused hook holds: the event it becomes when its hook resumes, its hook, and when it was
 * held. Its id comes from the store's sequence, so held wakes keep the order they arrived in.
 */
export interface HeldWake extends Omit<SessionEvent, 'seq' | 'time'> {
  id: number;
  hook: string;
  heldAt: string;
}

/** A request whose waiting work (runs, held wakes, outbox entries) `hooks-ingress drop` discarded. */
export interface DropRecord {
  requestId: string;
  hook: string;
  time: string;
}

/** What a journal line says of pauses. */
export interface PauseFields {
  pauses?: PauseChange[];
  held?: HeldWake[];
  /** Held wakes that left: joined their session (their events are in the same line) or were dropped. */
  released?: number[];
  drops?: DropRecord[];
}

/** Whether a drop record is about this ledger entry: its request id, and its hook (a mapping's id, else the hook's name). */
export function dropOf(
  drops: ReadonlyMap<string, DropRecord>,
  entry: { requestId: string; hook?: string; mapping?: string },
): DropRecord | undefined {
  const drop = drops.get(entry.requestId);
  return drop !== undefined && drop.hook === (entry.mapping ?? entry.hook) ? drop : undefined;
}

/** How many drop records are kept, the oldest going first: as many as the ledger keeps roots at least. */
export const MAX_DROPS = 10_000;

/** The pauses, held wakes and drop records in memory, rebuilt from the journal's lines. */
export class Pauses {
  #paused = new Map<string, Pause>();
  // In id order: ids only grow, and a map keeps insertion order.
  #held = new Map<number, HeldWake>();
  #heldBytes = 0;
  #drops = new Map<string, DropRecord>();

  /** How many hooks are paused: 0 on the path of every request while nothing is. */
  get size(): number {
    return this.#paused.size;
  }

  /** The hook's pause, or `null` while it is not paused. */
  paused(hook: string): Pause | null {
    return this.#paused.get(hook) ?? null;
  }

  /** Every paused hook, in the order they were paused. */
  list(): Pause[] {
    return [...this.#paused.values()];
  }

  /** The wakes held (of one hook, or all), oldest first. */
  held(hook?: string): HeldWake[] {
    const all = [...this.#held.values()];
    return hook === undefined ? all : all.filter((h) => h.hook === hook);
  }

  /** How many wakes are held. */
  get heldCount(): number {
    return this.#held.size;
  }

  /** Held wakes and their text in UTF-8 bytes: they count against the backlog bound, as unread events do. */
  backlog(): { events: number; bytes: number } {
    return { events: this.#held.size, bytes: this.#heldBytes };
  }

  /** The drop record of a request, if its work was dropped and the record is kept. */
  dropped(requestId: string): DropRecord | null {
    return this.#drops.get(requestId) ?? null;
  }

  /** The drop records kept, oldest first. */
  drops(): DropRecord[] {
    return [...this.#drops.values()];
  }

  /** Applies a line's pause changes, new held wakes, released ones and drop records, in that order. */
  apply(line: PauseFields): void {
    for (const change of line.pauses ?? []) {
      if (change.paused) {
        const { paused: _, ...pause } = change;
        this.#paused.set(change.hook, pause);
      } else this.#paused.delete(change.hook);
    }
    for (const wake of line.held ?? []) {
      this.#held.set(wake.id, wake);
      this.#heldBytes += Buffer.byteLength(wake.text);
    }
    for (const id of line.released ?? []) {
      const wake = this.#held.get(id);
      if (wake === undefined) continue;
      this.#held.delete(id);
      this.#heldBytes -= Buffer.byteLength(wake.text);
    }
    for (const drop of line.drops ?? []) {
      this.#drops.delete(drop.requestId);
      this.#drops.set(drop.requestId, drop);
    }
    for (const requestId of this.#drops.keys()) {
      if (this.#drops.size <= MAX_DROPS) break;
      this.#drops.delete(requestId);
    }
  }

  /** Takes back a line that never reached the disk: `saved` is what {@link save} gave before it was applied. */
  restore(saved: Pauses): void {
    this.#paused = saved.#paused;
    this.#held = saved.#held;
    this.#heldBytes = saved.#heldBytes;
    this.#drops = saved.#drops;
  }

  /** Takes back held wakes whose line never reached the disk. */
  unhold(wakes: readonly HeldWake[]): void {
    this.apply({ released: wakes.map((w) => w.id) });
  }

  /** A copy of the state, for {@link restore}. */
  save(): Pauses {
    const copy = new Pauses();
    copy.#paused = new Map(this.#paused);
    copy.#held = new Map(this.#held);
    copy.#heldBytes = this.#heldBytes;
    copy.#drops = new Map(this.#drops);
    return copy;
  }

  /** What a compacted journal holds of them: the pauses, the held wakes and the drop records. */
  snapshot(): PauseFields[] {
    const lines: PauseFields[] = [];
    if (this.#paused.size > 0) lines.push({ pauses: this.list().map((p) => ({ ...p, paused: true })) });
    for (const wake of this.#held.values()) lines.push({ held: [wake] });
    if (this.#drops.size > 0) lines.push({ drops: [...this.#drops.values()] });
    return lines;
  }
}

/** Whether a line says anything of pauses. */
export function hasPauseFields(line: PauseFields): boolean {
  return line.pauses !== undefined || line.held !== undefined || line.released !== undefined ||
    line.drops !== undefined;
}
