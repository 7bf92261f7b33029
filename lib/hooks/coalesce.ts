// A mapping's `coalesce`: its schema, its defaults, and the key rendered for one request (the
// window itself, and what joining it means, are lib/model/coalesce.ts).

import type { AgentAction, RunSpec } from '../model/actions.ts';
import { COALESCE_MESSAGES, type CoalesceAsked, type CoalesceMessages } from '../model/coalesce.ts';
import { literal, number, object, optional } from '../schema.ts';
import { render, type Template, type TemplateContext, templateSchema } from './template.ts';
import { extend } from '../object.ts';

/** The default quiet time that closes a window, and the longest a window stays open after its first request. */
export const COALESCE_DEFAULTS = Object.freeze({ windowSeconds: 30, maxWaitSeconds: 300, messages: 'latest' as const });

/** The longest window a mapping may ask for (a day): a run is never held longer. */
const MAX_SECONDS = 86_400;

/** The rendered key is cut to this many characters (a key is request text; the group it names stays bounded). */
export const MAX_COALESCE_KEY = 512;

/** A mapping's `coalesce`, as the config file writes it (the key compiled). A `maxWaitSeconds` below `windowSeconds` makes a fixed window from the first request. */
export const coalesceSchema = object({
  key: templateSchema,
  windowSeconds: optional(number({ above: 0, max: MAX_SECONDS })),
  maxWaitSeconds: optional(number({ above: 0, max: MAX_SECONDS })),
  messages: optional(literal(...COALESCE_MESSAGES)),
});

/** A mapping's `coalesce` with its defaults applied. */
export interface Coalesce {
  key: Template;
  windowSeconds: number;
  maxWaitSeconds: number;
  messages: CoalesceMessages;
}

/** Applies the defaults to a `coalesce` as written. */
export function toCoalesce(raw: NonNullable<ReturnType<typeof coalesceSchema>>): Coalesce {
  return {
    key: raw.key,
    windowSeconds: raw.windowSeconds ?? COALESCE_DEFAULTS.windowSeconds,
    maxWaitSeconds: raw.maxWaitSeconds ?? COALESCE_DEFAULTS.maxWaitSeconds,
    messages: raw.messages ?? COALESCE_DEFAULTS.messages,
  };
}

/** What one request's run asks for: the key rendered over the request (trimmed; a placeholder that found nothing renders empty). */
export function coalesceAsked(coalesce: Coalesce, context: TemplateContext): CoalesceAsked {
  const key = render(coalesce.key, context).text.trim().slice(0, MAX_COALESCE_KEY);
  const { windowSeconds, maxWaitSeconds, messages } = coalesce;
  return { key, windowSeconds, maxWaitSeconds, messages };
}

/**
 * A run admitted for an action that asked to be coalesced, with its window's spec: requests join
 * one run only when they share the hook, the key and where the reply goes (agent, the session when
 * one was named, channel and recipient), so joining never sends a reply somewhere else.
 */
export function withCoalesce(run: RunSpec, action: AgentAction, hook: string, maxBytes: number): RunSpec {
  if (action.coalesce === undefined) return run;
  const { key } = action.coalesce;
  const session = action.sessionKey === undefined ? null : run.sessionKey;
  const group = JSON.stringify([hook, key, run.agentId, session, run.channel, run.to ?? null]);
  return extend(run, { coalesce: { group, ...action.coalesce, maxBytes } });
}
