/**
 * The plain values a hook turns a request into. Hooks build actions, policy checks them,
 * the store records them; none of these types knows about HTTP.
 */

import type { CoalesceAsked, CoalesceSpec } from './coalesce.ts';

export const WAKE_MODES = ['now', 'next-heartbeat'] as const;
export type WakeMode = (typeof WAKE_MODES)[number];

export const CHANNELS = [
  'last',
  'whatsapp',
  'telegram',
  'discord',
  'slack',
  'mattermost',
  'signal',
  'imessage',
  'msteams',
] as const;
export type Channel = (typeof CHANNELS)[number];

/** OpenClaw's `sessionMode`: `isolated` runs with no history, `persistent` continues the key's session. */
export const SESSION_MODES = ['isolated', 'persistent'] as const;
export type SessionMode = (typeof SESSION_MODES)[number];

export const THINKING_LEVELS = ['off', 'minimal', 'low', 'medium', 'high', 'xhigh'] as const;
export type Thinking = (typeof THINKING_LEVELS)[number];

/** Queue a system event (for the main session, or another agent's or session); with `now`, ask for a heartbeat at once. */
export interface WakeAction {
  kind: 'wake';
  text: string;
  mode: WakeMode;
  /** The agent whose heartbeat reads it; absent: the default agent. */
  agentId?: string;
  /** The session it goes to; absent: the agent's main session. Only with mode `now`, as OpenClaw rules. */
  sessionKey?: RequestedKey;
}

/** A session key and whether the operator wrote it (trusted) or the payload chose it. */
export interface RequestedKey {
  value: string;
  trusted: boolean;
}

/** What an agent run is asked to do, the same before policy (an action) and after (a run). */
interface _RunFields {
  message: string;
  name: string;
  /** The request chose the name (payload, transform, `/agent`'s `name`) and it is not a plain label (`plainLabel()`, lib/untrusted/label.ts): it is wrapped wherever a model reads it, and the main session's lines about the run carry it wrapped as untrusted content. */
  untrustedName?: boolean;
  wakeMode: WakeMode;
  deliver: boolean;
  channel: Channel;
  to?: string;
  /**
   * `to` came from the configuration (a mapping's literal `to`), not chosen by the request. Only
   * then may a delivery to it become the last route: a recipient the request chose (its `to`, a
   * template or a transform's) gets this run's reply and nothing after it.
   */
  toConfigured?: boolean;
  /** The channel account to send from (OpenClaw's `accountId`); only with a concrete `channel` and a `to`. */
  accountId?: string;
  /** `isolated`: no history read or kept, even for a stable key; `persistent` or absent: the key's session continues (a generated key is isolated). */
  sessionMode?: SessionMode;
  /** As requested on an action; on a run, a `provider/model` key with aliases already resolved. */
  model?: string;
  thinking?: Thinking;
  timeoutSeconds?: number;
}

/** Run an isolated agent turn; not yet checked against policy. */
export interface AgentAction extends _RunFields {
  kind: 'agent';
  agentId?: string;
  sessionKey?: RequestedKey;
  /** Hold the answer until the run finished and answer its completion (OpenClaw's `waitForCompletion`). */
  waitForCompletion?: boolean;
  /** `/agent`'s `callbackUrl`: where the run's completion is POSTed, when its origin is in `hooks.callbackOrigins`. */
  callbackUrl?: string;
  /** The mapping coalesces its runs: this request's key, rendered, and the window's settings. */
  coalesce?: CoalesceAsked;
}

/**
 * Send a rendered message straight to a configured channel and recipient (`action: "notify"`): no
 * model reads it, so it is not wrapped as untrusted content; the channel's own escaping applies.
 */
export interface NotifyAction {
  kind: 'notify';
  text: string;
  /** A label for listings: the mapping's `name`, else the hook name. */
  name: string;
  /** A concrete channel, never `last`. */
  channel: Exclude<Channel, 'last'>;
  /** The operator's recipient; absent: the channel's `defaultTo`. */
  to?: string;
}

export type Action = WakeAction | AgentAction | NotifyAction;

/** A notify action that passed policy: what the store records as a pending delivery. */
export interface NoticeSpec {
  kind: 'notify';
  /** The delivery's id, given in the 202 answer. */
  deliveryId: string;
  /** The hook name the request came in on. */
  hook: string;
  name: string;
  channel: Exclude<Channel, 'last'>;
  to?: string;
  text: string;
  /** The id of the request that was answered with this delivery. */
  requestId?: string;
}

/**
 * Where a run's completion is POSTed when the run ends (`onComplete`), as the run carries it: never
 * the secret, which stays in the config and is read when each attempt is signed.
 */
export interface CallbackSpec {
  url: string;
  /** The mapping whose `onComplete` secret signs it; absent: `hooks.onComplete`'s. */
  mapping?: string;
  /** The request named the URL (`callbackUrl`); absent: the URL is the config's, taken afresh by a retry. */
  requested?: true;
  /** Whether the model's reply text goes in the completion. */
  includeReply: boolean;
  /** How long after the run ended it is tried before it is given up on (dead). */
  maxAgeSeconds: number;
}

/** An agent run that passed policy: what the store records as pending and the runtime executes. */
export interface RunSpec extends _RunFields {
  runId: string;
  /** The hook name the request came in on (`agent`, or a mapped name). */
  hook: string;
  /** The id of the mapping that made the run; absent for `/agent`. Work control names the run's hook by it (work-hook.ts). */
  mapping?: string;
  sessionKey: string;
  agentId: string;
  /** The id of the request that was answered with this run, so logs lead from one to the other. */
  requestId?: string;
  /** The request chose `sessionKey` (not the configuration): a retry is held to `hooks.allowRequestSessionKey` of its time too. */
  requestKey?: boolean;
  /** Where its completion is POSTed when it ends (`onComplete`, or `/agent`'s `callbackUrl`). */
  callback?: CallbackSpec;
  /** The failed run this one runs again (`runs retry`): same message and options, admitted by the policy of its time. */
  retryOf?: string;
  /** Held for a coalescing window: later requests of its group join it (lib/model/coalesce.ts). */
  coalesce?: CoalesceSpec;
  /** Not started before this time (ISO 8601): a rate limit's `queue` or a budget's `wait` holds it (lib/edge/work-limits.ts). */
  notBefore?: string;
}
