import { join } from 'node:path';
import { isAck } from './ack.ts';
import { agentOf, summarise, workspaceOf, type RuntimeContext } from './context.ts';
import { routeOf } from './reply.ts';
import { takeTurn } from './turn.ts';

/** The main session's transcript key: heartbeat turns continue it. */
export const MAIN_SESSION = 'main';

/**
 * One heartbeat turn: the main agent reads the system events that arrived since the last finished
 * turn (and HEARTBEAT.md), answers, and a reply that is more than an acknowledgment is delivered.
 */
export async function heartbeatTurn(ctx: RuntimeContext): Promise<void> {
  const { store, config } = ctx;
  const consumed = store.consumedThrough();
  const pending = store.events().filter((e) => e.seq > consumed && e.kind === 'system');
  // Taken together with `pending`: an event that arrives later is not in this prompt, so it stays unconsumed.
  const through = store.events().at(-1)?.seq ?? consumed;
  const agent = agentOf(config, config.agents.defaultAgentId);
  const workspace = workspaceOf(config, agent);
  const checklist = workspace === undefined ? null : await ctx.readText(join(workspace, 'HEARTBEAT.md'));
  // Nothing new and no standing checklist: no reason to spend a model call.
  if (pending.length === 0 && checklist === null) return;
  const prompt = [
    config.agents.heartbeat.prompt,
    ...(checklist === null ? [] : [`Checklist (HEARTBEAT.md):\n${checklist.trim()}`]),
    ...(pending.length === 0 ? ['No new system events.'] : pending.map((e) => `System event (${e.time}):\n${e.text}`)),
  ].join('\n\n');
  const outcome = await takeTurn(ctx, {
    agent,
    model: agent.model ?? config.agents.model ?? undefined,
    history: await ctx.transcripts.history(MAIN_SESSION, config.agents.historyMaxChars),
    prompt,
    timeoutMs: config.agents.timeoutSeconds * 1000,
    ids: { runId: `heartbeat-${through}`, sessionKey: MAIN_SESSION, agentId: agent.id },
  });
  if (outcome.status === 'stopped') return;
  if (outcome.status !== 'ok') {
    // The events stay unconsumed, so the next heartbeat reads them again.
    await store.commit({ events: [{ kind: 'system', text: `Heartbeat (${outcome.status}): ${summarise(outcome.error)}`, source: 'heartbeat' }] });
    return;
  }
  const ack = isAck(outcome.reply, config.agents.heartbeat.ackMaxChars);
  await ctx.transcripts.append(MAIN_SESSION, [
    { role: 'user', content: prompt },
    { role: 'assistant', content: outcome.reply },
  ]);
  await store.commit({ events: [{ kind: 'reply', text: outcome.reply, source: 'heartbeat', ack }], consumedThrough: through });
  if (!ack) await _deliver(ctx, outcome.reply);
}

// The heartbeat's reply goes to agents.defaults.heartbeat's target; a failure is noted in the main session.
async function _deliver(ctx: RuntimeContext, reply: string): Promise<void> {
  if (ctx.deliver === undefined) return;
  const { target, to } = ctx.config.agents.heartbeat;
  const delivery = await ctx.deliver({ channel: target, ...(to === undefined ? {} : { to }), text: reply, signal: ctx.stopping });
  if (delivery.status === 'delivered') await ctx.store.commit({ lastRoute: routeOf(delivery) });
  if (delivery.status === 'failed') {
    await ctx.store.commit({ events: [{ kind: 'system', text: `Heartbeat reply: delivery to ${delivery.channel} failed: ${summarise(delivery.reason)}`, source: 'heartbeat' }] });
  }
}
