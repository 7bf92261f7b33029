// The roots a replay runs now: a claim held in memory, for the time between reading a root's
// record and writing what the replay came to (in the journal line of its effects), so that two
// callers (a single replay and a bulk one, two CLIs, the inspector's button) never both run one.
// A crash loses only this set: what was written is the record.

/** The roots claimed now, shared by replay and resolve. */
export class Claims {
  readonly #held = new Set<string>();

  /** Claims `root`; `false` when it is claimed already. */
  take(root: string): boolean {
    if (this.#held.has(root)) return false;
    this.#held.add(root);
    return true;
  }

  /** Whether a replay of `root` runs now. */
  held(root: string): boolean {
    return this.#held.has(root);
  }

  /** Lets `root` go, once its outcome is written (or nothing was run). */
  release(root: string): void {
    this.#held.delete(root);
  }
}
