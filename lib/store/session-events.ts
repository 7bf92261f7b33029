import type { SessionEvent } from './records.ts';

/**
 * The main session's events in memory, oldest first. The backlog (system events no finished
 * heartbeat turn has read yet) is counted as events come and go, and is never trimmed: it is
 * bounded at the door. Of the consumed events, the newest within both bounds are kept:
 * `retainEvents` of them, `retainEventBytes` of text (UTF-16 code units).
 */
export class SessionEvents {
  readonly #retainEvents: number;
  readonly #retainEventBytes: number;
  #events: SessionEvent[] = [];
  #eventBytes = 0;
  #consumedThrough = 0;
  #backlogEvents = 0;
  #backlogBytes = 0;

  constructor(retainEvents: number, retainEventBytes: number) {
    this.#retainEvents = retainEvents;
    this.#retainEventBytes = retainEventBytes;
  }

  /** The retained events, oldest first. */
  get list(): readonly SessionEvent[] {
    return this.#events;
  }

  /** Events up to this seq were read by a finished heartbeat turn. */
  get consumedThrough(): number {
    return this.#consumedThrough;
  }

  /** Unconsumed system events and their text in UTF-8 bytes: what the backlog bound counts. */
  backlog(): { events: number; bytes: number } {
    return { events: this.#backlogEvents, bytes: this.#backlogBytes };
  }

  /** Whether a `now` wake is here that no finished heartbeat turn consumed. */
  owed(): boolean {
    return this.#events.some((e) => e.seq > this.#consumedThrough && e.kind === 'system' && e.mode === 'now');
  }

  /** Events committed (or replayed from the journal). */
  add(events: readonly SessionEvent[]): void {
    this.#events.push(...events);
    this.#eventBytes += _textBytes(events);
    for (const e of events) {
      if (!this.#unconsumed(e)) continue;
      this.#backlogEvents++;
      this.#backlogBytes += Buffer.byteLength(e.text);
    }
  }

  /** A finished heartbeat turn read the events up to `through`; `recount` is false while the journal is replayed (counted once, by settle()). */
  consume(through: number, recount: boolean): void {
    if (through <= this.#consumedThrough) return;
    this.#consumedThrough = through;
    if (recount) this.#recount();
  }

  /**
   * Drops consumed events past the bounds. Trimmed in batches, at twice the bounds, so a
   * long-running process does not shift the array on every event; only consumed events count, as
   * only they can go.
   */
  trim(): void {
    if (this.#events.length - this.#backlogEvents > this.#retainEvents * 2 || this.#eventBytes - this.#backlogBytes > this.#retainEventBytes * 2) this.#keepRetained();
  }

  /** Takes back the events with these seqs (their line never reached the disk). */
  forget(seqs: ReadonlySet<number>): void {
    this.#events = this.#events.filter((e) => !seqs.has(e.seq));
    this.#eventBytes = _textBytes(this.#events);
    this.#recount();
  }

  /**
   * After the journal is replayed: the backlog counted, and what it still held of read events past
   * the bounds (a compaction had not dropped it yet) dropped, as a running store would have.
   */
  settle(): void {
    this.#recount();
    this.#keepRetained();
  }

  /** Every unconsumed event, and of the others the newest within both bounds. */
  retained(): SessionEvent[] {
    let count = 0;
    let bytes = 0;
    let full = false;
    const kept: SessionEvent[] = [];
    for (let i = this.#events.length - 1; i >= 0; i--) {
      const e = this.#events[i]!;
      if (!this.#unconsumed(e)) {
        full ||= count + 1 > this.#retainEvents || bytes + e.text.length > this.#retainEventBytes;
        if (full) continue;
        count++;
        bytes += e.text.length;
      }
      kept.push(e);
    }
    return kept.reverse();
  }

  #keepRetained(): void {
    this.#events = this.retained();
    this.#eventBytes = _textBytes(this.#events);
  }

  // A system event no finished heartbeat turn has read yet.
  #unconsumed(e: SessionEvent): boolean {
    return e.kind === 'system' && e.seq > this.#consumedThrough;
  }

  #recount(): void {
    this.#backlogEvents = 0;
    this.#backlogBytes = 0;
    for (const e of this.#events) {
      if (!this.#unconsumed(e)) continue;
      this.#backlogEvents++;
      this.#backlogBytes += Buffer.byteLength(e.text);
    }
  }
}

function _textBytes(events: readonly SessionEvent[]): number {
  return events.reduce((sum, e) => sum + e.text.length, 0);
}
