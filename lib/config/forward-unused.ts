// The keys forward mode leaves unused (warnings).

import type { Issue } from '../schema.ts';
import type { Config } from './types.ts';

/**
 * The keys that mean nothing once `hooks.forward` is set: the upstream gateway runs the agents,
 * keeps the heartbeat and delivers, so models, channels and the local run queue go unused here.
 * Agent ids, session-key rules and the model allowlist still apply: they are our policy.
 */
export function forwardUnused(config: Config): Issue[] {
  const unused = (path: string): Issue => ({
    path,
    message: 'is not used in forward mode (hooks.forward): the upstream gateway runs the agents and delivers',
  });
  const issues: Issue[] = [];
  for (const id of Object.keys(config.providers)) issues.push(unused(`models.providers.${id}`));
  for (const [name, section] of Object.entries(config.channels)) {
    if (section !== undefined) issues.push(unused(`channels.${name}`));
  }
  if (config.agents.model !== null) issues.push(unused('agents.defaults.model'));
  if (config.agents.heartbeatEveryMs > 0) issues.push(unused('agents.defaults.heartbeat.every'));
  config.agents.list.forEach((agent, i) => {
    for (const key of ['workspace', 'model', 'systemPrompt'] as const) {
      if (agent[key] !== undefined) issues.push(unused(`agents.list[${i}].${key}`));
    }
  });
  if (config.hooks.allowCompletionReply) issues.push(unused('hooks.allowCompletionReply'));
  // A lane bounds the runs executing here; in forward mode they run upstream, as the global run queue bound does.
  for (const key of ['concurrency', 'maxQueued'] as const) {
    if (config.hooks.agent[key] !== undefined) issues.push(unused(`hooks.agent.${key}`));
  }
  config.hooks.mappings.forEach((m, i) => {
    if (m.waitForCompletion === true) issues.push(unused(`hooks.mappings[${i}].waitForCompletion`));
    for (const key of ['concurrency', 'maxQueued'] as const) {
      if (m[key] !== undefined) issues.push(unused(`hooks.mappings[${i}].${key}`));
    }
  });
  return issues;
}
