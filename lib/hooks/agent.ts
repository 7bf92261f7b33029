// Checks an /agent payload and turns it into an agent action.

import { type AgentAction, SESSION_MODES, THINKING_LEVELS, WAKE_MODES } from '../model/actions.ts';
import { channel as channelName } from './channel-names.ts';
import { boolean, check, formatIssue, literal, number, object, optional, string } from '../schema.ts';
import { plainLabel } from '../untrusted/label.ts';

const SHAPE = {
  message: string({ trim: true, nonEmpty: true }),
  name: optional(string({ trim: true, nonEmpty: true, maxLength: 200 })),
  agentId: optional(string({ trim: true, nonEmpty: true })),
  sessionKey: optional(string({ trim: true, nonEmpty: true, maxLength: 512 })),
  sessionMode: optional(literal(...SESSION_MODES)),
  wakeMode: optional(literal(...WAKE_MODES)),
  deliver: optional(boolean),
  channel: optional(channelName),
  to: optional(string({ trim: true, nonEmpty: true })),
  accountId: optional(string({ trim: true, nonEmpty: true })),
  model: optional(string({ trim: true, nonEmpty: true })),
  thinking: optional(literal(...THINKING_LEVELS)),
  timeoutSeconds: optional(number({ above: 0 })),
  idempotencyKey: optional(string()),
  waitForCompletion: optional(boolean),
  // Checked against hooks.callbackOrigins by the edge, which knows the config.
  callbackUrl: optional(string({ trim: true, nonEmpty: true, maxLength: 2048 })),
};
const strict = object(SHAPE);
const lenient = object(SHAPE, { unknown: 'ignore' });

/**
 * Checks an `/agent` payload field by field; the session key it carries is payload-controlled.
 * With `acceptUnknown`, fields it does not know are accepted and named in `ignored`.
 */
export function parseAgent(
  body: Record<string, unknown>,
  acceptUnknown = false,
): { ok: true; action: AgentAction; ignored: string[] } | { ok: false; error: string } {
  const checked = check(acceptUnknown ? lenient : strict, body);
  if (!checked.ok) return { ok: false, error: checked.issues.map(formatIssue).join('; ') };
  const {
    message,
    name,
    agentId,
    sessionKey,
    sessionMode,
    wakeMode,
    deliver,
    channel,
    to,
    accountId,
    model,
    thinking,
    timeoutSeconds,
    waitForCompletion,
    callbackUrl,
  } = checked.value;
  // OpenClaw's rule for a direct request: a persistent session is one the caller names.
  if (sessionMode === 'persistent' && sessionKey === undefined) {
    return { ok: false, error: 'sessionMode: "persistent" requires a sessionKey' };
  }
  const account = checkAccount(deliver ?? true, accountId, channel, to);
  if (account !== null) return { ok: false, error: account };
  const action: AgentAction = {
    kind: 'agent',
    message,
    name: name ?? 'Hook',
    wakeMode: wakeMode ?? 'now',
    deliver: deliver ?? true,
    channel: channel ?? 'last',
  };
  // A name the request gave is wrapped where a model reads it, unless it is a plain label.
  if (name !== undefined && !plainLabel(name)) action.untrustedName = true;
  if (agentId !== undefined) action.agentId = agentId;
  if (sessionKey !== undefined) action.sessionKey = { value: sessionKey, trusted: false };
  if (sessionMode !== undefined) action.sessionMode = sessionMode;
  if (to !== undefined) action.to = to;
  if (accountId !== undefined && deliver !== false) action.accountId = accountId;
  if (model !== undefined) action.model = model;
  if (thinking !== undefined) action.thinking = thinking;
  if (timeoutSeconds !== undefined) action.timeoutSeconds = timeoutSeconds;
  if (waitForCompletion === true) action.waitForCompletion = true;
  if (callbackUrl !== undefined) action.callbackUrl = callbackUrl;
  return { ok: true, action, ignored: checked.ignored };
}

/**
 * OpenClaw's gateway's rule for `accountId`: it picks the account a reply is sent from, so it
 * comes with a concrete `channel` and a `to`; with `deliver: false` it is not read at all.
 * Returns why it is refused, or `null`.
 */
export function checkAccount(
  deliver: boolean,
  accountId: string | undefined,
  channel: string | undefined,
  to: string | undefined,
): string | null {
  if (!deliver || accountId === undefined) return null;
  if (channel === undefined || to === undefined) return 'accountId: requires channel and to';
  return channel === 'last' ? 'accountId: requires a concrete channel, not "last"' : null;
}
