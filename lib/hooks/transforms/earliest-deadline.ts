// One timer for the deadlines of the calls in flight, armed for the earliest.

import { clearTimeout, setTimeout } from 'node:timers';

/**
 * One timer for deadlines of any length (performance.now() times), armed for the earliest: a call
 * in flight costs no timer of its own to set and clear. guard/deadline.ts serves deadlines of one
 * length, which end in the order they were set; these do not. The timer holds the process open
 * from `add` until `idle`, when nothing waits on it.
 */
export class EarliestDeadline {
  readonly #expire: (now: number) => number;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #armedFor = Infinity;

  /** `expire` handles every deadline `now` has passed and returns the earliest one left (Infinity for none). */
  constructor(expire: (now: number) => number) {
    this.#expire = expire;
  }

  /** A new deadline: the timer is armed for it when it is the earliest, and holds the process open. */
  add(deadline: number): void {
    if (deadline < this.#armedFor) this.#arm(deadline);
    else if (!this.#timer!.hasRef()) this.#timer!.ref();
  }

  /** Nothing waits on the timer: it no longer holds the process open. */
  idle(): void {
    this.#timer?.unref();
  }

  /** Clears the timer: no deadline added so far is waited for, and the next `add` arms it afresh. */
  stop(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#armedFor = Infinity;
  }

  #arm(deadline: number): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#armedFor = deadline;
    this.#timer = setTimeout(this.#fire, Math.max(0, deadline - performance.now()));
  }

  readonly #fire = (): void => {
    this.#timer = null;
    this.#armedFor = Infinity;
    const next = this.#expire(performance.now());
    if (next !== Infinity) this.#arm(next);
  };
}
