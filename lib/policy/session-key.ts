/**
 * OpenClaw's per-agent session namespace: `agent:<agentId>:<rest>`. A key inside the namespace of
 * the agent a run goes to means `<rest>` for that agent, so the prefix is dropped; a key naming
 * another agent is left as it is.
 */
const _AGENT_KEY = /^agent:([^:]+):(.+)$/i;

/** `key` without the `agent:<agentId>:` prefix when that prefix names `agentId` (any case). */
export function normaliseSessionKey(key: string, agentId: string): string {
  const match = _AGENT_KEY.exec(key);
  if (match === null) return key;
  const [, owner, rest] = match as unknown as [string, string, string];
  // `agent:hooks::x` and `agent:hooks:` name no session: left as they are, like any other odd key.
  const trimmed = rest.replace(/^:+/, '');
  if (owner.toLowerCase() !== agentId.toLowerCase() || trimmed === '') return key;
  return trimmed;
}
