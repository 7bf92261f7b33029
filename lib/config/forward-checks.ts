// Forward mode's own rules, checked without contacting the upstream gateway (check never does):
// what the config says of the upstream's agents, and what the upstream would refuse because of it.

import type { Issue } from '../schema.ts';
import type { Config } from './types.ts';

/** Problems with `hooks.forward`'s list of the upstream's agents and the agent wakes go to. */
export function checkForward(config: Config): Issue[] {
  const forward = config.hooks.forward;
  if (forward === null) return [];
  const issues: Issue[] = [];
  const { agents, agentId } = forward;
  if (agents !== null && agents.length === 0) {
    issues.push({
      path: 'hooks.forward.agents',
      message: "must list at least one agent (the upstream gateway's default first), or be left out",
    });
  }
  const seen = new Set<string>();
  agents?.forEach((id, i) => {
    if (seen.has(id.toLowerCase())) {
      issues.push({
        path: `hooks.forward.agents[${i}]`,
        message: `duplicates agent "${id}" (agent ids are compared without case)`,
      });
    }
    seen.add(id.toLowerCase());
  });
  if (agents !== null && agents.length > 0 && agentId !== null && !seen.has(agentId.toLowerCase())) {
    issues.push({
      path: 'hooks.forward.agentId',
      message: `must be one of hooks.forward.agents (${agents.join(', ')})`,
    });
  }
  return issues;
}

/**
 * What the upstream may refuse that only its own config decides: with no `hooks.forward.agentId`,
 * wakes go without an agent, which a gateway with several agents and no
 * `agents.defaults.systemAgent.agentId` refuses (400), so every forwarded wake would be dead.
 * Not said when hooks.forward.agents lists one agent. Local agents.list ids no longer decide
 * which agent ids are known in forward mode.
 */
export function forwardWarnings(config: Config): Issue[] {
  const forward = config.hooks.forward;
  if (forward === null) return [];
  const issues: Issue[] = [];
  if (forward.agentId === null && (forward.agents === null || forward.agents.length > 1)) {
    issues.push({
      path: 'hooks.forward.agentId',
      message:
        'is not set, so wakes go to the upstream gateway without an agent: one with several agents and no agents.defaults.systemAgent.agentId refuses them ' +
        '(400 "agentId is required when multiple agents are configured") and every forwarded wake is dead; name the upstream agent wakes go to (not checked against the upstream)',
    });
  }
  if (config.agents.list.length > 0 && forward.agents === null) {
    issues.push({
      path: 'agents.list',
      message:
        "does not decide which agent ids are known in forward mode: requested ids are forwarded as sent; list the upstream gateway's agents in hooks.forward.agents (its default first) to refuse unknown ones here",
    });
  }
  return issues;
}
