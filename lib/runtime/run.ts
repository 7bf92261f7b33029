// One run: marked running, the model turn on the session's history, the outcome and its summary in one line.

import { isGeneratedKey } from '../policy/session-key.ts';
import type { RunRecord, RunUpdate } from '../model/records.ts';
import { settledCallback } from './callback-event.ts';
import { failureCode } from '../model/alerts.ts';
import { agentOf, hookLine, isoNow, type RuntimeContext, summarise } from './context.ts';
import { takeTurn, type TurnOutcome } from './turn.ts';
import { runPrompt, standsFor } from './coalesced.ts';

/**
 * Executes one accepted run: marks it running, takes the model turn on the session's history,
 * keeps the turns, and records the outcome with its summary in the main session in one line.
 * Resolves to the reply to deliver, or `null` when there is none to deliver.
 */
export async function executeRun(ctx: RuntimeContext, run: RunRecord): Promise<string | null> {
  const { store, config } = ctx;
  const resumed = run.status === 'running' || run.attempts > 0;
  await store.commit({
    runUpdates: [{
      runId: run.runId,
      status: 'running',
      attempts: run.attempts + 1,
      startedAt: isoNow(ctx),
      ...(resumed ? { retry: true } : {}),
    }],
  });
  const agent = agentOf(config, run.agentId);
  // A generated key is never used again, and an isolated run asked for no session: turns neither read nor kept.
  const isolated = run.sessionMode === 'isolated' || isGeneratedKey(run.sessionKey);
  const history = isolated ? [] : await ctx.transcripts.history(run.sessionKey, config.agents.historyMaxChars);
  const prompt = runPrompt(run);
  const outcome = await takeTurn(ctx, {
    agent,
    model: run.model ?? agent.model ?? config.agents.model ?? undefined,
    history,
    prompt,
    timeoutMs: (run.timeoutSeconds ?? config.agents.timeoutSeconds) * 1000,
    thinking: run.thinking,
    ids: { runId: run.runId, sessionKey: run.sessionKey, agentId: agent.id },
  });
  if (outcome.status === 'stopped') return null; // left `running`: the next process resumes it
  if (outcome.status === 'ok' && !isolated) {
    await ctx.transcripts.append(run.sessionKey, [
      { role: 'user', content: prompt },
      { role: 'assistant', content: outcome.reply },
    ]);
  }
  await _record(ctx, run, outcome);
  const fields = { runId: run.runId, requestId: run.requestId, status: outcome.status, calls: outcome.calls };
  // A failure is what an operator looks for: at warn, with what the model call came to.
  if (outcome.status === 'ok') ctx.log.info('run finished', fields);
  else {
    ctx.log.warn('run finished', { ...fields, error: summarise(outcome.error) });
    ctx.alerts?.note({
      kind: 'run-failures',
      hook: run.hook,
      code: outcome.status === 'timeout' ? 'timeout' : failureCode(outcome.error, 'error'),
    });
  }
  if (run.wakeMode === 'now') ctx.heartbeat.request(`hook:${run.name}`);
  return outcome.status === 'ok' && run.deliver ? outcome.reply : null;
}

// The outcome and its summary in the main session, in one line: no run is summarised (or run) twice.
async function _record(
  ctx: RuntimeContext,
  run: RunRecord,
  outcome: Exclude<TurnOutcome, { status: 'stopped' }>,
): Promise<void> {
  const summary = outcome.status === 'ok'
    ? hookLine(run, `${standsFor(run)}: ${summarise(outcome.reply)}`)
    : hookLine(run, `${standsFor(run)} (${outcome.status}): ${summarise(outcome.error)}`);
  const update: RunUpdate = {
    runId: run.runId,
    status: outcome.status,
    finishedAt: isoNow(ctx),
    calls: outcome.calls,
    ...(outcome.model === undefined ? {} : { model: outcome.model }),
    ...(outcome.status === 'ok' ? { reply: outcome.reply } : { error: outcome.error }),
  };
  await ctx.store.commit({
    events: [{ kind: 'system', text: summary, source: `run:${run.runId}`, mode: run.wakeMode }],
    runUpdates: [update],
    // A run that owes no delivery settles here: its callback is durable with its end, or neither is.
    callbacks: settledCallback(ctx.config, { ...run, ...update }, update.finishedAt!),
  });
  if (run.callback !== undefined) ctx.callbacks?.kick();
}

/**
 * Something broke outside the model call (a corrupt transcript, a throwing provider factory): the
 * run ends `error` with a summary rather than staying `running` to fail again after a restart.
 */
export async function failRun(ctx: RuntimeContext, run: RunRecord, error: unknown): Promise<void> {
  ctx.log.error('run failed unexpectedly', {
    runId: run.runId,
    error: error instanceof Error ? (error.stack ?? error.message) : String(error),
  });
  if (ctx.stopping.aborted) return;
  ctx.alerts?.note({ kind: 'run-failures', hook: run.hook, code: 'internal error' });
  const reason = `internal error: ${error instanceof Error ? error.message : String(error)}`;
  const update: RunUpdate = { runId: run.runId, status: 'error', finishedAt: isoNow(ctx), error: reason };
  await ctx.store
    .commit({
      events: [{
        kind: 'system',
        text: hookLine(run, ` (error): ${summarise(reason)}`),
        source: `run:${run.runId}`,
        mode: run.wakeMode,
      }],
      runUpdates: [update],
      callbacks: settledCallback(ctx.config, { ...run, ...update }, update.finishedAt!),
    })
    .then(() => run.callback !== undefined && ctx.callbacks?.kick())
    .catch((e: unknown) => ctx.log.error('run outcome not recorded', { runId: run.runId, error: String(e) }));
}
