import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { AgentConfig, Config } from '../config/types.ts';
import type { Deliver } from '../delivery/adapter.ts';
import type { Logger } from '../log.ts';
import { retry, type RetryOptions } from '../retry.ts';
import type { DeliveryOutcome, RunRecord, Store } from '../store/store.ts';
import type { Transcripts } from '../store/transcripts.ts';
import { resolveModel } from '../policy/models.ts';
import { isGeneratedKey } from '../policy/session-key.ts';
import { isAck } from './ack.ts';
import type { ChatMessage, Provider } from './providers/provider.ts';

/** The main session's transcript key: heartbeat turns continue it. */
export const MAIN_SESSION = 'main';

/** How long a summary line may be before it is cut. */
export const SUMMARY_MAX = 300;

export interface RunnerOptions {
  store: Store;
  config: Config;
  /** The model API for a provider id, or `null` when none is configured. */
  providerFor: (providerId: string) => Provider | null;
  transcripts: Transcripts;
  heartbeat: { request(reason: string): void };
  log: Logger;
  /** Without it, replies are recorded with the route they asked for and not sent. */
  deliver?: Deliver;
  now?: () => number;
  /** Reads a workspace file (AGENTS.md, HEARTBEAT.md); `null` when it is absent. */
  readText?: (path: string) => Promise<string | null>;
  /** Backoff settings for model calls; tests shorten them. */
  retry?: Partial<Pick<RetryOptions, 'baseDelayMs' | 'maxDelayMs' | 'maxAttempts' | 'sleep' | 'random'>>;
}

/** A turn's outcome: the reply, or why there is none. */
type TurnOutcome =
  | { status: 'ok'; reply: string; calls: number; model: string }
  | { status: 'error' | 'timeout'; error: string; calls: number; model?: string }
  | { status: 'stopped' };

/**
 * Executes accepted runs: at most `maxConcurrent` at once, the runs of one session key one after
 * another, each bounded by its time limit. Every finished run leaves a summary in the main session
 * in the same journal line that marks it finished, so none is summarised (or run) twice.
 */
export class Runner {
  #o: RunnerOptions;
  readonly #now: () => number;
  readonly #readText: (path: string) => Promise<string | null>;
  #queue: RunRecord[] = [];
  #busySessions = new Set<string>();
  #active = new Map<string, Promise<void>>();
  #stopping = new AbortController();
  #beat: Promise<void> | null = null;
  #beatAgain = false;
  // Deliveries run beside the queue (a slow platform never holds a run slot); stop() waits for them.
  #deliveries = new Set<Promise<void>>();

  constructor(options: RunnerOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#readText = options.readText ?? _readText;
  }

  /** Takes a reloaded configuration: runs that start from now on use it. */
  reconfigure(changes: Pick<RunnerOptions, 'config' | 'providerFor' | 'deliver'>): void {
    this.#o = { ...this.#o, ...changes };
  }

  /** Runs waiting plus runs executing: what the queue bound counts. */
  get depth(): number {
    return this.#queue.length + this.#active.size;
  }

  /** Replies being delivered in the background. */
  get deliveriesInFlight(): number {
    return this.#deliveries.size;
  }

  /** Picks up the runs a previous process accepted and did not finish, and replies it did not deliver. */
  start(): void {
    for (const run of this.#o.store.runs()) {
      if (run.status === 'pending' || run.status === 'running') this.enqueue(run);
      else if (run.status === 'ok' && run.deliver && run.delivery === undefined && run.reply !== undefined) this.#deliverLater(run, run.reply);
    }
  }

  /** Queues an accepted run. */
  enqueue(run: RunRecord): void {
    this.#queue.push(run);
    this.#pump();
  }

  /** Stops: runs in progress are abandoned as they are and resume after a restart. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    this.#queue = [];
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
        await this.#heartbeatOnce().catch((error: unknown) => this.#o.log.error('heartbeat turn failed', { error: String(error) }));
      } while (this.#beatAgain && !this.#stopping.signal.aborted);
    })().finally(() => {
      this.#beat = null;
    });
    return this.#beat;
  }

  #pump(): void {
    while (this.#active.size < this.#o.config.agents.maxConcurrent && !this.#stopping.signal.aborted) {
      const i = this.#queue.findIndex((r) => !this.#busySessions.has(r.sessionKey));
      if (i === -1) return;
      const [run] = this.#queue.splice(i, 1) as [RunRecord];
      this.#busySessions.add(run.sessionKey);
      const work = this.#execute(run)
        .catch((error: unknown) => this.#fail(run, error))
        .finally(() => {
          this.#active.delete(run.runId);
          this.#busySessions.delete(run.sessionKey);
          this.#pump();
        });
      this.#active.set(run.runId, work);
    }
  }

  async #execute(run: RunRecord): Promise<void> {
    const { store, config, log } = this.#o;
    const resumed = run.status === 'running' || run.attempts > 0;
    await store.commit({
      runUpdates: [{ runId: run.runId, status: 'running', attempts: run.attempts + 1, startedAt: this.#iso(), ...(resumed ? { retry: true } : {}) }],
    });
    const agent = this.#agent(run.agentId);
    // A generated key is never used again, so its turns are neither read nor kept.
    const isolated = isGeneratedKey(run.sessionKey);
    const history = isolated ? [] : await this.#o.transcripts.history(run.sessionKey, config.agents.historyMaxChars);
    const outcome = await this.#turn({
      agent,
      model: run.model ?? agent.model ?? config.agents.model ?? undefined,
      history,
      prompt: run.message,
      timeoutMs: (run.timeoutSeconds ?? config.agents.timeoutSeconds) * 1000,
      thinking: run.thinking,
      ids: { runId: run.runId, sessionKey: run.sessionKey, agentId: agent.id },
    });
    if (outcome.status === 'stopped') return; // left `running`: the next process resumes it
    if (outcome.status === 'ok' && !isolated) {
      await this.#o.transcripts.append(run.sessionKey, [
        { role: 'user', content: run.message },
        { role: 'assistant', content: outcome.reply },
      ]);
    }
    const name = run.name;
    const summary =
      outcome.status === 'ok' ? `Hook ${name}: ${_summarise(outcome.reply)}` : `Hook ${name} (${outcome.status}): ${_summarise(outcome.error)}`;
    await store.commit({
      events: [{ kind: 'system', text: summary, source: `run:${run.runId}`, mode: run.wakeMode }],
      runUpdates: [
        {
          runId: run.runId,
          status: outcome.status,
          finishedAt: this.#iso(),
          calls: outcome.calls,
          ...(outcome.model === undefined ? {} : { model: outcome.model }),
          ...(outcome.status === 'ok' ? { reply: outcome.reply } : { error: outcome.error }),
        },
      ],
    });
    log.info('run finished', { runId: run.runId, requestId: run.requestId, status: outcome.status, calls: outcome.calls });
    if (run.wakeMode === 'now') this.#o.heartbeat.request(`hook:${name}`);
    if (outcome.status === 'ok' && run.deliver) this.#deliverLater(run, outcome.reply);
  }

  // Something broke outside the model call (a corrupt transcript, a throwing provider factory):
  // the run ends `error` with a summary rather than staying `running` to fail again after a restart.
  async #fail(run: RunRecord, error: unknown): Promise<void> {
    this.#o.log.error('run failed unexpectedly', { runId: run.runId, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    if (this.#stopping.signal.aborted) return;
    const reason = `internal error: ${error instanceof Error ? error.message : String(error)}`;
    await this.#o.store
      .commit({
        events: [{ kind: 'system', text: `Hook ${run.name} (error): ${_summarise(reason)}`, source: `run:${run.runId}`, mode: run.wakeMode }],
        runUpdates: [{ runId: run.runId, status: 'error', finishedAt: this.#iso(), error: reason }],
      })
      .catch((e: unknown) => this.#o.log.error('run outcome not recorded', { runId: run.runId, error: String(e) }));
  }

  #deliverLater(run: RunRecord, reply: string): void {
    const work: Promise<void> = this.#deliverRun(run, reply)
      .catch((error: unknown) => this.#o.log.error('delivery failed unexpectedly', { runId: run.runId, error: String(error) }))
      .finally(() => this.#deliveries.delete(work));
    this.#deliveries.add(work);
  }

  async #deliverRun(run: RunRecord, reply: string): Promise<void> {
    const { store } = this.#o;
    let delivery: DeliveryOutcome;
    if (isAck(reply, this.#o.config.agents.heartbeat.ackMaxChars)) delivery = { status: 'skipped', reason: 'the reply is only an acknowledgment' };
    else if (this.#o.deliver === undefined) delivery = { status: 'skipped', reason: 'no delivery is configured' };
    else {
      const request = { channel: run.channel, ...(run.to === undefined ? {} : { to: run.to }), text: reply, signal: this.#stopping.signal };
      delivery = await this.#o.deliver(request);
      // A failure during a stop may be the stop itself: nothing is recorded, so the next process tries again.
      if (this.#stopping.signal.aborted && delivery.status === 'failed') return;
    }
    const events =
      delivery.status === 'failed'
        ? [{ kind: 'system' as const, text: `Hook ${run.name}: delivery to ${delivery.channel} failed: ${_summarise(delivery.reason)}`, source: `run:${run.runId}` }]
        : [];
    await store.commit({ events, runUpdates: [{ runId: run.runId, delivery }], ...(delivery.status === 'delivered' ? { lastRoute: _route(delivery) } : {}) });
    this.#o.log.info('run delivery', { runId: run.runId, requestId: run.requestId, status: delivery.status, ...('channel' in delivery ? { channel: delivery.channel } : {}) });
  }

  async #heartbeatOnce(): Promise<void> {
    const { store, config } = this.#o;
    const consumed = store.consumedThrough();
    const pending = store.events().filter((e) => e.seq > consumed && e.kind === 'system');
    // Taken together with `pending`: an event that arrives later is not in this prompt, so it stays unconsumed.
    const through = store.events().at(-1)?.seq ?? consumed;
    const agent = this.#agent(config.agents.defaultAgentId);
    const checklist = agent.workspace === undefined ? null : await this.#readText(join(this.#workspace(agent)!, 'HEARTBEAT.md'));
    // Nothing new and no standing checklist: no reason to spend a model call.
    if (pending.length === 0 && checklist === null) return;
    const prompt = [
      config.agents.heartbeat.prompt,
      ...(checklist === null ? [] : [`Checklist (HEARTBEAT.md):\n${checklist.trim()}`]),
      ...(pending.length === 0 ? ['No new system events.'] : pending.map((e) => `System event (${e.time}):\n${e.text}`)),
    ].join('\n\n');
    const outcome = await this.#turn({
      agent,
      model: agent.model ?? config.agents.model ?? undefined,
      history: await this.#o.transcripts.history(MAIN_SESSION, config.agents.historyMaxChars),
      prompt,
      timeoutMs: config.agents.timeoutSeconds * 1000,
      ids: { runId: `heartbeat-${through}`, sessionKey: MAIN_SESSION, agentId: agent.id },
    });
    if (outcome.status === 'stopped') return;
    if (outcome.status !== 'ok') {
      // The events stay unconsumed, so the next heartbeat reads them again.
      await store.commit({ events: [{ kind: 'system', text: `Heartbeat (${outcome.status}): ${_summarise(outcome.error)}`, source: 'heartbeat' }] });
      return;
    }
    const ack = isAck(outcome.reply, config.agents.heartbeat.ackMaxChars);
    await this.#o.transcripts.append(MAIN_SESSION, [
      { role: 'user', content: prompt },
      { role: 'assistant', content: outcome.reply },
    ]);
    await store.commit({ events: [{ kind: 'reply', text: outcome.reply, source: 'heartbeat', ack }], consumedThrough: through });
    if (ack || this.#o.deliver === undefined) return;
    const { target, to } = config.agents.heartbeat;
    const delivery = await this.#o.deliver({ channel: target, ...(to === undefined ? {} : { to }), text: outcome.reply, signal: this.#stopping.signal });
    if (delivery.status === 'delivered') await store.commit({ lastRoute: _route(delivery) });
    if (delivery.status === 'failed') {
      await store.commit({ events: [{ kind: 'system', text: `Heartbeat reply: delivery to ${delivery.channel} failed: ${_summarise(delivery.reason)}`, source: 'heartbeat' }] });
    }
  }

  async #turn(turn: {
    agent: AgentConfig;
    model: string | undefined;
    history: ChatMessage[];
    prompt: string;
    timeoutMs: number;
    thinking?: RunRecord['thinking'];
    ids: { runId: string; sessionKey: string; agentId: string };
  }): Promise<TurnOutcome> {
    const resolved = this.#resolveModel(turn.model);
    if (typeof resolved === 'string') return { status: 'error', error: resolved, calls: 0 };
    const provider = this.#o.providerFor(resolved.provider);
    if (provider === null) return { status: 'error', error: `provider "${resolved.provider}" is not configured (models.providers)`, calls: 0, model: resolved.key };
    const workspace = this.#workspace(turn.agent);
    const agentsMd = workspace === undefined ? null : await this.#readText(join(workspace, 'AGENTS.md'));
    const system = [turn.agent.systemPrompt, agentsMd].filter((s): s is string => typeof s === 'string' && s.trim() !== '').join('\n\n');

    const bound = new AbortController();
    // setTimeout fires at once past 2^31-1 ms, so a longer bound is cut to that (24.8 days).
    const timer = setTimeout(() => bound.abort(), Math.min(turn.timeoutMs, 2 ** 31 - 1));
    const signal = AbortSignal.any([bound.signal, this.#stopping.signal]);
    let calls = 0;
    try {
      const result = await retry(
        () => {
          calls++;
          return provider.complete({
            model: resolved.model,
            system,
            history: turn.history,
            prompt: turn.prompt,
            ...(turn.thinking === undefined ? {} : { thinking: turn.thinking }),
            signal,
            run: { ...turn.ids, ...(workspace === undefined ? {} : { workspace }) },
          });
        },
        { maxAttempts: 6, baseDelayMs: 1_000, maxDelayMs: 30_000, ...this.#o.retry, deadline: this.#now() + turn.timeoutMs, now: this.#now, signal },
      );
      if (this.#stopping.signal.aborted) return { status: 'stopped' };
      if (bound.signal.aborted) return { status: 'timeout', error: `no reply within ${turn.timeoutMs / 1000} s`, calls, model: resolved.key };
      if (!result.ok) return { status: 'error', error: result.message, calls, model: resolved.key };
      return { status: 'ok', reply: result.value.trim(), calls, model: resolved.key };
    } finally {
      clearTimeout(timer);
    }
  }

  // `provider/model` or an alias from agents.defaults.models.
  #resolveModel(model: string | undefined): { key: string; provider: string; model: string } | string {
    if (model === undefined) return 'no model is configured (set agents.defaults.model or the agent\'s model)';
    return resolveModel(model, this.#o.config.agents.models) ?? `model "${model}" is neither "provider/model" nor a known alias`;
  }

  #agent(agentId: string): AgentConfig {
    const { list, defaultAgentId } = this.#o.config.agents;
    return list.find((a) => a.id === agentId) ?? list.find((a) => a.id === defaultAgentId) ?? { id: agentId, default: true };
  }

  #workspace(agent: AgentConfig): string | undefined {
    return agent.workspace === undefined ? undefined : resolve(this.#o.config.dir, agent.workspace);
  }

  #iso(): string {
    return new Date(this.#now()).toISOString();
  }
}

function _route(delivered: { channel: string; to: string }): { channel: string; to: string } {
  return { channel: delivered.channel, to: delivered.to };
}

/** A reply or reason on one line, cut to a bounded length. */
function _summarise(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > SUMMARY_MAX ? `${line.slice(0, SUMMARY_MAX - 1)}…` : line || '(empty reply)';
}

async function _readText(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return null;
  }
}
