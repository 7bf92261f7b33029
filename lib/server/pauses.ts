// Pause, resume and drop (`hooks-ingress pause`, `resume`, `drop`, the inspector's buttons): a hook's
// pause is a journal line; while it holds, the hook's requests are acknowledged as ever, its runs wait
// in the queue, its wakes are held and its outbox entries wait. A resume lets them go in the order they
// came, and one timer ends the pauses given an end (`--for`), whose end is stored, so a restart arms it
// again. A drop discards what a paused hook holds, each request it discarded work of named in the journal.

import { ErrorCode, HttpError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { RunRecord } from '../model/records.ts';
import { workHook } from '../model/work-hook.ts';
import type { OutboxEntry } from '../store/journal/outbox.ts';
import type { Pause } from '../store/journal/pauses.ts';
import type { Store } from '../store/journal/store.ts';

/** The longest pause an end may be given: a year, far below what a timer can wait in slices. */
export const MAX_PAUSE_SECONDS = 366 * 86_400;

/** What pausing works with in the server. */
export interface PauseParts {
  store: Pick<Store, 'commit' | 'paused' | 'pauses' | 'held' | 'outbox'>;
  /** The run queue: its waiting runs, taking them out (drop), putting them back, looking again (resume). */
  runner: {
    waiting(): readonly RunRecord[];
    take(ids: readonly string[]): RunRecord[];
    enqueue(run: RunRecord): void;
    recheck(): void;
  };
  heartbeat: { request(reason: string): void };
  /** Forward mode: told that entries may go now. */
  forwarded?: () => void;
  /** The hooks the configuration has now: its mappings' ids, `agent` and `wake`. */
  hooks: () => readonly string[];
  log: Logger;
  now?: () => number;
}

/** A paused hook as `status`, `/metrics` and the page show it: what it holds, and since when the oldest waits. */
export interface PausedHook extends Pause {
  runs: number;
  wakes: number;
  outbox: number;
  /** When the oldest thing it holds arrived (absent: it holds nothing). */
  oldest?: string;
}

/** What a drop discards (its plan, without `--yes`), or discarded. */
export interface DropOutcome {
  hook: string;
  dryRun: boolean;
  runs: string[];
  wakes: number;
  outbox: string[];
  /** The requests whose work it discards, each marked in the journal. */
  requests: string[];
}

/** The pauses of a running server, and the one timer that ends those given an end. */
export class HookPauses {
  readonly #p: PauseParts;
  readonly #now: () => number;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #stopped = false;

  constructor(parts: PauseParts) {
    this.#p = parts;
    this.#now = parts.now ?? Date.now;
  }

  /** Arms the timer for the pauses on record (a pause whose end passed while the server was down ends now). */
  start(): void {
    this.#arm();
  }

  /** Stops the timer; the pauses stay on record. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** `pause HOOK [--for S]`: from now on the hook's work waits; pausing a paused hook sets its end anew. */
  async pause(args: unknown): Promise<Pause & { again: boolean }> {
    const { hook, forSeconds } = _pauseArgs(args);
    if (!this.#p.hooks().includes(hook) && this.#p.store.paused(hook) === null) {
      throw new HttpError(
        404,
        ErrorCode.UnknownHook,
        `no hook named ${JSON.stringify(hook)}: a mapping's id, agent or wake (${this.#p.hooks().join(', ')})`,
      );
    }
    const again = this.#p.store.paused(hook) !== null;
    const now = this.#now();
    const since = this.#p.store.paused(hook)?.since ?? new Date(now).toISOString();
    const pause: Pause = {
      hook,
      since,
      ...(forSeconds === undefined ? {} : { until: new Date(now + forSeconds * 1000).toISOString() }),
    };
    await this.#p.store.commit({ pause: [pause] });
    this.#p.log.info('hook paused', { hook, ...(pause.until === undefined ? {} : { until: pause.until }) });
    this.#arm();
    return { ...pause, again };
  }

  /** `resume HOOK` or `resume --all`: the hooks' runs may start, their held wakes join, their outbox entries go. */
  async resume(args: unknown): Promise<{ resumed: PausedHook[] }> {
    const which = _resumeArgs(args);
    const hooks = which === null ? this.#p.store.pauses().map((p) => p.hook) : [which];
    if (which !== null) this.#paused(which);
    return { resumed: await this.#resume(hooks, 'resumed') };
  }

  /** `drop HOOK [--yes]`: what a paused hook holds, discarded (or, as a dry run, the plan). */
  async drop(args: unknown): Promise<DropOutcome> {
    const { hook, dryRun } = _dropArgs(args);
    this.#paused(hook);
    const runs = this.#p.runner.waiting().filter((r) => workHook(r, 'agent') === hook);
    const held = this.#p.store.held(hook);
    const outbox = this.#pendingOutbox(hook);
    const requests = [
      ...new Set([...runs, ...held, ...outbox].flatMap((x) => (x.requestId === undefined ? [] : [x.requestId]))),
    ];
    const plan = {
      hook,
      runs: runs.map((r) => r.runId),
      wakes: held.length,
      outbox: outbox.map((e) => e.id),
      requests,
    };
    if (dryRun) return { ...plan, dryRun };
    // Taken out of the queue and recorded with no await between: a resume cannot start them meanwhile.
    const taken = this.#p.runner.take(plan.runs);
    const time = new Date(this.#now()).toISOString();
    const why = `dropped while hook ${hook} was paused`;
    try {
      await this.#p.store.commit({
        runUpdates: taken.map((r) => ({ runId: r.runId, status: 'dropped', finishedAt: time, error: why })),
        dropHeld: held.map((h) => h.id),
        outboxUpdates: outbox.map((e) => ({ id: e.id, state: 'dropped', lastError: why })),
        drops: requests.map((requestId) => ({ requestId, hook, time })),
      });
    } catch (error) {
      for (const run of taken) this.#p.runner.enqueue(run);
      throw error;
    }
    this.#p.log.warn('paused hook dropped', { hook, runs: taken.length, wakes: held.length, outbox: outbox.length });
    return { ...plan, runs: taken.map((r) => r.runId), dryRun };
  }

  /** Every paused hook with what it holds, in the order they were paused. */
  list(): PausedHook[] {
    const waiting = this.#p.runner.waiting();
    return this.#p.store.pauses().map((pause) => {
      const runs = waiting.filter((r) => workHook(r, 'agent') === pause.hook);
      const held = this.#p.store.held(pause.hook);
      const outbox = this.#pendingOutbox(pause.hook);
      const times = [
        ...runs.map((r) => r.acceptedAt),
        ...held.map((h) => h.heldAt),
        ...outbox.map((e) => e.acceptedAt),
      ];
      const oldest = times.sort()[0];
      return {
        ...pause,
        runs: runs.length,
        wakes: held.length,
        outbox: outbox.length,
        ...(oldest === undefined ? {} : { oldest }),
      };
    });
  }

  /** The hooks of the configuration and those paused (one a reload removed may still be), each paused one with what it holds. */
  hooks(): { hook: string; paused?: PausedHook }[] {
    const paused = new Map(this.list().map((p) => [p.hook, p]));
    const names = [...new Set([...this.#p.hooks(), ...paused.keys()])];
    return names.map((hook) => (paused.has(hook) ? { hook, paused: paused.get(hook)! } : { hook }));
  }

  #paused(hook: string): void {
    if (this.#p.store.paused(hook) === null) {
      throw new HttpError(409, ErrorCode.NotPaused, `hook ${JSON.stringify(hook)} is not paused`);
    }
  }

  #pendingOutbox(hook: string): OutboxEntry[] {
    return this.#p.store.outbox().filter((e) => e.state === 'pending' && workHook(e, e.target) === hook);
  }

  // One line ends the pauses and lets the held wakes join; then the queue, the outbox and the heartbeat are told.
  async #resume(hooks: readonly string[], how: string): Promise<PausedHook[]> {
    if (hooks.length === 0) return [];
    const held = this.list().filter((p) => hooks.includes(p.hook));
    const committed = await this.#p.store.commit({ resume: [...hooks] });
    for (const p of held) {
      this.#p.log.info(`hook ${how}`, { hook: p.hook, runs: p.runs, wakes: p.wakes, outbox: p.outbox });
    }
    this.#p.runner.recheck();
    this.#p.forwarded?.();
    if (committed.events.some((e) => e.mode === 'now')) this.#p.heartbeat.request('resume');
    this.#arm();
    return held;
  }

  // One timer, for the earliest end; a pause past its end is resumed when it fires.
  #arm(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#stopped) return;
    const ends = this.#p.store.pauses().flatMap((p) => (p.until === undefined ? [] : [Date.parse(p.until)]));
    if (ends.length === 0) return;
    // setTimeout fires at once past 2^31-1 ms: a later end is waited for in slices.
    const delay = Math.min(Math.max(0, Math.min(...ends) - this.#now()), 2 ** 31 - 1);
    this.#timer = setTimeout(() => void this.#expire(), delay);
    this.#timer.unref?.();
  }

  async #expire(): Promise<void> {
    this.#timer = null;
    const now = this.#now();
    const ended = this.#p.store.pauses().filter((p) => p.until !== undefined && Date.parse(p.until) <= now);
    try {
      if (ended.length > 0) await this.#resume(ended.map((p) => p.hook), 'pause ended');
      else this.#arm();
    } catch (error) {
      // The journal could not take the line: the pause stands, and the timer tries again shortly.
      this.#p.log.error('pause not ended', { error: String(error) });
      if (!this.#stopped) this.#timer = setTimeout(() => void this.#expire(), 1_000);
      this.#timer?.unref?.();
    }
  }
}

function _fields(args: unknown): Record<string, unknown> {
  return typeof args === 'object' && args !== null ? (args as Record<string, unknown>) : {};
}

function _hook(fields: Record<string, unknown>): string {
  const hook = fields['hook'];
  if (typeof hook !== 'string' || hook.trim() === '' || hook.length > 256) {
    throw new HttpError(400, ErrorCode.ControlBadRequest, 'hook: must be a hook name (a mapping id, agent or wake)');
  }
  return hook;
}

function _pauseArgs(args: unknown): { hook: string; forSeconds?: number } {
  const fields = _fields(args);
  const hook = _hook(fields);
  const seconds = fields['forSeconds'];
  if (seconds === undefined) return { hook };
  if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds < 1 || seconds > MAX_PAUSE_SECONDS) {
    throw new HttpError(
      400,
      ErrorCode.ControlBadRequest,
      `forSeconds: must be a whole number of seconds from 1 to ${MAX_PAUSE_SECONDS}`,
    );
  }
  return { hook, forSeconds: seconds };
}

// The hook named, or `null` for every paused one.
function _resumeArgs(args: unknown): string | null {
  const fields = _fields(args);
  if (fields['all'] === true && fields['hook'] === undefined) return null;
  return _hook(fields);
}

function _dropArgs(args: unknown): { hook: string; dryRun: boolean } {
  const fields = _fields(args);
  return { hook: _hook(fields), dryRun: fields['dryRun'] !== false };
}
