// The hooks' limits' own rules, over the normalised config: what forward mode cannot hold (runs
// happen upstream, so none waits here), and limits a mapping that never makes a run cannot use.

import type { HookLimits } from '../hooks/limits.ts';
import type { Issue } from '../schema.ts';
import type { Config } from './types.ts';

/** Problems with `rateLimit` and `budget` on `hooks.agent` and the mappings. */
export function checkLimits(config: Config): Issue[] {
  const { hooks } = config;
  const forward = hooks.forward !== null;
  const explicit = hooks.mappings.length - hooks.presets.length;
  const issues = _held(hooks.agent, 'hooks.agent', forward);
  hooks.mappings.slice(0, explicit).forEach((mapping, i) => {
    const at = `hooks.mappings[${i}]`;
    issues.push(..._held(mapping, at, forward));
    // A transform may turn the action into a run; without one, a wake or notify mapping never makes one.
    if (mapping.action === 'agent' || mapping.transform !== undefined) return;
    if (mapping.rateLimit?.over === 'queue') {
      issues.push({
        path: `${at}.rateLimit.over`,
        message: `may not be "queue" on a ${mapping.action} mapping: only runs can wait (use "reject" or "ignore")`,
      });
    }
    if (mapping.budget !== undefined) {
      issues.push({ path: `${at}.budget`, message: `counts runs, and a ${mapping.action} mapping makes none` });
    }
  });
  return issues;
}

// In forward mode the runs happen upstream: nothing is held here for a window or a day.
function _held(limits: HookLimits, at: string, forward: boolean): Issue[] {
  if (!forward) return [];
  const issues: Issue[] = [];
  if (limits.rateLimit?.over === 'queue') {
    issues.push({
      path: `${at}.rateLimit.over`,
      message: 'may not be "queue" in forward mode (hooks.forward): runs happen upstream, so none can be held here',
    });
  }
  if (limits.budget?.over === 'wait') {
    issues.push({
      path: `${at}.budget.over`,
      message: 'may not be "wait" in forward mode (hooks.forward): runs happen upstream, so none can be held here',
    });
  }
  return issues;
}
