// Work control's rules across keys (docs/work-control.md): a hook is named by its mapping's id, so
// two mappings with one id, or a mapping named like a built-in hook, are one hook whose controls,
// counts and state they share. Loaded with a warning, since an existing config may do it on purpose.

import type { Issue } from '../schema.ts';
import type { Config } from './types.ts';

const _BUILT_IN: Readonly<Record<string, string>> = { agent: 'POST /hooks/agent', wake: 'POST /hooks/wake' };

/** A warning for each mapping whose id another mapping or a built-in hook also names. */
export function workHookWarnings(config: Config): Issue[] {
  const issues: Issue[] = [];
  const first = new Map<string, number>();
  config.hooks.mappings.forEach((mapping, i) => {
    const path = `hooks.mappings[${i}].id`;
    const builtIn = _BUILT_IN[mapping.id];
    if (builtIn !== undefined) {
      issues.push({
        path,
        message: `"${mapping.id}" also names the hook of ${builtIn}: work control counts and controls them as one; ` +
          'give the mapping an id of its own',
      });
    }
    const earlier = first.get(mapping.id);
    if (earlier === undefined) {
      first.set(mapping.id, i);
      return;
    }
    issues.push({
      path,
      message: `"${mapping.id}" is also the id of hooks.mappings[${earlier}]: work control counts and controls them ` +
        'as one hook; give each mapping an id of its own',
    });
  });
  return issues;
}
