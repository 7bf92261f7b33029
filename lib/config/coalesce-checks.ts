// The rules of a mapping's `coalesce` that span other keys: it applies to agent runs made here.

import type { Issue } from '../schema.ts';
import type { Config } from './types.ts';

/**
 * A `coalesce` on a mapping that makes no agent run (a wake already coalesces into its session's
 * newest unread event; a notify message has no run), and any `coalesce` in forward mode: there
 * the runs happen upstream, and an outbox entry held for a window would hold up every entry
 * behind it, which forward mode sends in acceptance order.
 */
export function checkCoalesce(config: Config): Issue[] {
  return config.hooks.mappings.flatMap((mapping, i): Issue[] => {
    if (mapping.coalesce === undefined) return [];
    const path = `hooks.mappings[${i}].coalesce`;
    if (config.hooks.forward !== null) {
      return [{
        path,
        message:
          'is not available in forward mode (hooks.forward): the runs happen upstream, and forward mode sends its outbox in acceptance order, so a request held for a window would hold up the others',
      }];
    }
    if (mapping.action !== 'agent') {
      return [{ path, message: `applies to agent mappings only, not to a ${mapping.action} mapping` }];
    }
    return [];
  });
}
