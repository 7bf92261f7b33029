// A config can be valid and still leave the runtime unable to do its work: `/agent` accepts a run
// with 202 that then fails with "no model is configured". `check` and `serve` say so up front,
// one line per gap, naming the key that closes it.
import type { Config } from './types.ts';

/** What will fail or go nowhere at run time with this config; empty when runs and heartbeats can work. */
export function readinessWarnings(config: Config): string[] {
  // In forward mode the upstream gateway runs the agents and delivers; nothing here needs a model.
  if (config.hooks.forward !== null) return [];
  const warnings: string[] = [];
  const { agents } = config;
  const list = agents.list.length > 0 ? agents.list : [{ id: agents.defaultAgentId, model: undefined }];
  list.forEach((agent, i) => {
    if (agent.model !== undefined || agents.model !== null) return;
    const who = agents.list.length > 0 ? `agents.list[${i}] ("${agent.id}")` : `agent "${agent.id}"`;
    const what = agent.id === agents.defaultAgentId ? 'agent runs and heartbeats' : 'its agent runs';
    warnings.push(`${who} has no model and agents.defaults.model is not set: ${what} will fail`);
  });
  if (Object.values(config.channels).every((channel) => channel === undefined)) {
    warnings.push('no channel is configured (channels): run replies (deliver defaults to true) and heartbeat replies will not be delivered');
  }
  return warnings;
}
