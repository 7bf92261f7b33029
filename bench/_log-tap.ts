/** Counts the statuses of a server's JSON request log (its stderr) and keeps the tail for error reports. */
export class LogTap {
  #rest = '';
  #tail = '';
  #statuses = new Map<string, number>();
  #durations = new Map<string, number>();

  feed(chunk: string): void {
    const text = this.#rest + chunk;
    const end = text.lastIndexOf('\n') + 1;
    this.#rest = text.slice(end);
    const lines = text.slice(0, end);
    for (const match of lines.matchAll(/"status":(\d{3})(?:,"duration":([\d.]+))?/g)) {
      const status = match[1]!;
      this.#statuses.set(status, (this.#statuses.get(status) ?? 0) + 1);
      if (match[2] !== undefined) this.#durations.set(status, Number(match[2]));
    }
    this.#tail = (this.#tail + lines).slice(-4096);
  }

  /** The `duration` (ms) of the last request logged with this status. */
  lastDuration(status: string): number | null {
    return this.#durations.get(status) ?? null;
  }

  /** Statuses logged since the last call. */
  take(): Record<string, number> {
    const counts = Object.fromEntries(this.#statuses);
    this.#statuses.clear();
    return counts;
  }

  tail(): string {
    return this.#tail + this.#rest;
  }
}
