// The config file's schema: every key, its type and its own rule. Rules that span keys are in checks.ts.

import { THINKING_LEVELS } from '../model/actions.ts';
import { ALERT_KINDS, type AlertKind } from '../model/alerts.ts';
import { channel as channelName } from '../hooks/channel-names.ts';
import { type Cidr, parseCidr } from '../guard/address.ts';
import { channelsSchema } from '../delivery/channels.ts';
import { mappingSchema } from '../hooks/mappings.ts';
import { onCompleteSchema } from '../hooks/on-complete.ts';
import { budgetSchema, rateLimitSchema, wakeRateLimitSchema } from '../hooks/limits.ts';
import { array, boolean, literal, number, object, optional, record, refine, type Schema, string } from '../schema.ts';
import { trimTrailingSlashes } from '../text.ts';
import { stateSchema } from './state-schema.ts';

/** Keys of OpenClaw's `hooks` section that this service does not act on: they load, and are reported. */
export const IGNORED_HOOK_KEYS = ['internal'] as const;

/** The model API wire formats a provider may speak. */
export const PROVIDER_APIS = ['openai-completions', 'anthropic-messages', 'command'] as const;

/** Where transform children run: on the server's own runtime, or on Deno whatever the server runs on. */
export const TRANSFORM_RUNTIMES = ['server', 'deno'] as const;

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

// An origin exactly (scheme://host[:port], as URL writes it: no path, query, user or default port), so
// that a request's callbackUrl is compared with it as a whole and never by prefix.
const callbackOriginSchema = refine(string({ trim: true, nonEmpty: true }), (value) => {
  const rule = 'must be an origin such as "https://ci.example.com" or "http://127.0.0.1:8080" (no path)';
  if (!URL.canParse(value)) return rule;
  const url = new URL(value);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return rule;
  return url.origin === value.replace(/\/$/, '') ? null : `${rule}; as an origin it is "${url.origin}"`;
});

// A kind an alert can be sent for.
const alertKind: Schema<AlertKind> = (value, at, report) => {
  if ((ALERT_KINDS as readonly unknown[]).includes(value)) return value as AlertKind;
  report.issues.push({ path: at, message: `must be one of ${ALERT_KINDS.map((k) => JSON.stringify(k)).join(', ')}` });
  return undefined;
};

/** The config file as written: `check(fileSchema, value)` validates it. */
export const fileSchema = object({
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
        transformMaxResultBytes: optional(number({ integer: true, min: 1 })),
        transformRuntime: optional(literal(...TRANSFORM_RUNTIMES)),
        transformDenoPath: optional(string({ nonEmpty: true })),
        maxQueuedRuns: optional(number({ integer: true, min: 1 })),
        agent: optional(
          object({
            concurrency: optional(number({ integer: true, min: 1 })),
            maxQueued: optional(number({ integer: true, min: 1 })),
            rateLimit: optional(rateLimitSchema),
            budget: optional(budgetSchema),
          }),
        ),
        wake: optional(object({ rateLimit: optional(wakeRateLimitSchema) })),
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
            hookToken: optional(string({ nonEmpty: true })),
            hookUrl: optional(string({ nonEmpty: true })),
            includeBody: optional(boolean),
            maxBytes: optional(number({ integer: true, min: 1 })),
            renewEveryMinutes: optional(number({ integer: true, min: 1 })),
            allowUnsafeExternalContent: optional(boolean),
            // A literal model id: braces would make it a template the payload could steer.
            model: optional(
              string({ trim: true, nonEmpty: true, pattern: { regex: /^[^{}]*$/, rule: 'may not contain braces' } }),
            ),
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
        allowCompletionReply: optional(boolean),
        onComplete: optional(onCompleteSchema),
        callbackOrigins: optional(array(callbackOriginSchema)),
        unknownPayloadFields: optional(literal('refuse', 'log')),
        ledger: optional(
          object({
            enabled: optional(boolean),
            maxEntries: optional(number({ integer: true, min: 1 })),
            maxBytes: optional(number({ integer: true, min: 65_536 })),
            maxAgeSeconds: optional(seconds),
            maxBodyBytes: optional(number({ integer: true, min: 0 })),
            coalesceSeconds: optional(seconds),
            unauthenticated: optional(
              object({
                maxEntries: optional(number({ integer: true, min: 1 })),
                maxBytes: optional(number({ integer: true, min: 65_536 })),
                maxBodyBytes: optional(number({ integer: true, min: 0 })),
              }),
            ),
          }),
        ),
        forward: optional(
          object({
            url: string({
              trim: true,
              pattern: { regex: /^https?:\/\/\S+$/, rule: 'must be an http:// or https:// URL' },
            }),
            token: string({ trim: true, nonEmpty: true }),
            maxAgeSeconds: optional(seconds),
            agents: optional(array(string({ trim: true, nonEmpty: true }))),
            agentId: optional(string({ trim: true, nonEmpty: true })),
            maxPendingWakes: optional(number({ integer: true, min: 1, max: 1000 })),
          }),
        ),
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
              target: optional(channelName),
              to: optional(string({ trim: true, nonEmpty: true })),
              ackMaxChars: optional(number({ integer: true, min: 0 })),
            }),
          ),
        }),
      ),
      list: optional(
        array(
          object({
            id: string({
              trim: true,
              nonEmpty: true,
              pattern: { regex: /^[\w.-]+$/, rule: 'may contain only letters, digits, ".", "_" and "-"' },
            }),
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
            baseUrl: optional(
              string({
                trim: true,
                pattern: { regex: /^https?:\/\/\S+$/, rule: 'must be an http:// or https:// URL' },
              }),
            ),
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
  state: optional(stateSchema),
  channels: optional(channelsSchema),
  log: optional(
    object({
      requests: optional(literal('all', 'refusals', 'none')),
      maxLinesPerSecond: optional(number({ integer: true, min: 1 })),
    }),
  ),
  alerts: optional(
    object({
      channel: channelName,
      to: optional(string({ trim: true, nonEmpty: true })),
      on: optional(array(alertKind)),
      throttleSeconds: optional(seconds),
      signatureFailures: optional(
        object({
          count: optional(number({ integer: true, min: 1, max: 10_000 })),
          minutes: optional(number({ above: 0, max: 1440 })),
        }),
      ),
    }),
  ),
  inspector: optional(
    object({
      port: optional(number({ integer: true, min: 0, max: 65535 })),
      bind: optional(string({ trim: true, nonEmpty: true })),
      allowNonLoopback: optional(boolean),
      idleMinutes: optional(number({ integer: true, min: 1, max: 1440 })),
      maxSessionHours: optional(number({ integer: true, min: 1, max: 168 })),
    }),
  ),
});

/** The config file's value once it passed the schema. */
export type FileConfig = NonNullable<ReturnType<typeof fileSchema>>;

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
  const trimmed = trimTrailingSlashes(path.trim());
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}
