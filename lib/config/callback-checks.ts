// The rules of completion callbacks that span keys: which runs can have one, what signs a request's own
// `callbackUrl`, and forward mode, which never learns that a run ended.

import type { Issue } from '../schema.ts';
import type { Config } from './types.ts';

/**
 * Problems with `onComplete` and `hooks.callbackOrigins`: forward mode refuses both (the run happens
 * upstream and its end is not reported back); a mapping that starts no run has nothing to call back
 * about; and a request's own `callbackUrl` is signed with `hooks.onComplete`'s secret, so the
 * origins need it.
 */
export function checkCallbacks(config: Config): Issue[] {
  const { hooks } = config;
  const issues: Issue[] = [];
  const forward = hooks.forward !== null;
  const upstream = 'is refused in forward mode: runs happen on the upstream gateway, which does not report their end';
  if (forward && hooks.onComplete !== null) issues.push({ path: 'hooks.onComplete', message: upstream });
  if (forward && hooks.callbackOrigins.length > 0) issues.push({ path: 'hooks.callbackOrigins', message: upstream });
  hooks.mappings.forEach((mapping, i) => {
    if (mapping.onComplete === undefined) return;
    const path = `hooks.mappings[${i}].onComplete`;
    if (forward) issues.push({ path, message: upstream });
    else if (mapping.action !== 'agent') {
      issues.push({ path, message: `is read only by action "agent" (a run ends; a ${mapping.action} starts none)` });
    }
  });
  if (!forward && hooks.callbackOrigins.length > 0 && hooks.onComplete === null) {
    issues.push({
      path: 'hooks.callbackOrigins',
      message: "needs hooks.onComplete: its secret signs the callbacks sent to a request's own callbackUrl",
    });
  }
  return issues;
}
