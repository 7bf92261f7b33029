// What a valid config leaves unable to work (no model, no channel) or open (transforms on Node), for check
// and serve.
//
// A config can be valid and still leave the runtime unable to do its work: `/agent` accepts a run
// with 202 that then fails with "no model is configured". `check` and `serve` say so up front,
// one line per gap, naming the key that closes it.
import { isLoopbackHost } from './checks.ts';
import type { Config } from './types.ts';

/**
 * What will fail or go nowhere at run time with this config, and what its transforms can still
 * reach; empty when runs and heartbeats can work and transforms are held in full.
 */
export function readinessWarnings(config: Config, onDeno = 'Deno' in globalThis): string[] {
  const warnings = transformWarnings(config, onDeno);
  const { inspector } = config;
  if (inspector !== null && inspector.allowNonLoopback && !isLoopbackHost(inspector.bind)) {
    warnings.push(
      `inspector.bind is ${inspector.bind}, not loopback (inspector.allowNonLoopback): the inspector page, with every stored request, is reachable from other machines`,
    );
  }
  // In forward mode the upstream gateway runs the agents and delivers; nothing here needs a model.
  if (config.hooks.forward !== null) return warnings;
  const { agents } = config;
  const list = agents.list.length > 0 ? agents.list : [{ id: agents.defaultAgentId, model: undefined }];
  list.forEach((agent, i) => {
    if (agent.model !== undefined || agents.model !== null) return;
    const who = agents.list.length > 0 ? `agents.list[${i}] ("${agent.id}")` : `agent "${agent.id}"`;
    const what = agent.id === agents.defaultAgentId ? 'agent runs and heartbeats' : 'its agent runs';
    warnings.push(`${who} has no model and agents.defaults.model is not set: ${what} will fail`);
  });
  if (Object.values(config.channels).every((channel) => channel === undefined)) {
    warnings.push(
      'no channel is configured (channels): run replies (deliver defaults to true) and heartbeat replies will not be delivered',
    );
  }
  return warnings;
}

/**
 * Transforms on a Node server run under Node's permission model, which covers neither network
 * sockets nor signals: said once, with the setting that closes both.
 */
export function transformWarnings(config: Config, onDeno: boolean): string[] {
  if (
    onDeno || config.hooks.transformRuntime === 'deno' || !config.hooks.mappings.some((m) => m.transform !== undefined)
  ) return [];
  return [
    'transforms run on Node, whose permission model leaves the network and signals open: a transform can connect to any address ' +
    '(loopback services included) and stop, reload or restart the server with a signal; set hooks.transformRuntime to "deno" to close both',
  ];
}
