// The shape of the configuration every layer reads. Types only (every import here is erased), so
// reading it ties no layer to the code that loads the config.
import type { Channel } from '../model/actions.ts';
import type { Cidr } from '../guard/address.ts';
import type { ChannelsConfig } from '../delivery/channels.ts';
import type { AlertsConfig } from '../model/alerts.ts';
import type { Mapping } from '../hooks/mappings.ts';
import type { OnComplete } from '../hooks/on-complete.ts';
import type { HookLimits } from '../hooks/limits.ts';
import type { FileConfig, PROVIDER_APIS } from './file-schema.ts';
import type { LedgerConfig } from '../store/ledger/config.ts';
import type { WorkControl } from '../model/work-hook.ts';

/** The environment, as a plain map (injected so tests do not touch `process.env`). */
export type Env = Readonly<Record<string, string | undefined>>;

/** One configured agent. */
export interface AgentConfig {
  id: string;
  default: boolean;
  workspace?: string;
  model?: string;
  systemPrompt?: string;
}

/** One model API: how to reach it and in which wire format. */
export interface ProviderConfig {
  api: (typeof PROVIDER_APIS)[number];
  baseUrl?: string;
  apiKey?: string;
  headers?: Record<string, string>;
  command?: string[];
}

/** The validated configuration with every default applied. */
export interface Config {
  /** The file it came from, or `null` when built in memory. */
  file: string | null;
  /** The file's directory: relative paths in the file are resolved against it. */
  dir: string;
  hooks: {
    enabled: boolean;
    token: string | null;
    path: string;
    maxBodyBytes: number;
    /** `null`: any agent may be picked. */
    allowedAgentIds: readonly string[] | null;
    defaultSessionKey: string | null;
    allowRequestSessionKey: boolean;
    /** `null`: no prefix rule. */
    allowedSessionKeyPrefixes: readonly string[] | null;
    presets: readonly string[];
    /** `hooks.mappings` in order, then the presets' mappings: the first match wins. */
    mappings: readonly Mapping[];
    /** The real path transforms load from, inside `<config dir>/hooks/transforms`. */
    transformsDir: string;
    transformTimeoutMs: number;
    /** Bytes of one transform call's result, as JSON; over it the call fails. */
    transformMaxResultBytes: number;
    /** `server`: children run on the server's runtime; `deno`: on Deno, at `transformDenoPath`. */
    transformRuntime: 'server' | 'deno';
    /** The deno binary transform children run on: found at load for `deno`, else `null`. */
    transformDenoPath: string | null;
    /** Accepted runs waiting or running; past it `/agent` answers 503. */
    maxQueuedRuns: number;
    /** Work control of `/agent`'s runs (`hooks.agent`): its lane, rate limit and budget; a mapping's are on the mapping. */
    agent: WorkControl & HookLimits;
    /** `/wake`'s rate limit (`hooks.wake`). */
    wake: Pick<HookLimits, 'rateLimit'>;
    /** The longest wake text (UTF-8 bytes) a request or mapping may add; past it, 413. */
    maxEventBytes: number;
    /** Unconsumed system events (count, and UTF-8 bytes of text) past which new wakes get 503. */
    maxBacklogEvents: number;
    maxBacklogBytes: number;
    gmail: NonNullable<NonNullable<FileConfig['hooks']>['gmail']>;
    authRateLimit: { maxFailures: number; windowSeconds: number; lockoutSeconds: number };
    idempotencyTtlSeconds: number;
    /** Whether a `waitForCompletion` answer may carry the model's reply text. */
    allowCompletionReply: boolean;
    /** Where /agent runs' completions are POSTed, signed (and whose secret signs a request's own `callbackUrl`); `null`: none. */
    onComplete: OnComplete | null;
    /** The origins an /agent request's `callbackUrl` may name, exactly (`scheme://host[:port]`). */
    callbackOrigins: readonly string[];
    /** `refuse`: a /wake or /agent field not in the contract is a 400; `log`: accepted, ignored and logged (OpenClaw ignores them). */
    unknownPayloadFields: 'refuse' | 'log';
    /** The request ledger: what arrived on the hooks path and what became of it, within these bounds. */
    ledger: LedgerConfig;
    /** Forward mode: accepted actions go to this upstream OpenClaw gateway instead of running here. */
    forward: ForwardConfig | null;
  };
  agents: {
    models: Readonly<Record<string, { alias?: string }>>;
    model: string | null;
    heartbeatEveryMs: number;
    list: readonly AgentConfig[];
    defaultAgentId: string;
    timeoutSeconds: number;
    maxConcurrent: number;
    /** How much of a session's transcript is sent with a turn, newest first. */
    historyMaxChars: number;
    heartbeat: { prompt: string; target: Channel; to?: string; ackMaxChars: number };
  };
  /** Model APIs by provider id (the part before `/` in `provider/model`). */
  providers: Readonly<Record<string, ProviderConfig>>;
  gateway: {
    bind: string;
    port: number;
    trustedProxies: readonly Cidr[];
    authToken: string | null;
  };
  stateDir: string | null;
  /** The chat channels configured under `channels`, as written (the composition root builds their adapters). */
  channels: ChannelsConfig;
  /** The request lines of the server's log: which requests get one, and how many a second at most. */
  log: { requests: 'all' | 'refusals' | 'none'; maxLinesPerSecond: number };
  /** The owner's alerts (`alerts`); `null` when off. */
  alerts: AlertsConfig | null;
  /** The inspector page's listener; `null` when off (no `inspector.port`). */
  inspector:
    | { port: number; bind: string; allowNonLoopback: boolean; idleMinutes: number; maxSessionHours: number }
    | null;
}

/**
 * The outcome of loading a configuration: every problem as `path: rule`. A valid one may still
 * carry warnings: things that load but will fail when used (a model whose provider is missing).
 */
/** Forward mode: `hooks.forward`, the upstream OpenClaw gateway accepted actions go to. */
export interface ForwardConfig {
  url: string;
  token: string;
  maxAgeSeconds: number;
  /** The upstream's agent ids, its default first; `null`: not listed, so every requested agent id is forwarded as sent. */
  agents: readonly string[] | null;
  /** The upstream agent wakes go to; `null`: the upstream's own choice (refused there when it has several agents and no system agent). */
  agentId: string | null;
  /** At most this many wakes go to one upstream agent in a heartbeat window; more are merged into one per session. */
  maxPendingWakes: number;
}

export type ConfigResult = { ok: true; config: Config; ignored: string[]; warnings: string[] } | {
  ok: false;
  problems: string[];
};
