// One model turn: model resolution (policy/models.ts), AGENTS.md, the time bound, retries.

import { join } from 'node:path';
import type { AgentConfig } from '../config/types.ts';
import { resolveModel } from '../policy/models.ts';
import { retry } from '../retry.ts';
import type { RunRecord } from '../model/records.ts';
import { type RuntimeContext, workspaceOf } from './context.ts';
import type { ChatMessage, Provider } from './providers/provider.ts';

/** One model turn to take: who answers, with what, within how long. */
export interface Turn {
  agent: AgentConfig;
  model: string | undefined;
  history: ChatMessage[];
  prompt: string;
  timeoutMs: number;
  thinking?: RunRecord['thinking'];
  ids: { runId: string; sessionKey: string; agentId: string };
}

/** A turn's outcome: the reply, or why there is none. */
export type TurnOutcome =
  | { status: 'ok'; reply: string; calls: number; model: string }
  | { status: 'error' | 'timeout'; error: string; calls: number; model?: string }
  | { status: 'stopped' };

/** Calls the model for one turn, retrying retryable failures within the turn's time bound. */
export async function takeTurn(ctx: RuntimeContext, turn: Turn): Promise<TurnOutcome> {
  const found = await _provider(ctx, turn);
  if ('status' in found) return found;
  const { resolved, provider } = found;
  const workspace = workspaceOf(ctx.config, turn.agent);
  const agentsMd = workspace === undefined ? null : await ctx.readText(join(workspace, 'AGENTS.md'));
  const system = [turn.agent.systemPrompt, agentsMd].filter((s): s is string =>
    typeof s === 'string' && s.trim() !== ''
  ).join('\n\n');

  const bound = new AbortController();
  // setTimeout fires at once past 2^31-1 ms, so a longer bound is cut to that (24.8 days).
  const timer = setTimeout(() => bound.abort(), Math.min(turn.timeoutMs, 2 ** 31 - 1));
  const signal = AbortSignal.any([bound.signal, ctx.stopping]);
  let calls = 0;
  try {
    const request = {
      model: resolved.model,
      system,
      history: turn.history,
      prompt: turn.prompt,
      ...(turn.thinking === undefined ? {} : { thinking: turn.thinking }),
      signal,
      run: { ...turn.ids, ...(workspace === undefined ? {} : { workspace }) },
    };
    const result = await retry(
      () => {
        calls++;
        return provider.complete(request);
      },
      {
        maxAttempts: 6,
        baseDelayMs: 1_000,
        maxDelayMs: 30_000,
        ...ctx.retry,
        deadline: ctx.now() + turn.timeoutMs,
        now: ctx.now,
        signal,
      },
    );
    if (ctx.stopping.aborted) return { status: 'stopped' };
    if (bound.signal.aborted) {
      return { status: 'timeout', error: `no reply within ${turn.timeoutMs / 1000} s`, calls, model: resolved.key };
    }
    if (!result.ok) return { status: 'error', error: result.message, calls, model: resolved.key };
    return { status: 'ok', reply: result.value.trim(), calls, model: resolved.key };
  } finally {
    clearTimeout(timer);
  }
}

// The turn's model resolved (an alias to provider/model) and its provider, or the outcome that says
// which is missing.
async function _provider(
  ctx: RuntimeContext,
  turn: Turn,
): Promise<{ resolved: NonNullable<ReturnType<typeof resolveModel>>; provider: Provider } | TurnOutcome> {
  if (turn.model === undefined) {
    return {
      status: 'error',
      error: "no model is configured (set agents.defaults.model or the agent's model)",
      calls: 0,
    };
  }
  const resolved = resolveModel(turn.model, ctx.config.agents.models);
  if (resolved === null) {
    return { status: 'error', error: `model "${turn.model}" is neither "provider/model" nor a known alias`, calls: 0 };
  }
  const provider = await ctx.providerFor(resolved.provider);
  if (provider === null) {
    return {
      status: 'error',
      error: `provider "${resolved.provider}" is not configured (models.providers)`,
      calls: 0,
      model: resolved.key,
    };
  }
  return { resolved, provider };
}
