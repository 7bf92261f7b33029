// The heartbeat turn over the main session's new events and HEARTBEAT.md, then one turn per other agent and
// session with unread events.

import { join } from 'node:path';
import { failureCode } from '../model/alerts.ts';
import { type SessionEvent, targetOf } from '../model/records.ts';
import { isAck } from './ack.ts';
import { agentOf, type RuntimeContext, summarise, workspaceOf } from './context.ts';
import { routeOf } from './reply.ts';
import { takeTurn } from './turn.ts';

/** The main session's transcript key: heartbeat turns continue it. */
export const MAIN_SESSION = 'main';

// One heartbeat turn's session: the default agent's main session (`target` ''), or the agent and
// session a wake named.
interface _Target {
  target: string;
  agentId?: string;
  sessionKey?: string;
}

/**
 * One heartbeat: the default agent reads the main session's system events that arrived since its
 * last finished turn (and HEARTBEAT.md), answers, and a reply that is more than an acknowledgment
 * is delivered. Then each other agent or session that a wake named and that has unread events
 * gets a turn of its own, oldest first: that agent (its workspace's HEARTBEAT.md, its model) reads
 * that session's events on that session's history. There is one heartbeat schedule for them all;
 * a `now` wake for any of them asks for it.
 */
export async function heartbeatTurn(ctx: RuntimeContext): Promise<void> {
  await _turn(ctx, { target: '' }, 0);
  const others = new Map<string, _Target>();
  for (const e of ctx.store.events()) {
    const target = targetOf(e);
    if (target === '' || others.has(target) || !_unread(ctx, e)) continue;
    others.set(target, {
      target,
      ...(e.agentId === undefined ? {} : { agentId: e.agentId }),
      ...(e.sessionKey === undefined ? {} : { sessionKey: e.sessionKey }),
    });
  }
  let n = 0;
  for (const target of others.values()) {
    if (ctx.stopping.aborted) return;
    await _turn(ctx, target, ++n);
  }
}

function _unread(ctx: RuntimeContext, e: SessionEvent): boolean {
  return e.kind === 'system' && e.seq > ctx.store.consumedThrough(e);
}

async function _turn(ctx: RuntimeContext, at: _Target, n: number): Promise<void> {
  const { store, config } = ctx;
  const main = at.target === '';
  const pending = store.events().filter((e) => targetOf(e) === at.target && _unread(ctx, e));
  // Taken together with `pending`: an event that arrives later is not in this prompt, so it stays unconsumed.
  const through = store.events().at(-1)?.seq ?? store.consumedThrough();
  const agent = agentOf(config, at.agentId ?? config.agents.defaultAgentId);
  const workspace = workspaceOf(config, agent);
  const checklist = workspace === undefined ? null : await ctx.readText(join(workspace, 'HEARTBEAT.md'));
  // Nothing new and no standing checklist: no reason to spend a model call. A checklist alone
  // brings only the main session's turn: the others are woken by their events.
  if (pending.length === 0 && (checklist === null || !main)) return;
  const session = at.sessionKey ?? MAIN_SESSION;
  const prompt = [
    config.agents.heartbeat.prompt,
    ...(checklist === null ? [] : [`Checklist (HEARTBEAT.md):\n${checklist.trim()}`]),
    ...(pending.length === 0 ? ['No new system events.'] : pending.map((e) => `System event (${e.time}):\n${e.text}`)),
  ].join('\n\n');
  const outcome = await takeTurn(ctx, {
    agent,
    model: agent.model ?? config.agents.model ?? undefined,
    history: await ctx.transcripts.history(session, config.agents.historyMaxChars),
    prompt,
    timeoutMs: config.agents.timeoutSeconds * 1000,
    ids: { runId: main ? `heartbeat-${through}` : `heartbeat-${through}-${n}`, sessionKey: session, agentId: agent.id },
  });
  if (outcome.status === 'stopped') return;
  const where = {
    ...(at.agentId === undefined ? {} : { agentId: at.agentId }),
    ...(at.sessionKey === undefined ? {} : { sessionKey: at.sessionKey }),
  };
  if (outcome.status !== 'ok') {
    // The events stay unconsumed, so the next heartbeat reads them again.
    await store.commit({
      events: [{
        kind: 'system',
        text: `Heartbeat (${outcome.status}): ${summarise(outcome.error)}`,
        source: 'heartbeat',
        ...where,
      }],
    });
    return;
  }
  const ack = isAck(outcome.reply, config.agents.heartbeat.ackMaxChars);
  await ctx.transcripts.append(session, [
    { role: 'user', content: prompt },
    { role: 'assistant', content: outcome.reply },
  ]);
  const consumed = main ? { consumedThrough: through } : { consumedSessions: [{ ...where, through }] };
  await store.commit({
    events: [{ kind: 'reply', text: outcome.reply, source: 'heartbeat', ack, ...where }],
    ...consumed,
  });
  if (!ack) await _deliver(ctx, outcome.reply, where);
}

// The heartbeat's reply goes to agents.defaults.heartbeat's target; a failure is noted in the session it came from.
async function _deliver(
  ctx: RuntimeContext,
  reply: string,
  where: Pick<SessionEvent, 'agentId' | 'sessionKey'>,
): Promise<void> {
  if (ctx.deliver === undefined) return;
  const { target, to } = ctx.config.agents.heartbeat;
  const delivery = await ctx.deliver({
    channel: target,
    ...(to === undefined ? {} : { to }),
    text: reply,
    signal: ctx.stopping,
  });
  if (delivery.status === 'delivered') await ctx.store.commit({ lastRoute: routeOf(delivery) });
  if (delivery.status === 'failed') {
    ctx.alerts?.note({
      kind: 'delivery-failures',
      hook: 'heartbeat',
      code: failureCode(delivery.reason, `${delivery.channel} failed`),
    });
    await ctx.store.commit({
      events: [{
        kind: 'system',
        text: `Heartbeat reply: delivery to ${delivery.channel} failed: ${summarise(delivery.reason)}`,
        source: 'heartbeat',
        ...where,
      }],
    });
  }
}
