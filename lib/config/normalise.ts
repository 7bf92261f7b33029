// The defaults, applied as plain data.

import { resolve } from 'node:path';
import { presetMappings, toMapping } from '../hooks/mappings.ts';
import { CALLBACK_MAX_AGE_SECONDS } from '../hooks/on-complete.ts';
import { ALERT_KINDS } from '../model/alerts.ts';
import { type FileConfig, normaliseHooksPath } from './file-schema.ts';
import type { Config } from './types.ts';
import { trimTrailingSlashes } from '../text.ts';

/** The default heartbeat prompt: read the events, act if needed, else acknowledge. */
export const DEFAULT_HEARTBEAT_PROMPT =
  'Heartbeat. Read the system events below, which arrived since your last heartbeat. If one needs the user, ' +
  'write the message they should get. If nothing needs them, answer exactly HEARTBEAT_OK.';

/** Defaults of the keys a config may leave out. */
export const DEFAULTS = {
  path: '/hooks',
  maxBodyBytes: 262_144,
  maxFailures: 20,
  windowSeconds: 60,
  lockoutSeconds: 60,
  idempotencyTtlSeconds: 86_400,
  forwardMaxAgeSeconds: 86_400,
  forwardMaxPendingWakes: 20,
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
  transformMaxResultBytes: 1_048_576,
  ledgerMaxEntries: 10_000,
  ledgerMaxBytes: 67_108_864,
  ledgerMaxAgeSeconds: 604_800,
  ledgerMaxBodyBytes: 65_536,
  ledgerCoalesceSeconds: 60,
  ledgerUnauthenticatedMaxEntries: 2_000,
  ledgerUnauthenticatedMaxBytes: 4_194_304,
  ledgerUnauthenticatedMaxBodyBytes: 16_384,
  transformRuntime: 'server',
  inspectorBind: '127.0.0.1',
  inspectorIdleMinutes: 30,
  logRequests: 'all',
  logMaxLinesPerSecond: 200,
  inspectorMaxSessionHours: 12,
  alertsThrottleSeconds: 900,
  alertsSignatureFailures: 10,
  alertsSignatureMinutes: 5,
  callbackMaxAgeSeconds: CALLBACK_MAX_AGE_SECONDS,
} as const;

/**
 * Where each default sits in the file, as a key path. Typed over DEFAULTS, so a default added
 * without its path does not compile: `config get` and the man page check cannot fall behind.
 */
export const DEFAULT_PATHS: { readonly [K in keyof typeof DEFAULTS]: string } = {
  path: 'hooks.path',
  maxBodyBytes: 'hooks.maxBodyBytes',
  maxFailures: 'hooks.authRateLimit.maxFailures',
  windowSeconds: 'hooks.authRateLimit.windowSeconds',
  lockoutSeconds: 'hooks.authRateLimit.lockoutSeconds',
  idempotencyTtlSeconds: 'hooks.idempotencyTtlSeconds',
  forwardMaxAgeSeconds: 'hooks.forward.maxAgeSeconds',
  forwardMaxPendingWakes: 'hooks.forward.maxPendingWakes',
  bind: 'gateway.bind',
  port: 'gateway.port',
  transformTimeoutMs: 'hooks.transformTimeoutMs',
  maxQueuedRuns: 'hooks.maxQueuedRuns',
  maxEventBytes: 'hooks.maxEventBytes',
  maxBacklogEvents: 'hooks.maxBacklogEvents',
  maxBacklogBytes: 'hooks.maxBacklogBytes',
  timeoutSeconds: 'agents.defaults.timeoutSeconds',
  maxConcurrent: 'agents.defaults.maxConcurrent',
  historyMaxChars: 'agents.defaults.historyMaxChars',
  ackMaxChars: 'agents.defaults.heartbeat.ackMaxChars',
  transformMaxResultBytes: 'hooks.transformMaxResultBytes',
  ledgerMaxEntries: 'hooks.ledger.maxEntries',
  ledgerMaxBytes: 'hooks.ledger.maxBytes',
  ledgerMaxAgeSeconds: 'hooks.ledger.maxAgeSeconds',
  ledgerMaxBodyBytes: 'hooks.ledger.maxBodyBytes',
  ledgerCoalesceSeconds: 'hooks.ledger.coalesceSeconds',
  ledgerUnauthenticatedMaxEntries: 'hooks.ledger.unauthenticated.maxEntries',
  ledgerUnauthenticatedMaxBytes: 'hooks.ledger.unauthenticated.maxBytes',
  ledgerUnauthenticatedMaxBodyBytes: 'hooks.ledger.unauthenticated.maxBodyBytes',
  transformRuntime: 'hooks.transformRuntime',
  inspectorBind: 'inspector.bind',
  inspectorIdleMinutes: 'inspector.idleMinutes',
  logRequests: 'log.requests',
  logMaxLinesPerSecond: 'log.maxLinesPerSecond',
  inspectorMaxSessionHours: 'inspector.maxSessionHours',
  alertsThrottleSeconds: 'alerts.throttleSeconds',
  alertsSignatureFailures: 'alerts.signatureFailures.count',
  alertsSignatureMinutes: 'alerts.signatureFailures.minutes',
  callbackMaxAgeSeconds: 'hooks.onComplete.maxAgeSeconds',
};

/** Transforms live below this folder of the config directory, and nowhere else. */
export const TRANSFORMS_ROOT = 'hooks/transforms';

type _Where = { file: string | null; dir: string; token: string | null; transformsDir?: string };

/**
 * The validated file with every default applied, as plain data. `transformsDir` is the real path
 * `containTransforms` found (or, when it did not look, the lexical one).
 */
export function normalise(file: FileConfig, where: _Where): Config {
  const gateway = file.gateway ?? {};
  return {
    file: where.file,
    dir: where.dir,
    hooks: _hooks(file.hooks ?? {}, where),
    agents: _agents(file.agents ?? {}),
    providers: file.models?.providers ?? {},
    gateway: {
      bind: gateway.bind ?? DEFAULTS.bind,
      port: gateway.port ?? DEFAULTS.port,
      trustedProxies: gateway.trustedProxies ?? [],
      authToken: gateway.auth?.token ?? null,
    },
    stateDir: file.state?.dir === undefined ? null : resolve(where.dir, file.state.dir),
    channels: file.channels ?? {},
    log: {
      requests: file.log?.requests ?? DEFAULTS.logRequests,
      maxLinesPerSecond: file.log?.maxLinesPerSecond ?? DEFAULTS.logMaxLinesPerSecond,
    },
    alerts: file.alerts === undefined ? null : _alerts(file.alerts),
    inspector: file.inspector?.port === undefined ? null : {
      port: file.inspector.port,
      bind: file.inspector.bind ?? DEFAULTS.inspectorBind,
      allowNonLoopback: file.inspector.allowNonLoopback ?? false,
      idleMinutes: file.inspector.idleMinutes ?? DEFAULTS.inspectorIdleMinutes,
      maxSessionHours: file.inspector.maxSessionHours ?? DEFAULTS.inspectorMaxSessionHours,
    },
  };
}

function _alerts(alerts: NonNullable<FileConfig['alerts']>): NonNullable<Config['alerts']> {
  // A channel of `last` is refused by the config check; it is kept here as written until then.
  return {
    channel: alerts.channel as NonNullable<Config['alerts']>['channel'],
    to: alerts.to ?? null,
    on: [...new Set(alerts.on ?? ALERT_KINDS)],
    throttleSeconds: alerts.throttleSeconds ?? DEFAULTS.alertsThrottleSeconds,
    signatureFailures: {
      count: alerts.signatureFailures?.count ?? DEFAULTS.alertsSignatureFailures,
      minutes: alerts.signatureFailures?.minutes ?? DEFAULTS.alertsSignatureMinutes,
    },
  };
}

function _hooks(hooks: NonNullable<FileConfig['hooks']>, where: _Where): Config['hooks'] {
  const limit = hooks.authRateLimit ?? {};
  return {
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
    transformsDir: where.transformsDir ?? resolve(where.dir, TRANSFORMS_ROOT, hooks.transformsDir ?? '.'),
    transformTimeoutMs: hooks.transformTimeoutMs ?? DEFAULTS.transformTimeoutMs,
    transformMaxResultBytes: hooks.transformMaxResultBytes ?? DEFAULTS.transformMaxResultBytes,
    transformRuntime: hooks.transformRuntime ?? DEFAULTS.transformRuntime,
    // Lexical here; load.ts puts the binary it found (or the one on PATH) in its place.
    transformDenoPath: hooks.transformDenoPath === undefined ? null : resolve(where.dir, hooks.transformDenoPath),
    maxQueuedRuns: hooks.maxQueuedRuns ?? DEFAULTS.maxQueuedRuns,
    agent: hooks.agent ?? {},
    wake: hooks.wake ?? {},
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
    allowCompletionReply: hooks.allowCompletionReply ?? false,
    onComplete: hooks.onComplete ?? null,
    callbackOrigins: (hooks.callbackOrigins ?? []).map((origin) => new URL(origin).origin),
    unknownPayloadFields: hooks.unknownPayloadFields ?? 'refuse',
    ledger: _ledger(hooks.ledger ?? {}),
    forward: hooks.forward === undefined ? null : _forward(hooks.forward),
  };
}

function _forward(
  forward: NonNullable<NonNullable<FileConfig['hooks']>['forward']>,
): NonNullable<Config['hooks']['forward']> {
  return {
    url: trimTrailingSlashes(forward.url),
    token: forward.token,
    maxAgeSeconds: forward.maxAgeSeconds ?? DEFAULTS.forwardMaxAgeSeconds,
    agents: forward.agents ?? null,
    agentId: forward.agentId ?? null,
    maxPendingWakes: forward.maxPendingWakes ?? DEFAULTS.forwardMaxPendingWakes,
  };
}

function _ledger(ledger: NonNullable<NonNullable<FileConfig['hooks']>['ledger']>): Config['hooks']['ledger'] {
  const open = ledger.unauthenticated ?? {};
  return {
    enabled: ledger.enabled ?? true,
    maxEntries: ledger.maxEntries ?? DEFAULTS.ledgerMaxEntries,
    maxBytes: ledger.maxBytes ?? DEFAULTS.ledgerMaxBytes,
    maxAgeSeconds: ledger.maxAgeSeconds ?? DEFAULTS.ledgerMaxAgeSeconds,
    maxBodyBytes: ledger.maxBodyBytes ?? DEFAULTS.ledgerMaxBodyBytes,
    coalesceSeconds: ledger.coalesceSeconds ?? DEFAULTS.ledgerCoalesceSeconds,
    unauthenticated: {
      maxEntries: open.maxEntries ?? DEFAULTS.ledgerUnauthenticatedMaxEntries,
      maxBytes: open.maxBytes ?? DEFAULTS.ledgerUnauthenticatedMaxBytes,
      maxBodyBytes: open.maxBodyBytes ?? DEFAULTS.ledgerUnauthenticatedMaxBodyBytes,
    },
  };
}

function _agents(agents: NonNullable<FileConfig['agents']>): Config['agents'] {
  const list = (agents.list ?? []).map((a) => ({ ...a, default: a.default ?? false }));
  const defaults = agents.defaults ?? {};
  return {
    models: defaults.models ?? {},
    model: defaults.model ?? null,
    heartbeatEveryMs: defaults.heartbeat?.every ?? 0,
    list,
    defaultAgentId: (list.find((a) => a.default) ?? list[0])?.id ?? 'main',
    timeoutSeconds: defaults.timeoutSeconds ?? DEFAULTS.timeoutSeconds,
    maxConcurrent: defaults.maxConcurrent ?? DEFAULTS.maxConcurrent,
    historyMaxChars: defaults.historyMaxChars ?? DEFAULTS.historyMaxChars,
    heartbeat: {
      prompt: defaults.heartbeat?.prompt ?? DEFAULT_HEARTBEAT_PROMPT,
      target: defaults.heartbeat?.target ?? 'last',
      ...(defaults.heartbeat?.to === undefined ? {} : { to: defaults.heartbeat.to }),
      ackMaxChars: defaults.heartbeat?.ackMaxChars ?? DEFAULTS.ackMaxChars,
    },
  };
}
