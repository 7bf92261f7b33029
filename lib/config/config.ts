import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join as joinPath, resolve } from 'node:path';
import { CHANNELS, THINKING_LEVELS, type Channel } from '../actions.ts';
import { parseCidr, type Cidr } from '../guard/address.ts';
import { buildChannels, channelsSchema, type ConfiguredChannel } from '../delivery/channels.ts';
import { checkRoute } from '../delivery/deliver.ts';
import { resolveInside, resolveModule } from '../guard/contain.ts';
import { mappingSchema, payloadControlsKey, presetMappings, toMapping, type Mapping } from '../hooks/mappings.ts';
import { parseJsonc } from '../jsonc.ts';
import {
  array,
  boolean,
  check,
  literal,
  formatIssue,
  number,
  object,
  optional,
  record,
  refine,
  string,
  join,
  type Issue,
  type Schema,
} from '../schema.ts';

/** The environment, as a plain map (injected so tests do not touch `process.env`). */
export type Env = Readonly<Record<string, string | undefined>>;

/** The generated session keys start with this; prefix allowlists must admit it when no default key is set. */
export const GENERATED_KEY_PREFIX = 'hook:';

const PROVIDER_MODEL = { regex: /^[^/\s]+\/\S+$/, rule: 'must be written "provider/model"' };

// Keys of OpenClaw's `hooks` section that this service does not act on: they load, and are reported.
const IGNORED_HOOK_KEYS = ['internal'] as const;

/** The model API wire formats a provider may speak. */
export const PROVIDER_APIS = ['openai-completions', 'anthropic-messages', 'command'] as const;

/** The default heartbeat prompt: read the events, act if needed, else acknowledge. */
export const DEFAULT_HEARTBEAT_PROMPT =
  'Heartbeat. Read the system events below, which arrived since your last heartbeat. If one needs the user, ' +
  'write the message they should get. If nothing needs them, answer exactly HEARTBEAT_OK.';

/** The built-in presets `hooks.presets` may name. */
export const PRESETS = ['gmail'] as const;

const duration: Schema<number> = (value, at, report) => {
  const ms = parseDuration(value);
  if (ms === null) {
    report.issues.push({ path: at, message: 'must be a duration such as "30m", "1h", "90s" or "0" (off)' });
    return undefined;
  }
  return ms;
};

const cidr: Schema<Cidr> = (value, at, report) => {
  const parsed = typeof value === 'string' ? parseCidr(value.trim()) : null;
  if (parsed === null) report.issues.push({ path: at, message: 'must be an IP address or CIDR range' });
  return parsed ?? undefined;
};

const seconds = number({ integer: true, min: 1 });

// A rule on one key, so it is checked in the schema and reported together with the other problems.
const hooksPath = refine(string({ trim: true }), (value) => {
  const path = normaliseHooksPath(value);
  if (path === '/') return 'may not be "/"';
  return /^\/[\w\-./~]*$/.test(path) ? null : 'may contain only letters, digits and "-._~/"';
});

const fileSchema = object({
  hooks: optional(
    object(
      {
        enabled: optional(boolean),
        token: optional(string({ trim: true, nonEmpty: true })),
        tokenFile: optional(string({ nonEmpty: true })),
        path: optional(hooksPath),
        maxBodyBytes: optional(number({ integer: true, min: 1 })),
        allowedAgentIds: optional(array(string({ trim: true, nonEmpty: true }))),
        defaultSessionKey: optional(string({ trim: true, nonEmpty: true })),
        allowRequestSessionKey: optional(boolean),
        allowedSessionKeyPrefixes: optional(array(string({ trim: true, nonEmpty: true }))),
        presets: optional(array(literal(...PRESETS))),
        mappings: optional(array(mappingSchema)),
        transformsDir: optional(string({ nonEmpty: true })),
        transformTimeoutMs: optional(number({ integer: true, min: 1 })),
        maxQueuedRuns: optional(number({ integer: true, min: 1 })),
        maxEventBytes: optional(number({ integer: true, min: 1 })),
        maxBacklogEvents: optional(number({ integer: true, min: 1 })),
        maxBacklogBytes: optional(number({ integer: true, min: 1 })),
        gmail: optional(
          object({
            account: optional(string({ trim: true, nonEmpty: true })),
            label: optional(string({ nonEmpty: true })),
            topic: optional(string({ nonEmpty: true })),
            subscription: optional(string({ nonEmpty: true })),
            pushToken: optional(string({ nonEmpty: true })),
            hookUrl: optional(string({ nonEmpty: true })),
            includeBody: optional(boolean),
            maxBytes: optional(number({ integer: true, min: 1 })),
            renewEveryMinutes: optional(number({ integer: true, min: 1 })),
            allowUnsafeExternalContent: optional(boolean),
            // A literal model id: braces would make it a template the payload could steer.
            model: optional(string({ trim: true, nonEmpty: true, pattern: { regex: /^[^{}]*$/, rule: 'may not contain braces' } })),
            thinking: optional(literal(...THINKING_LEVELS)),
            // Settings of the companion watcher's own server; passed through to it, not read here.
            serve: optional(record((v) => v)),
            tailscale: optional(record((v) => v)),
          }),
        ),
        authRateLimit: optional(
          object({
            maxFailures: optional(number({ integer: true, min: 1 })),
            windowSeconds: optional(seconds),
            lockoutSeconds: optional(seconds),
          }),
        ),
        idempotencyTtlSeconds: optional(seconds),
      },
      { ignored: IGNORED_HOOK_KEYS },
    ),
  ),
  agents: optional(
    object({
      defaults: optional(
        object({
          models: optional(
            record(object({ alias: optional(string({ trim: true, nonEmpty: true })) })),
          ),
          model: optional(string({ trim: true, nonEmpty: true })),
          timeoutSeconds: optional(number({ above: 0 })),
          maxConcurrent: optional(number({ integer: true, min: 1, max: 64 })),
          historyMaxChars: optional(number({ integer: true, min: 0 })),
          heartbeat: optional(
            object({
              every: optional(duration),
              prompt: optional(string({ trim: true, nonEmpty: true })),
              target: optional(literal(...CHANNELS)),
              to: optional(string({ trim: true, nonEmpty: true })),
              ackMaxChars: optional(number({ integer: true, min: 0 })),
            }),
          ),
        }),
      ),
      list: optional(
        array(
          object({
            id: string({ trim: true, nonEmpty: true, pattern: { regex: /^[\w.-]+$/, rule: 'may contain only letters, digits, ".", "_" and "-"' } }),
            default: optional(boolean),
            workspace: optional(string({ nonEmpty: true })),
            model: optional(string({ trim: true, nonEmpty: true })),
            systemPrompt: optional(string({ nonEmpty: true })),
          }),
        ),
      ),
    }),
  ),
  models: optional(
    object({
      providers: optional(
        record(
          object({
            api: literal(...PROVIDER_APIS),
            baseUrl: optional(string({ trim: true, pattern: { regex: /^https?:\/\/\S+$/, rule: 'must be an http:// or https:// URL' } })),
            apiKey: optional(string({ trim: true, nonEmpty: true })),
            headers: optional(record(string())),
            command: optional(array(string({ nonEmpty: true }))),
          }),
        ),
      ),
    }),
  ),
  gateway: optional(
    object({
      bind: optional(string({ trim: true, nonEmpty: true })),
      port: optional(number({ integer: true, min: 0, max: 65535 })),
      trustedProxies: optional(array(cidr)),
      auth: optional(object({ token: optional(string({ trim: true, nonEmpty: true })) })),
    }),
  ),
  state: optional(object({ dir: optional(string({ nonEmpty: true })) })),
  channels: optional(channelsSchema),
});

type FileConfig = NonNullable<ReturnType<typeof fileSchema>>;

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
    /** Accepted runs waiting or running; past it `/agent` answers 503. */
    maxQueuedRuns: number;
    /** The longest wake text (UTF-8 bytes) a request or mapping may add; past it, 413. */
    maxEventBytes: number;
    /** Unconsumed system events (count, and UTF-8 bytes of text) past which new wakes get 503. */
    maxBacklogEvents: number;
    maxBacklogBytes: number;
    gmail: NonNullable<NonNullable<FileConfig['hooks']>['gmail']>;
    authRateLimit: { maxFailures: number; windowSeconds: number; lockoutSeconds: number };
    idempotencyTtlSeconds: number;
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
  /** The chat channels configured under `channels`, with their adapters built. */
  channels: ReadonlyMap<Channel, ConfiguredChannel>;
}

/** The outcome of loading a configuration: every problem as `path: rule`. */
/**
 * The outcome of loading a configuration: every problem as `path: rule`. A valid one may still
 * carry warnings: things that load but will fail when used (a model whose provider is missing).
 */
export type ConfigResult = { ok: true; config: Config; ignored: string[]; warnings: string[] } | { ok: false; problems: string[] };

export const DEFAULTS = {
  path: '/hooks',
  maxBodyBytes: 262_144,
  maxFailures: 20,
  windowSeconds: 60,
  lockoutSeconds: 60,
  idempotencyTtlSeconds: 86_400,
  bind: '127.0.0.1',
  port: 8789,
  transformTimeoutMs: 5_000,
  maxQueuedRuns: 1_000,
  maxEventBytes: 262_144,
  maxBacklogEvents: 100_000,
  maxBacklogBytes: 67_108_864,
  timeoutSeconds: 600,
  maxConcurrent: 4,
  historyMaxChars: 32_000,
  ackMaxChars: 300,
} as const;

/** Transforms live below this folder of the config directory, and nowhere else. */
export const TRANSFORMS_ROOT = 'hooks/transforms';

/** Where the config file is: `--config`, else `$HOOKS_INGRESS_CONFIG`, else the XDG default. */
export function locateConfig(flag: string | undefined, env: Env): { path: string; implicit: boolean } {
  if (flag !== undefined) return { path: resolve(flag), implicit: false };
  if (env['HOOKS_INGRESS_CONFIG']) return { path: resolve(env['HOOKS_INGRESS_CONFIG']), implicit: false };
  const base = env['XDG_CONFIG_HOME'] || joinPath(env['HOME'] || homedir(), '.config');
  return { path: joinPath(base, 'hooks-ingress', 'config.json'), implicit: true };
}

/** Where the state lives: `--state-dir`, else `state.dir`, else `$STATE_DIRECTORY`, else the XDG default. */
export function locateStateDir(flag: string | undefined, config: Config, env: Env): string {
  if (flag !== undefined) return resolve(flag);
  if (config.stateDir !== null) return config.stateDir;
  // systemd passes a colon-separated list when a unit names several state directories.
  const systemd = env['STATE_DIRECTORY']?.split(':')[0];
  if (systemd) return systemd;
  const base = env['XDG_STATE_HOME'] || joinPath(env['HOME'] || homedir(), '.local', 'state');
  return joinPath(base, 'hooks-ingress');
}

/** Reads, parses and validates a config file. A missing file is a problem like any other. */
export async function loadConfig(file: string, env: Env): Promise<ConfigResult> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    return { ok: false, problems: [`${file}: cannot read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`] };
  }
  const parsed = parseJsonc(text);
  if (!parsed.ok) return { ok: false, problems: [`${file}: ${parsed.error}`] };
  return buildConfig(parsed.value, { file, env });
}

/** Validates a parsed config value; reads `hooks.tokenFile` or the systemd credential when they stand for the token. */
export async function buildConfig(raw: unknown, where: { file: string | null; env: Env; dir?: string }): Promise<ConfigResult> {
  const dir = where.dir ?? (where.file === null ? process.cwd() : dirname(where.file));
  const issues: Issue[] = [];
  const substituted = substituteEnv(raw, '', where.env, issues);
  const checked = check(fileSchema, substituted);
  if (!checked.ok) issues.push(...checked.issues);
  if (!checked.ok || issues.length > 0) return { ok: false, problems: issues.map(formatIssue) };
  const file: FileConfig = checked.value;

  const token = await _readToken(file, dir, where.env, issues);
  const config = _normalise(file, { file: where.file, dir, token, channels: buildChannels(file.channels ?? {}, issues) });
  issues.push(...crossCheck(config));
  await _containTransforms(config, file, issues);
  if (issues.length > 0) return { ok: false, problems: issues.map(formatIssue) };
  return { ok: true, config, ignored: checked.ignored, warnings: modelWarnings(config).map(formatIssue) };
}

/** Replaces every `${NAME}` inside string values by the environment variable NAME. */
export function substituteEnv(value: unknown, at: string, env: Env, issues: Issue[]): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
      const found = env[name];
      if (found === undefined) issues.push({ path: at, message: `environment variable ${name} is not set` });
      return found ?? '';
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteEnv(v, join(at, i), env, issues));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = substituteEnv(v, join(at, k), env, issues);
    return out;
  }
  return value;
}

/** Parses `"30m"`, `"1h"`, `"90s"`, `"500ms"`, `"2d"`; a bare number is minutes; `"0"` is off. */
export function parseDuration(value: unknown): number | null {
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string') return null;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (match === null) return null;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] ?? 'm'] ?? 60_000;
  return Math.round(Number(match[1]) * unit);
}

/** Normalises `hooks.path`: a leading slash added, trailing slashes removed. */
export function normaliseHooksPath(path: string): string {
  const trimmed = path.trim().replace(/\/+$/, '');
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

async function _readToken(file: FileConfig, dir: string, env: Env, issues: Issue[]): Promise<string | null> {
  const hooks = file.hooks;
  if (hooks?.token !== undefined && hooks.tokenFile !== undefined) {
    issues.push({ path: 'hooks.tokenFile', message: 'cannot be set together with hooks.token' });
    return null;
  }
  if (hooks?.token !== undefined) return hooks.token;
  const [source, at] =
    hooks?.tokenFile !== undefined
      ? [resolve(dir, hooks.tokenFile), 'hooks.tokenFile']
      : env['CREDENTIALS_DIRECTORY']
        ? [joinPath(env['CREDENTIALS_DIRECTORY'], 'hooks-token'), '']
        : [null, ''];
  if (source === null) return null;
  try {
    const token = (await readFile(source, 'utf8')).trim();
    if (token === '') issues.push({ path: at || 'hooks.token', message: `the file ${source} is empty` });
    return token || null;
  } catch (error) {
    // An absent credential just means none was passed; an absent tokenFile is the operator's mistake.
    if (at === '' && (error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    issues.push({ path: at || 'hooks.token', message: `cannot read ${source}: ${(error as NodeJS.ErrnoException).code ?? 'error'}` });
    return null;
  }
}

function _normalise(
  file: FileConfig,
  where: { file: string | null; dir: string; token: string | null; channels: ReadonlyMap<Channel, ConfiguredChannel> },
): Config {
  const hooks = file.hooks ?? {};
  const limit = hooks.authRateLimit ?? {};
  const agents = file.agents ?? {};
  const list = (agents.list ?? []).map((a) => ({ ...a, default: a.default ?? false }));
  const gateway = file.gateway ?? {};
  return {
    file: where.file,
    dir: where.dir,
    hooks: {
      enabled: hooks.enabled ?? false,
      token: where.token,
      path: normaliseHooksPath(hooks.path ?? DEFAULTS.path),
      maxBodyBytes: hooks.maxBodyBytes ?? DEFAULTS.maxBodyBytes,
      allowedAgentIds: hooks.allowedAgentIds ?? null,
      defaultSessionKey: hooks.defaultSessionKey ?? null,
      allowRequestSessionKey: hooks.allowRequestSessionKey ?? false,
      allowedSessionKeyPrefixes: hooks.allowedSessionKeyPrefixes ?? null,
      presets: hooks.presets ?? [],
      mappings: [
        ...(hooks.mappings ?? []).map((m, i) => toMapping(m, i)),
        ...(hooks.presets ?? []).map((name) => presetMappings(name, hooks.gmail ?? {})),
      ],
      transformsDir: resolve(where.dir, TRANSFORMS_ROOT, hooks.transformsDir ?? '.'),
      transformTimeoutMs: hooks.transformTimeoutMs ?? DEFAULTS.transformTimeoutMs,
      maxQueuedRuns: hooks.maxQueuedRuns ?? DEFAULTS.maxQueuedRuns,
      maxEventBytes: hooks.maxEventBytes ?? DEFAULTS.maxEventBytes,
      maxBacklogEvents: hooks.maxBacklogEvents ?? DEFAULTS.maxBacklogEvents,
      maxBacklogBytes: hooks.maxBacklogBytes ?? DEFAULTS.maxBacklogBytes,
      gmail: hooks.gmail ?? {},
      authRateLimit: {
        maxFailures: limit.maxFailures ?? DEFAULTS.maxFailures,
        windowSeconds: limit.windowSeconds ?? DEFAULTS.windowSeconds,
        lockoutSeconds: limit.lockoutSeconds ?? DEFAULTS.lockoutSeconds,
      },
      idempotencyTtlSeconds: hooks.idempotencyTtlSeconds ?? DEFAULTS.idempotencyTtlSeconds,
    },
    agents: {
      models: agents.defaults?.models ?? {},
      model: agents.defaults?.model ?? null,
      heartbeatEveryMs: agents.defaults?.heartbeat?.every ?? 0,
      list,
      defaultAgentId: (list.find((a) => a.default) ?? list[0])?.id ?? 'main',
      timeoutSeconds: agents.defaults?.timeoutSeconds ?? DEFAULTS.timeoutSeconds,
      maxConcurrent: agents.defaults?.maxConcurrent ?? DEFAULTS.maxConcurrent,
      historyMaxChars: agents.defaults?.historyMaxChars ?? DEFAULTS.historyMaxChars,
      heartbeat: {
        prompt: agents.defaults?.heartbeat?.prompt ?? DEFAULT_HEARTBEAT_PROMPT,
        target: agents.defaults?.heartbeat?.target ?? 'last',
        ...(agents.defaults?.heartbeat?.to === undefined ? {} : { to: agents.defaults.heartbeat.to }),
        ackMaxChars: agents.defaults?.heartbeat?.ackMaxChars ?? DEFAULTS.ackMaxChars,
      },
    },
    providers: file.models?.providers ?? {},
    gateway: {
      bind: gateway.bind ?? DEFAULTS.bind,
      port: gateway.port ?? DEFAULTS.port,
      trustedProxies: gateway.trustedProxies ?? [],
      authToken: gateway.auth?.token ?? null,
    },
    stateDir: file.state?.dir === undefined ? null : resolve(where.dir, file.state.dir),
    channels: where.channels,
  };
}

/** Rules that span several keys; each problem names the key to change. */
function crossCheck(config: Config): Issue[] {
  const issues: Issue[] = [];
  const { hooks } = config;
  if (hooks.enabled && hooks.token === null) {
    issues.push({ path: 'hooks.token', message: 'is required when hooks.enabled is true (or set hooks.tokenFile)' });
  }
  if (hooks.token !== null && hooks.token === config.gateway.authToken) {
    issues.push({ path: 'hooks.token', message: 'must differ from gateway.auth.token (the hook token must be dedicated)' });
  }
  const prefixes = hooks.allowedSessionKeyPrefixes;
  if (prefixes !== null && hooks.defaultSessionKey !== null && !hasPrefix(hooks.defaultSessionKey, prefixes)) {
    issues.push({ path: 'hooks.defaultSessionKey', message: 'must start with one of hooks.allowedSessionKeyPrefixes' });
  }
  if (prefixes !== null && hooks.defaultSessionKey === null && !prefixes.some((p) => GENERATED_KEY_PREFIX.startsWith(p.toLowerCase()))) {
    issues.push({
      path: 'hooks.allowedSessionKeyPrefixes',
      message: `must admit "${GENERATED_KEY_PREFIX}" when hooks.defaultSessionKey is not set (generated session keys start with it)`,
    });
  }
  const defaults = config.agents.list.filter((a) => a.default);
  if (defaults.length > 1) issues.push({ path: 'agents.list', message: 'may mark at most one agent as default' });
  const seen = new Set<string>();
  config.agents.list.forEach((agent, i) => {
    if (seen.has(agent.id)) issues.push({ path: `agents.list[${i}].id`, message: `duplicates agent "${agent.id}"` });
    seen.add(agent.id);
  });
  for (const key of Object.keys(config.agents.models)) {
    if (!PROVIDER_MODEL.regex.test(key)) issues.push({ path: join('agents.defaults.models', key), message: 'must be keyed "provider/model"' });
  }
  for (const [id, provider] of Object.entries(config.providers)) {
    const at = join('models.providers', id);
    if (provider.api === 'command' && (provider.command === undefined || provider.command.length === 0)) {
      issues.push({ path: `${at}.command`, message: 'is required for api "command" (the argv to run)' });
    }
    if (provider.api !== 'command' && provider.baseUrl === undefined) {
      issues.push({ path: `${at}.baseUrl`, message: `is required for api "${provider.api}"` });
    }
  }
  const { target, to } = config.agents.heartbeat;
  const route = checkRoute(config.channels, null, target, to);
  if (route !== null) {
    issues.push({ path: route.startsWith('to:') ? 'agents.defaults.heartbeat.to' : 'agents.defaults.heartbeat.target', message: route.replace(/^(to|channel): /, '') });
  }
  const explicit = config.hooks.mappings.length - config.hooks.presets.length;
  config.hooks.mappings.forEach((mapping, i) => {
    const at = i < explicit ? `hooks.mappings[${i}]` : `hooks.presets[${i - explicit}]`;
    issues.push(...checkMapping(mapping, at, hooks));
  });
  return issues;
}

/** Models the config names whose provider is not configured: runs on them would fail. */
function modelWarnings(config: Config): Issue[] {
  const named: [string, string][] = [
    ...Object.keys(config.agents.models).map((key): [string, string] => [join('agents.defaults.models', key), key]),
    ...(config.agents.model === null ? [] : [['agents.defaults.model', config.agents.model] as [string, string]]),
    ...config.agents.list.flatMap((a, i): [string, string][] => (a.model === undefined ? [] : [[`agents.list[${i}].model`, a.model]])),
  ];
  const issues: Issue[] = [];
  for (const [path, model] of named) {
    const key = Object.entries(config.agents.models).find(([, e]) => e.alias?.toLowerCase() === model.toLowerCase())?.[0] ?? model;
    const provider = key.slice(0, Math.max(0, key.indexOf('/')));
    if (provider === '') issues.push({ path, message: `"${model}" is neither "provider/model" nor an alias from agents.defaults.models` });
    else if (!Object.hasOwn(config.providers, provider)) issues.push({ path, message: `provider "${provider}" is not configured (models.providers.${provider})` });
  }
  return issues;
}

/** A mapping's own rules: what its action needs, and who may choose its session key. */
function checkMapping(mapping: Mapping, at: string, hooks: Config['hooks']): Issue[] {
  const issues: Issue[] = [];
  if (mapping.transform === undefined) {
    const [field, needed] = mapping.action === 'wake' ? ['textTemplate', mapping.textTemplate] : ['messageTemplate', mapping.messageTemplate];
    if (needed === undefined) issues.push({ path: `${at}.${field}`, message: `is required for a ${mapping.action} mapping without a transform` });
  }
  if (mapping.sessionKey === undefined) return issues;
  const prefixes = hooks.allowedSessionKeyPrefixes;
  if (payloadControlsKey(mapping)) {
    if (!hooks.allowRequestSessionKey || prefixes === null) {
      issues.push({
        path: `${at}.sessionKey`,
        message: 'is chosen by the payload, so it needs hooks.allowRequestSessionKey true and hooks.allowedSessionKeyPrefixes',
      });
    }
  } else if (prefixes !== null && !hasPrefix(mapping.sessionKey.source, prefixes)) {
    issues.push({ path: `${at}.sessionKey`, message: 'must start with one of hooks.allowedSessionKeyPrefixes' });
  }
  return issues;
}

// Transform paths are checked on real paths now, and again by the loader before each import.
async function _containTransforms(config: Config, file: FileConfig, issues: Issue[]): Promise<void> {
  const users = config.hooks.mappings.map((m, i) => [m, i] as const).filter(([m]) => m.transform !== undefined);
  if (users.length === 0 && file.hooks?.transformsDir === undefined) return;
  const root = resolve(config.dir, TRANSFORMS_ROOT);
  const dir = await resolveInside(root, file.hooks?.transformsDir ?? '.');
  if (!dir.ok) {
    issues.push({ path: 'hooks.transformsDir', message: `${dir.reason} (the transforms root is ${root})` });
    return;
  }
  config.hooks.transformsDir = dir.path;
  for (const [mapping, i] of users) {
    const found = await resolveModule(dir.path, mapping.transform!.module);
    if (found.ok) mapping.transform!.module = found.path;
    else issues.push({ path: `hooks.mappings[${i}].transform.module`, message: found.reason });
  }
}

/** Whether a session key starts with one of the prefixes, compared case-insensitively. */
export function hasPrefix(key: string, prefixes: readonly string[]): boolean {
  const lower = key.toLowerCase();
  return prefixes.some((p) => lower.startsWith(p.toLowerCase()));
}

/** Resolves a path from the config file against the config directory. */
export function resolveFromConfig(config: Config, path: string): string {
  return isAbsolute(path) ? path : resolve(config.dir, path);
}
