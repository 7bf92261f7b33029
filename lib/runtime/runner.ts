// The run queue: concurrency, one run at a time per session key, heartbeat turns one at a time, deliveries
// beside the queue.

import type { DeliveryOutcome, NoticeRecord, RunRecord } from '../model/records.ts';
import { readText, type RunnerOptions, type RuntimeContext } from './context.ts';
import { heartbeatTurn } from './heartbeat-turn.ts';
import { deliverNotice } from './notice.ts';
import { deliverReply } from './reply.ts';
import { redeliverReply } from './redeliver.ts';
import { executeRun, failRun } from './run.ts';
import { canStart, type QueueView, sessionFree, type StartRule } from './can-start.ts';
import { laneFree } from './lane.ts';
import { windowClosed } from './coalesce-wait.ts';
import { notBefore } from './not-before.ts';
import { type HookLoad, HookLoads } from './hook-load.ts';
import { workHook } from '../model/work-hook.ts';
import { type HookStatus, hookStatuses } from '../model/hook-status.ts';

/**
 * The run queue: at most `maxConcurrent` runs at once, the runs of one session key one after
 * another, heartbeat turns one at a time, and deliveries beside the queue. What a run, a turn or a
 * delivery does is in run.ts, heartbeat-turn.ts and reply.ts.
 */
export class Runner {
  #o: RunnerOptions;
  readonly #now: () => number;
  readonly #readText: (path: string) => Promise<string | null>;
  #queue: RunRecord[] = [];
  #busySessions = new Set<string>();
  #active = new Map<string, Promise<void>>();
  #loads = new HookLoads();
  // What a waiting run must pass to start: its session free, its hook's lane not full, then the rules handed in.
  readonly #rules: readonly StartRule[];
  // The one timer that asks the queue again when the earliest timed wait (a rule's `until`) ends.
  #timer: ReturnType<typeof setTimeout> | null = null;
  #timerAt = Infinity;
  #stopping = new AbortController();
  #beat: Promise<void> | null = null;
  #beatAgain = false;
  // Deliveries run beside the queue (a slow platform never holds a run slot); stop() waits for them.
  #deliveries = new Set<Promise<void>>();

  constructor(options: RunnerOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#readText = options.readText ?? readText;
    this.#rules = [sessionFree, laneFree, windowClosed(options.store), notBefore, ...(options.rules ?? [])];
  }

  /** Takes a reloaded configuration: runs that start from now on use it, and a wider lane or queue starts waiting runs now. */
  reconfigure(changes: Pick<RunnerOptions, 'config' | 'providerFor' | 'deliver'>): void {
    this.#o = { ...this.#o, ...changes };
    this.#pump();
  }

  /** Runs waiting plus runs executing: what the queue bound counts. */
  get depth(): number {
    return this.#queue.length + this.#active.size;
  }

  /** Runs of one work hook waiting plus executing: what its `maxQueued` counts. */
  depthOf(hook: string): number {
    return this.#loads.depthOf(hook);
  }

  /** Every work hook with runs waiting or executing, and how many of each. */
  hookLoads(): Map<string, HookLoad> {
    return this.#loads.snapshot();
  }

  /** Each hook of the configuration of this moment with its runs and its lane (status, /metrics, the inspector). */
  hookStatus(): HookStatus[] {
    return hookStatuses(this.#o.config.hooks, this.#loads.snapshot(), this.#o.store.openWindows());
  }

  /** Asks the queue again whether a waiting run may start (a rule's state changed: a hook resumed, say). */
  recheck(): void {
    this.#pump();
  }

  /** Picks up the runs a previous process accepted and did not finish, and replies it did not deliver. */
  start(): void {
    for (const run of this.#o.store.runs()) {
      if (run.status === 'pending' || run.status === 'running') this.enqueue(run);
      else if (run.status === 'ok' && run.deliver && run.delivery === undefined && run.reply !== undefined) {
        this.#deliverLater(run, run.reply);
      }
    }
    for (const notice of this.#o.store.notices()) if (notice.status === 'pending') this.notify(notice);
  }

  /** Queues an accepted run. */
  enqueue(run: RunRecord): void {
    this.#queue.push(run);
    this.#loads.queued(workHook(run, 'agent'));
    this.#pump();
  }

  /** The runs waiting to start, in the order they start (those of a paused hook among them). */
  waiting(): readonly RunRecord[] {
    return this.#queue;
  }

  /**
   * Takes these runs out of the queue, unless they have started: returns the ones taken, which
   * will not run (`hooks-ingress drop`); `enqueue` puts one back.
   */
  take(runIds: readonly string[]): RunRecord[] {
    const ids = new Set(runIds);
    const taken = this.#queue.filter((r) => ids.has(r.runId));
    if (taken.length > 0) this.#queue = this.#queue.filter((r) => !ids.has(r.runId));
    for (const run of taken) this.#loads.left(workHook(run, 'agent'));
    return taken;
  }

  /** Sends a notify mapping's delivery beside the queue: it takes no run slot and makes no model call. */
  notify(notice: NoticeRecord): void {
    if (this.#stopping.signal.aborted) return;
    this.#beside(deliverNotice(this.#context(), notice), { deliveryId: notice.deliveryId });
  }

  /** Sends a finished run's stored reply again beside the queue, with no model call (`runs redeliver`). */
  redeliver(run: RunRecord, reply: string): Promise<DeliveryOutcome> {
    const sent = redeliverReply(this.#context(), run, reply);
    this.#beside(sent.then(() => undefined), { runId: run.runId });
    return sent;
  }

  /** Stops: runs in progress are abandoned as they are and resume after a restart. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    this.#queue = [];
    this.#loads.dropQueued();
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await Promise.allSettled([...this.#active.values(), ...this.#deliveries, this.#beat]);
  }

  /** Runs one heartbeat turn now (after the one in progress, if any). */
  heartbeatTurn(): Promise<void> {
    if (this.#stopping.signal.aborted) return Promise.resolve();
    if (this.#beat !== null) {
      this.#beatAgain = true;
      return this.#beat;
    }
    this.#beat = (async () => {
      do {
        this.#beatAgain = false;
        await heartbeatTurn(this.#context()).catch((error: unknown) =>
          this.#o.log.error('heartbeat turn failed', { error: String(error) })
        );
      } while (this.#beatAgain && !this.#stopping.signal.aborted);
    })().finally(() => {
      this.#beat = null;
    });
    return this.#beat;
  }

  // The options of this moment: a run keeps the configuration it started with.
  #context(): RuntimeContext {
    return { ...this.#o, now: this.#now, readText: this.#readText, stopping: this.#stopping.signal };
  }

  // Starts waiting runs, oldest first, while slots are free: a run a rule holds is passed over, so
  // one hook's full lane never holds back another hook's runs behind it (and since a lane holds all
  // of its hook's runs alike, each hook's runs still start in order).
  #pump(): void {
    while (this.#active.size < this.#o.config.agents.maxConcurrent && !this.#stopping.signal.aborted) {
      const i = this.#next();
      if (i === -1) return;
      const [run] = this.#queue.splice(i, 1) as [RunRecord];
      this.#begin(run);
    }
  }

  // The first waiting run every rule lets start, else -1 (with the timer armed for the earliest timed wait).
  #next(): number {
    const view: QueueView = {
      config: this.#o.config,
      now: this.#now(),
      busySessions: this.#busySessions,
      running: this.#loads.running,
    };
    let earliest = Infinity;
    for (let i = 0; i < this.#queue.length; i++) {
      const run = this.#queue[i]!;
      const wait = canStart(this.#rules, run, workHook(run, 'agent'), view);
      if (wait === null) return i;
      if (wait.until !== undefined && wait.until < earliest) earliest = wait.until;
    }
    this.#arm(earliest);
    return -1;
  }

  #arm(at: number): void {
    if (at === Infinity || (this.#timer !== null && this.#timerAt <= at)) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#timerAt = Infinity;
      this.#pump();
    }, Math.max(0, at - this.#now()));
    this.#timer.unref?.();
  }

  #begin(queued: RunRecord): void {
    // A coalesced run starts as its window left it: the requests that joined it are in the store's record.
    const run = queued.coalesce === undefined ? queued : (this.#o.store.run(queued.runId) ?? queued);
    const hook = workHook(run, 'agent');
    this.#busySessions.add(run.sessionKey);
    this.#loads.started(hook);
    const ctx = this.#context();
    const work = executeRun(ctx, run)
      .then((reply) => {
        if (reply !== null) this.#deliverLater(run, reply);
      })
      .catch((error: unknown) => failRun(ctx, run, error))
      .finally(() => {
        this.#active.delete(run.runId);
        this.#busySessions.delete(run.sessionKey);
        this.#loads.finished(hook);
        this.#pump();
      });
    this.#active.set(run.runId, work);
  }

  #deliverLater(run: RunRecord, reply: string): void {
    this.#beside(deliverReply(this.#context(), run, reply), { runId: run.runId });
  }

  // A delivery under way beside the queue, which stop() waits for.
  #beside(delivery: Promise<void>, ids: Record<string, string>): void {
    const work: Promise<void> = delivery
      .catch((error: unknown) => this.#o.log.error('delivery failed unexpectedly', { ...ids, error: String(error) }))
      .finally(() => this.#deliveries.delete(work));
    this.#deliveries.add(work);
  }
}
