// Retries with exponential backoff, full jitter, Retry-After and a deadline.

/** What one attempt at an outside call came to. */
export type Attempt<T> =
  | { ok: true; value: T }
  /** `retryable`: 429, 5xx, a connection error; `retryAfterMs` when the other side said how long to wait. */
  | { ok: false; retryable: boolean; message: string; retryAfterMs?: number };

export interface RetryOptions {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  /** The first backoff; each next one doubles, with full jitter. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** No attempt starts, and no wait runs, past this time (ms on `now`'s clock). */
  deadline?: number;
  now?: () => number;
  /** Waits `ms`; resolves early (and the loop stops) when `signal` aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  signal?: AbortSignal;
}

/** The outcome of a retried call: the last attempt, and how many were made. */
export type Retried<T> = Attempt<T> & { attempts: number };

/**
 * Calls `attempt` until it succeeds, fails permanently, or the attempts or the deadline run out.
 * Waits honour a `Retry-After` the other side gave, else back off exponentially with full jitter.
 */
export async function retry<T>(
  attempt: (n: number) => Promise<Attempt<T>>,
  options: RetryOptions,
): Promise<Retried<T>> {
  const now = options.now ?? Date.now;
  const wait = options.sleep ?? sleep;
  const random = options.random ?? Math.random;
  for (let n = 1;; n++) {
    const result = await attempt(n);
    if (result.ok || !result.retryable || n >= options.maxAttempts || options.signal?.aborted) {
      return { ...result, attempts: n };
    }
    const backoff = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (n - 1)) * random();
    const pause = result.retryAfterMs ?? backoff;
    if (options.deadline !== undefined && now() + pause >= options.deadline) return { ...result, attempts: n };
    await wait(pause, options.signal);
    if (options.signal?.aborted) return { ...result, attempts: n };
  }
}

/** Parses a `Retry-After` header (seconds, or an HTTP date) into milliseconds from `now`. */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value === null || value === undefined || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Waits `ms`, or less when `signal` aborts first; never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
