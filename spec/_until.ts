// Test helper: the one poller. The deadline only turns a hang into a readable failure; no
// assertion depends on how fast anything is.

export interface UntilOptions {
  /** How long before giving up; generous, because a loaded machine is slow. */
  timeoutMs?: number;
  /** What else to say when it gives up (a server's stderr, say). */
  detail?: () => string;
}

/**
 * Polls `probe` until it answers something other than `false`, `undefined` or `null`, and
 * resolves with that answer.
 */
export async function until<T>(
  what: string,
  probe: () => T | false | undefined | null | Promise<T | false | undefined | null>,
  options: UntilOptions = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  for (;;) {
    const value = await probe();
    if (value !== false && value !== undefined && value !== null) return value;
    if (Date.now() > deadline) {
      throw new Error(`Timed out waiting for ${what}${options.detail === undefined ? '' : `:\n${options.detail()}`}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
