// What a run, turn or delivery works with (options, clock, stop signal); summaries, agent and workspace.

import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { AgentConfig, Config } from '../config/types.ts';
import type { Deliver } from '../delivery/adapter.ts';
import type { Logger } from '../log.ts';
import type { Alerts } from '../model/alerts.ts';
import type { RetryOptions } from '../retry.ts';
import type { Store } from '../store/journal/store.ts';
import { clipLine } from '../text.ts';
import { wrapUntrusted } from '../untrusted/wrap.ts';
import type { RunSpec } from '../model/actions.ts';
import type { StartRule } from './can-start.ts';
import type { Transcripts } from '../store/journal/transcripts.ts';
import type { Provider } from './providers/provider.ts';

export interface RunnerOptions {
  store: Store;
  config: Config;
  /** The model API for a provider id, or `null` when none is configured (a registry imports its module on first use). */
  providerFor: (providerId: string) => Provider | null | Promise<Provider | null>;
  transcripts: Transcripts;
  heartbeat: { request(reason: string): void };
  log: Logger;
  /** Without it, replies are recorded with the route they asked for and not sent. */
  deliver?: Deliver;
  now?: () => number;
  /** Reads a workspace file (AGENTS.md, HEARTBEAT.md); `null` when it is absent. */
  readText?: (path: string) => Promise<string | null>;
  /** The owner's alerts, told of failed runs and failed deliveries. */
  alerts?: Alerts;
  /** Rules a waiting run must pass to start, after its session's and its hook's lane (can-start.ts). */
  rules?: readonly StartRule[];
  /** The completion callbacks' sender, told when a run's end wrote one to the journal. */
  callbacks?: { kick(): void };
  /** Backoff settings for model calls; tests shorten them. */
  retry?: Partial<Pick<RetryOptions, 'baseDelayMs' | 'maxDelayMs' | 'maxAttempts' | 'sleep' | 'random'>>;
}

/** What one run, turn, delivery or heartbeat works with: the options of the moment, a clock, and the stop signal. */
export interface RuntimeContext extends RunnerOptions {
  now: () => number;
  readText: (path: string) => Promise<string | null>;
  /** Aborted when the runtime stops. */
  stopping: AbortSignal;
}

/** How long a summary line may be before it is cut. */
export const SUMMARY_MAX = 300;

/**
 * The main session's line about a run: `Hook <name><detail>`. A name the request chose that is not
 * a plain label (the run's `untrustedName`) stays out of the line and follows it, wrapped as
 * untrusted content, so the model that reads the main session takes it as data.
 */
export function hookLine(run: Pick<RunSpec, 'name' | 'untrustedName'>, detail: string): string {
  if (run.untrustedName !== true) return `Hook ${run.name}${detail}`;
  return `Hook (named by the request, below)${detail}\n${wrapUntrusted(run.name, { source: 'Hook name' })}`;
}

/** A reply or reason on one line, cut to a bounded length. */
export function summarise(text: string): string {
  return clipLine(text, SUMMARY_MAX) || '(empty reply)';
}

/** The configured agent, else the default one, else a bare agent of that id. */
export function agentOf(config: Config, agentId: string): AgentConfig {
  const { list, defaultAgentId } = config.agents;
  return list.find((a) => a.id === agentId) ?? list.find((a) => a.id === defaultAgentId) ??
    { id: agentId, default: true };
}

/** The agent's workspace, resolved against the config directory. */
export function workspaceOf(config: Config, agent: AgentConfig): string | undefined {
  return agent.workspace === undefined ? undefined : resolve(config.dir, agent.workspace);
}

/** The context's clock as an ISO timestamp. */
export function isoNow(ctx: Pick<RuntimeContext, 'now'>): string {
  return new Date(ctx.now()).toISOString();
}

/** Reads a file, `null` when it cannot be read. */
export async function readText(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return null;
  }
}
