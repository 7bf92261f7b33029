// The rules of completion callbacks that span keys: which runs can have one, what signs a request's own
// `callbackUrl`, and forward mode, which never learns that a run ended.

import type { Issue } from '../schema.ts';
import { isLoopbackHost } from './checks.ts';
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

/**
 * Callbacks that would cross the network in clear text: an `http://` URL or origin whose host is
 * not this machine. The completion (its reply, with `includeReply`) can then be read on the way;
 * the signature keeps it from being changed, not from being read.
 */
export function callbackWarnings(config: Config): Issue[] {
  const { hooks } = config;
  const places: [string, string][] = [
    ...(hooks.onComplete === null ? [] : [['hooks.onComplete.url', hooks.onComplete.url] as [string, string]]),
    ...hooks.callbackOrigins.map((origin, i): [string, string] => [`hooks.callbackOrigins[${i}]`, origin]),
    ...hooks.mappings.flatMap((m, i): [string, string][] =>
      m.onComplete === undefined ? [] : [[`hooks.mappings[${i}].onComplete.url`, m.onComplete.url]]
    ),
  ];
  return places.flatMap(([path, url]): Issue[] => {
    const { protocol, hostname } = new URL(url);
    if (protocol !== 'http:' || isLoopbackHost(hostname)) return [];
    return [{
      path,
      message:
        `is http:// to ${hostname}, not this machine: completions (with includeReply, the model's reply) cross the network unencrypted; use https://`,
    }];
  });
}
