// Deadlines of one length served by one timer (the body timeout).

import { setTimeout } from 'node:timers';

/** A pending deadline; hand it back to `cancel`. */
export interface Deadline {
  readonly at: number;
  readonly expire: () => void;
}

/**
 * Deadlines that all lie the same `ms` after they are set, so they end in the order they were
 * set: one timer, armed for the oldest, serves them all. Setting and cancelling one is a Set
 * insert and delete, where a timer per request costs an allocation and two list operations.
 * Each deadline fires when its time has come, not earlier; the timer holds the process open
 * only while some deadline is pending.
 */
export class Deadlines {
  readonly ms: number;
  readonly #now: () => number;
  readonly #pending = new Set<Deadline>();
  #timer: ReturnType<typeof setTimeout> | null = null;
  #held = false;

  constructor(ms: number, now: () => number = () => performance.now()) {
    if (!(ms >= 0) || !Number.isFinite(ms)) {
      throw new RangeError(`Invalid deadline: must be a finite number of ms >= 0, got ${ms}`);
    }
    this.ms = ms;
    this.#now = now;
  }

  /** Calls `expire` once `ms` have passed, unless cancelled first. */
  set(expire: () => void): Deadline {
    const deadline: Deadline = { at: this.#now() + this.ms, expire };
    this.#pending.add(deadline);
    if (this.#timer === null) this.#arm(this.ms);
    else if (!this.#held) this.#hold(true);
    return deadline;
  }

  /** Forgets a deadline that has not fired; its timer stays armed for whichever is oldest then. */
  cancel(deadline: Deadline): void {
    if (this.#pending.delete(deadline) && this.#pending.size === 0 && this.#held) this.#hold(false);
  }

  /** How many deadlines are pending. */
  get size(): number {
    return this.#pending.size;
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(this.#fire, ms);
    this.#held = true;
  }

  #hold(held: boolean): void {
    this.#held = held;
    if (held) this.#timer?.ref();
    else this.#timer?.unref();
  }

  readonly #fire = (): void => {
    this.#timer = null;
    const now = this.#now();
    const due: Deadline[] = [];
    // Oldest first: the first one still in the future is the next to arm for.
    for (const deadline of this.#pending) {
      if (deadline.at > now) break;
      due.push(deadline);
    }
    for (const deadline of due) this.#pending.delete(deadline);
    const next = this.#pending.values().next();
    if (next.done !== true) this.#arm(next.value.at - now);
    // Armed before the callbacks run, so one that sets a new deadline finds the timer in place.
    for (const deadline of due) deadline.expire();
  };
}
