// One hook's rate limit as a sliding window: the times of the requests it let through (a queued
// request's is the time its runs may start, which can lie ahead), so that no window of the limit's
// length ever holds more than `max` of them, and the time the next request may take a place.

/**
 * A sliding window over the times of the requests a hook let through: any interval of `windowMs`
 * (open at its start, closed at its end) holds at most `max` of them. Times are kept in order;
 * those that left the window are dropped as the window is asked.
 */
export class RateWindow {
  readonly max: number;
  readonly windowMs: number;
  #times: number[] = [];

  constructor(max: number, windowMs: number, times: readonly number[] = []) {
    this.max = max;
    this.windowMs = windowMs;
    for (const t of times) this.#insert(t);
  }

  /** The earliest time at or after `now` a request may take a place: `now` while the window has room. */
  next(now: number): number {
    this.#prune(now);
    const times = this.#times;
    // The max-th newest time must have left the window by then: every window holding the new time holds at most max.
    return times.length < this.max ? now : Math.max(now, times[times.length - this.max]! + this.windowMs);
  }

  /** Takes a place at `at` (a time {@link next} gave); the function returned gives it back (a request refused later on). */
  take(at: number): () => void {
    this.#insert(at);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const i = this.#times.lastIndexOf(at);
      if (i !== -1) this.#times.splice(i, 1);
    };
  }

  /** The times held, oldest first (a window rebuilt with other settings starts from them). */
  times(): readonly number[] {
    return this.#times;
  }

  #prune(now: number): void {
    const times = this.#times;
    let gone = 0;
    while (gone < times.length && times[gone]! <= now - this.windowMs) gone++;
    if (gone > 0) times.splice(0, gone);
  }

  // In order: a queued time can lie ahead of one taken later for a request with room at once.
  #insert(t: number): void {
    const times = this.#times;
    let i = times.length;
    while (i > 0 && times[i - 1]! > t) i--;
    times.splice(i, 0, t);
  }
}
