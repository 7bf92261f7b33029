// The failure limiter (sliding window, lockout, at most 10,000 keys).

/** Options of a {@link FailureLimiter}; durations are in milliseconds. */
export interface FailureLimiterOptions {
  /** Failures within `windowMs` that lock a client. */
  maxFailures: number;
  windowMs: number;
  lockoutMs: number;
  /** Most clients held at once; default 10 000. */
  maxKeys?: number | undefined;
  /** Clock in ms; default `Date.now`. */
  now?: (() => number) | undefined;
}

/** Answer of {@link FailureLimiter.fail}; `remaining: 0` means this failure locked the client. */
export type FailResult = { locked: false; remaining: number } | { locked: true; retryAfterSeconds: number };

/** Snapshot for metrics; `lockouts` counts lock events since construction. */
export interface LimiterStats {
  keys: number;
  locked: number;
  lockouts: number;
}

const DEFAULT_MAX_KEYS = 10_000;

/**
 * Counts authentication failures per client key in an exact sliding window and
 * locks a client for `lockoutMs` once it reaches `maxFailures`. Memory is bounded
 * by `maxKeys`; expired state is dropped lazily, never by timers.
 */
export class FailureLimiter {
  private readonly _maxFailures: number;
  private readonly _windowMs: number;
  private readonly _lockoutMs: number;
  private readonly _maxKeys: number;
  private readonly _now: () => number;
  // Failure timestamps per unlocked key. A key is re-inserted on every failure,
  // so iteration order is "least recently failed first" and eviction is O(1).
  private readonly _open = new Map<string, _Failures>();
  // Lock end per locked key, in lock order. Every lock lasts lockoutMs, so with a
  // monotonic clock the first entry is also the lock that ends soonest.
  private readonly _locks = new Map<string, number>();
  private _lockouts = 0;

  constructor(options: FailureLimiterOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError('Invalid options: must be an object');
    }
    const { maxFailures, windowMs, lockoutMs, maxKeys = DEFAULT_MAX_KEYS, now = Date.now } = options;
    this._maxFailures = _positiveInteger('maxFailures', maxFailures);
    this._windowMs = _positiveInteger('windowMs', windowMs);
    this._lockoutMs = _positiveInteger('lockoutMs', lockoutMs);
    this._maxKeys = _positiveInteger('maxKeys', maxKeys);
    if (typeof now !== 'function') throw new TypeError('Invalid option now: must be a function');
    this._now = now;
  }

  /** Number of client keys currently held, including expired ones not yet dropped. */
  get size(): number {
    return this._open.size + this._locks.size;
  }

  /** Records a failed attempt by `key`; while locked it records nothing and answers the lock. */
  fail(key: string): FailResult {
    const now = this._now();
    const until = this._lockedUntil(key, now);
    if (until !== undefined) return { locked: true, retryAfterSeconds: _seconds(until - now) };
    let log = this._open.get(key);
    if (log === undefined) {
      this._makeRoom(now);
      log = new _Failures();
    } else {
      this._open.delete(key);
      this._prune(log, now);
    }
    log.times.push(now);
    if (log.count >= this._maxFailures) {
      // The failure that reaches the limit is still answered normally; the lock
      // refuses the next ones, which is why this reports remaining: 0.
      this._locks.set(key, now + this._lockoutMs);
      this._lockouts++;
      return { locked: false, remaining: 0 };
    }
    this._open.set(key, log);
    return { locked: false, remaining: this._maxFailures - log.count };
  }

  /** Current counts; drops expired locks first so `locked` is exact. */
  stats(): LimiterStats {
    this._sweep(this._now());
    return { keys: this.size, locked: this._locks.size, lockouts: this._lockouts };
  }

  private _lockedUntil(key: string, now: number): number | undefined {
    const until = this._locks.get(key);
    if (until === undefined) return undefined;
    if (now < until) return until;
    this._locks.delete(key);
    return undefined;
  }

  // Failures older than windowMs fall out; returns how many still count.
  private _prune(log: _Failures, now: number): number {
    const { times } = log;
    while (log.head < times.length && now - times[log.head]! >= this._windowMs) log.head++;
    // Dropped in bulk once they are most of the array: a window holding many failures is not
    // shifted on every new one.
    if (log.head === times.length) {
      times.length = 0;
      log.head = 0;
    } else if (log.head >= 64 && log.head * 2 >= times.length) {
      times.splice(0, log.head);
      log.head = 0;
    }
    return log.count;
  }

  // Expired locks sit at the front of _locks, so this is O(1) amortised.
  private _sweep(now: number): void {
    for (const [key, until] of this._locks) {
      if (now < until) return;
      this._locks.delete(key);
    }
  }

  private _makeRoom(now: number): void {
    if (this.size < this._maxKeys) return;
    this._sweep(now);
    if (this.size < this._maxKeys) return;
    // Unlocked clients go first: evicting a lock would free an attacker early.
    const from = this._open.size > 0 ? this._open : this._locks;
    for (const key of from.keys()) {
      from.delete(key);
      return;
    }
  }
}

// One client's failure times, oldest first; those before `head` have left the window.
class _Failures {
  readonly times: number[] = [];
  head = 0;

  get count(): number {
    return this.times.length - this.head;
  }
}

function _positiveInteger(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`Invalid option ${name}: must be a positive integer`);
  }
  return value;
}

function _seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
