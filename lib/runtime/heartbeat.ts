// Requested (coalesced) and periodic heartbeats, recorded in the main session.

import type { Store } from '../store/journal/store.ts';
import type { SessionEvent } from '../model/records.ts';

/** Schedules a callback; returns a function that cancels it. Injected so tests control time. */
export type Schedule = (run: () => void, ms: number) => () => void;

/** The real timers, unref'd so a pending heartbeat never keeps the process alive by itself. */
export const realSchedule: Schedule = (run, ms) => {
  const timer = setTimeout(run, ms);
  timer.unref?.();
  return () => clearTimeout(timer);
};

export interface HeartbeatOptions {
  store: Pick<Store, 'addEvent'>;
  /** The periodic schedule in ms; 0 turns it off. */
  everyMs: number;
  /** Requests arriving within this window make one heartbeat. */
  coalesceMs?: number;
  schedule?: Schedule;
  /** Called with each heartbeat once it is recorded (the agent runtime runs the turn). */
  onBeat?: (event: SessionEvent) => void;
  onError?: (error: unknown) => void;
}

/**
 * Records heartbeats in the main session: the ones asked for by `now` wakes (coalesced, so
 * a burst of wakes makes one turn) and the periodic ones.
 */
export class Heartbeat {
  readonly #options: HeartbeatOptions;
  readonly #schedule: Schedule;
  #reasons = new Map<string, number>();
  #cancelPending: (() => void) | null = null;
  #cancelPeriodic: (() => void) | null = null;
  #writing: Promise<void> = Promise.resolve();

  constructor(options: HeartbeatOptions) {
    this.#options = options;
    this.#schedule = options.schedule ?? realSchedule;
  }

  /** Asks for a heartbeat soon; requests within the coalescing window share one. */
  request(reason: string): void {
    this.#reasons.set(reason, (this.#reasons.get(reason) ?? 0) + 1);
    if (this.#cancelPending !== null) return;
    this.#cancelPending = this.#schedule(() => this.#flush(), this.#options.coalesceMs ?? 250);
  }

  /** Starts the periodic schedule, if one is configured. */
  start(): void {
    const every = this.#options.everyMs;
    if (every <= 0 || this.#cancelPeriodic !== null) return;
    const tick = () => {
      this.#cancelPeriodic = this.#schedule(tick, every);
      this.#record('schedule', 'Heartbeat (schedule)');
    };
    this.#cancelPeriodic = this.#schedule(tick, every);
  }

  /** Stops the schedule and records a requested heartbeat that was still waiting. */
  async stop(): Promise<void> {
    this.#cancelPeriodic?.();
    this.#cancelPeriodic = null;
    if (this.#cancelPending !== null) {
      this.#cancelPending();
      this.#flush();
    }
    await this.#writing;
  }

  #flush(): void {
    this.#cancelPending = null;
    const reasons = [...this.#reasons].map(([reason, count]) => (count > 1 ? `${reason} x${count}` : reason));
    this.#reasons.clear();
    this.#record('request', `Heartbeat requested (${reasons.join(', ')})`);
  }

  #record(source: string, text: string): void {
    const write = this.#options.store.addEvent({ kind: 'heartbeat', text, source }).then(
      (event) => this.#options.onBeat?.(event),
      (error: unknown) => this.#options.onError?.(error),
    );
    this.#writing = this.#writing.then(() => write);
  }
}
