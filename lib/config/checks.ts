// The rules that span several keys, checked on the normalised config; each problem names the key to change.

import { checkRoute, routesOf } from '../policy/route.ts';
import { resolveModel } from '../policy/models.ts';
import { admitsEveryAgentSession, GENERATED_KEY_PREFIX, hasPrefix } from '../policy/session-key.ts';
import { type Mapping, payloadControlsKey } from '../hooks/mappings.ts';
import { checkSignatures } from '../guard/signatures/config.ts';
import { type Issue, join } from '../schema.ts';
import { isCredentialHeader } from '../guard/credentials.ts';
import { isTemplated, type Template } from '../hooks/template.ts';
import type { Config } from './types.ts';

/** The hook names the server answers itself, never through a mapping. */
export const BUILT_IN_HOOKS = ['wake', 'agent'] as const;

const PROVIDER_MODEL = { regex: /^[^/\s]+\/\S+$/, rule: 'must be written "provider/model"' };

/** Rules that span several keys; each problem names the key to change. */
export function checkConfig(config: Config): Issue[] {
  return [
    ..._hookKeys(config),
    ..._agents(config),
    ..._providers(config),
    ..._heartbeatRoute(config),
    ..._mappings(config),
    ..._inspector(config),
    ..._alerts(config),
  ];
}

// The hook token and the session keys hooks may choose.
function _hookKeys(config: Config): Issue[] {
  const issues: Issue[] = [];
  const { hooks } = config;
  if (hooks.enabled && hooks.token === null) {
    issues.push({ path: 'hooks.token', message: 'is required when hooks.enabled is true (or set hooks.tokenFile)' });
  }
  if (hooks.token !== null && hooks.token === config.gateway.authToken) {
    issues.push({
      path: 'hooks.token',
      message: 'must differ from gateway.auth.token (the hook token must be dedicated)',
    });
  }
  const prefixes = hooks.allowedSessionKeyPrefixes;
  if (prefixes !== null && hooks.defaultSessionKey !== null && !hasPrefix(hooks.defaultSessionKey, prefixes)) {
    issues.push({ path: 'hooks.defaultSessionKey', message: 'must start with one of hooks.allowedSessionKeyPrefixes' });
  }
  if (
    prefixes !== null && hooks.defaultSessionKey === null &&
    !prefixes.some((p) => GENERATED_KEY_PREFIX.startsWith(p.toLowerCase()))
  ) {
    issues.push({
      path: 'hooks.allowedSessionKeyPrefixes',
      message:
        `must admit "${GENERATED_KEY_PREFIX}" when hooks.defaultSessionKey is not set (generated session keys start with it)`,
    });
  }
  return issues;
}

// One default agent at most, ids once each, model keys written provider/model.
function _agents(config: Config): Issue[] {
  const issues: Issue[] = [];
  const defaults = config.agents.list.filter((a) => a.default);
  if (defaults.length > 1) issues.push({ path: 'agents.list', message: 'may mark at most one agent as default' });
  const seen = new Set<string>();
  config.agents.list.forEach((agent, i) => {
    if (seen.has(agent.id)) issues.push({ path: `agents.list[${i}].id`, message: `duplicates agent "${agent.id}"` });
    seen.add(agent.id);
  });
  for (const key of Object.keys(config.agents.models)) {
    if (!PROVIDER_MODEL.regex.test(key)) {
      issues.push({ path: join('agents.defaults.models', key), message: 'must be keyed "provider/model"' });
    }
  }
  return issues;
}

// What each provider's api needs: a command to run, or a base URL.
function _providers(config: Config): Issue[] {
  const issues: Issue[] = [];
  for (const [id, provider] of Object.entries(config.providers)) {
    const at = join('models.providers', id);
    if (provider.api === 'command' && (provider.command === undefined || provider.command.length === 0)) {
      issues.push({ path: `${at}.command`, message: 'is required for api "command" (the argv to run)' });
    }
    if (provider.api !== 'command' && provider.baseUrl === undefined) {
      issues.push({ path: `${at}.baseUrl`, message: `is required for api "${provider.api}"` });
    }
  }
  return issues;
}

// The heartbeat's target and recipient, against the configured channels.
function _heartbeatRoute(config: Config): Issue[] {
  const { target, to } = config.agents.heartbeat;
  const route = checkRoute(routesOf(config.channels), null, target, to);
  if (route === null) return [];
  return [{
    path: route.startsWith('to:') ? 'agents.defaults.heartbeat.to' : 'agents.defaults.heartbeat.target',
    message: route.replace(/^(to|channel): /, ''),
  }];
}

// Each mapping (written, or a preset's), and the signatures they name.
function _mappings(config: Config): Issue[] {
  const { hooks } = config;
  const explicit = hooks.mappings.length - hooks.presets.length;
  const at = (i: number) => (i < explicit ? `hooks.mappings[${i}]` : `hooks.presets[${i - explicit}]`);
  return [
    ...hooks.mappings.flatMap((
      mapping,
      i,
    ) => [...checkMapping(mapping, at(i), hooks), ...checkNotify(mapping, at(i), config)]),
    ...checkSignatures(hooks.mappings, at, hooks.token),
  ];
}

// The inspector's own listener: on loopback unless allowed otherwise, and not on the hooks port.
function _inspector(config: Config): Issue[] {
  const issues: Issue[] = [];
  const { inspector } = config;
  if (inspector !== null && !inspector.allowNonLoopback && !isLoopbackHost(inspector.bind)) {
    issues.push({
      path: 'inspector.bind',
      message: 'must be a loopback address (127.x.x.x, ::1 or localhost) unless inspector.allowNonLoopback is true',
    });
  }
  if (inspector !== null && inspector.port !== 0 && inspector.port === config.gateway.port) {
    issues.push({
      path: 'inspector.port',
      message: 'must differ from gateway.port (the inspector has a listener of its own)',
    });
  }
  return issues;
}

/** Whether a bind address reaches this machine only. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/** Models the config names whose provider is not configured: runs on them would fail. */
export function modelWarnings(config: Config): Issue[] {
  const named: [string, string][] = [
    ...Object.keys(config.agents.models).map((key): [string, string] => [join('agents.defaults.models', key), key]),
    ...(config.agents.model === null ? [] : [['agents.defaults.model', config.agents.model] as [string, string]]),
    ...config.agents.list.flatMap((
      a,
      i,
    ): [string, string][] => (a.model === undefined ? [] : [[`agents.list[${i}].model`, a.model]])),
  ];
  const issues: Issue[] = [];
  for (const [path, model] of named) {
    const resolved = resolveModel(model, config.agents.models);
    if (resolved === null) {
      issues.push({ path, message: `"${model}" is neither "provider/model" nor an alias from agents.defaults.models` });
    } else if (!Object.hasOwn(config.providers, resolved.provider)) {
      issues.push({
        path,
        message: `provider "${resolved.provider}" is not configured (models.providers.${resolved.provider})`,
      });
    }
  }
  return issues;
}

/**
 * Mappings that would take the gmail hook's requests before the gmail preset: one without a path
 * (matched by nothing, or by `source` alone) is tried first for every request made with the hook
 * token. Requests made with `hooks.gmail.hookToken` pass it over (that token opens only mappings
 * on the path "gmail"), so such a mapping is a mistake either way.
 */
export function gmailShadowWarnings(config: Config): Issue[] {
  const { mappings, presets } = config.hooks;
  const preset = mappings.findIndex((m) => m.id === 'preset:gmail');
  if (!presets.includes('gmail') || preset === -1) return [];
  const issues: Issue[] = [];
  mappings.slice(0, preset).forEach((m, i) => {
    if (m.match.path !== undefined || i >= mappings.length - presets.length) return;
    const how = m.match.source === undefined
      ? 'has no path, so it takes any hook'
      : 'is matched by source alone, so it takes any hook whose payload names that source';
    issues.push({
      path: `hooks.mappings[${i}].match`,
      message:
        `${how}, the gmail hook too: it shadows the gmail preset for requests made with hooks.token (those made with hooks.gmail.hookToken reach only mappings on the path "gmail"); give it a match.path`,
    });
  });
  return issues;
}

/**
 * Session-key prefixes that admit more than they seem to: a bare `agent:` admits every session of
 * every agent a run may go to, and `agent:<id>:` every session of that agent, its main one too.
 */
export function sessionKeyWarnings(config: Config): Issue[] {
  const prefixes = config.hooks.allowedSessionKeyPrefixes ?? [];
  return prefixes.flatMap((prefix, i) => {
    if (!admitsEveryAgentSession(prefix)) return [];
    const path = `hooks.allowedSessionKeyPrefixes[${i}]`;
    const one = /^agent:([^:]+):$/i.exec(prefix)?.[1];
    if (one !== undefined) {
      return [{
        path,
        message:
          `${JSON.stringify(prefix)} admits every session of agent ${
            JSON.stringify(one)
          }, its main session included: ` +
          `"${prefix}main" passes both checks and runs as "main" once its "${prefix}" is dropped; list "${prefix}<rest>" prefixes instead`,
      }];
    }
    return [{
      path,
      message:
        `${JSON.stringify(prefix)} admits every session of every agent a run may go to, the main session included: ` +
        `a key is checked as sent and as re-scoped to its agent, so "agent:<id>:main" passes, and runs as "main" once its "agent:<id>:" is dropped; ` +
        `list "agent:<id>:<rest>" prefixes instead`,
    }];
  });
}

// The templated fields of a mapping, by key.
const _TEMPLATED = [
  'name',
  'textTemplate',
  'messageTemplate',
  'sessionKey',
  'to',
  'accountId',
  'model',
  'thinking',
] as const;

// Names a template path may hold but never resolves through (templates read own data properties only).
const _NEVER = new Set(['__proto__', 'prototype', 'constructor']);

// The keys of a mapping that only an agent run or a wake reads.
const _NOT_FOR_NOTIFY = [
  'textTemplate',
  'sessionKey',
  'sessionMode',
  'agentId',
  'deliver',
  'accountId',
  'model',
  'thinking',
  'timeoutSeconds',
  'waitForCompletion',
] as const;

/** Keys a notify mapping sets that it never reads (no model call, no session, no run to wait for): a sign it was meant as an agent mapping. */
export function notifyWarnings(config: Config): Issue[] {
  return config.hooks.mappings.flatMap((mapping, i) => {
    if (mapping.action !== 'notify') return [];
    return _NOT_FOR_NOTIFY.filter((key) => mapping[key] !== undefined).map((key) => ({
      path: `hooks.mappings[${i}].${key}`,
      message: 'is not read by a notify mapping, which sends its message with no model call, session or run',
    }));
  });
}

/**
 * Template placeholders that can never resolve, whatever arrives: a credential header the mapping
 * does not allow (templates never see those), `query.token` (a token in the URL is refused before
 * any mapping runs), and a payload path through `__proto__`, `prototype` or `constructor`.
 */
export function templateWarnings(config: Config): Issue[] {
  const issues: Issue[] = [];
  config.hooks.mappings.forEach((mapping, i) => {
    if (mapping.id.startsWith('preset:')) return;
    for (const key of _TEMPLATED) {
      const template: Template | undefined = mapping[key];
      for (const part of template?.parts ?? []) {
        if (typeof part === 'string') continue;
        let why: string | null = null;
        if (
          part.root === 'headers' && isCredentialHeader(part.name) &&
          !mapping.allowCredentialHeaders.has(part.name.toLowerCase())
        ) {
          why = 'credential headers are hidden from templates unless the mapping names them in allowCredentialHeaders';
        } else if (part.root === 'query' && part.name.toLowerCase() === 'token') {
          why = 'a request with a token in its URL is refused before any mapping runs';
        } else if (part.root === 'payload' && part.path.some((s) => typeof s === 'string' && _NEVER.has(s))) {
          why = 'templates read own data properties only, never __proto__, prototype or constructor';
        }
        if (why !== null) {
          issues.push({
            path: `hooks.mappings[${i}].${key}`,
            message: `{{${part.text}}} can never resolve (it renders empty): ${why}`,
          });
        }
      }
    }
  });
  return issues;
}

/** The alerts' destination: a configured channel, and a recipient written out or the channel's `defaultTo`. */
function _alerts(config: Config): Issue[] {
  const { alerts } = config;
  if (alerts === null) return [];
  if ((alerts.channel as string) === 'last') {
    return [{ path: 'alerts.channel', message: 'must name a configured channel (not "last")' }];
  }
  const route = checkRoute(routesOf(config.channels), null, alerts.channel, alerts.to ?? undefined);
  if (route !== null) {
    return [{
      path: route.startsWith('to:') ? 'alerts.to' : 'alerts.channel',
      message: route.replace(/^(to|channel): /, ''),
    }];
  }
  if (alerts.to === null && config.channels[alerts.channel]?.defaultTo === undefined) {
    return [{ path: 'alerts.to', message: `is required unless channels.${alerts.channel}.defaultTo is set` }];
  }
  return [];
}

/**
 * A notify mapping's destination is the configuration's, fixed when it loads: a concrete channel
 * of this server (forward mode has none: the upstream delivers), and a recipient written out (or
 * the channel's `defaultTo`), never rendered from the payload.
 */
function checkNotify(mapping: Mapping, at: string, config: Config): Issue[] {
  if (mapping.action !== 'notify') return [];
  if (config.hooks.forward !== null) {
    return [{
      path: `${at}.action`,
      message:
        '"notify" needs a channel of this server, and in forward mode (hooks.forward) the upstream gateway delivers',
    }];
  }
  if (mapping.channel === 'last') {
    return [{
      path: `${at}.channel`,
      message: 'is required for a notify mapping, and must name a configured channel (not "last")',
    }];
  }
  const issues: Issue[] = [];
  const to = mapping.to?.source.trim();
  if (mapping.to !== undefined && isTemplated(mapping.to.source)) {
    issues.push({
      path: `${at}.to`,
      message:
        "must be written without placeholders for a notify mapping: its recipient is the configuration's, never the payload's",
    });
  }
  const route = checkRoute(routesOf(config.channels), null, mapping.channel, issues.length > 0 ? undefined : to);
  if (route !== null) {
    issues.push({
      path: route.startsWith('to:') ? `${at}.to` : `${at}.channel`,
      message: route.replace(/^(to|channel): /, ''),
    });
  } else if (to === undefined && config.channels[mapping.channel]?.defaultTo === undefined) {
    issues.push({
      path: `${at}.to`,
      message: `is required for a notify mapping unless channels.${mapping.channel}.defaultTo is set`,
    });
  }
  return issues;
}

/** A mapping's own rules: what its action needs, and who may choose its session key. */
function checkMapping(mapping: Mapping, at: string, hooks: Config['hooks']): Issue[] {
  const issues: Issue[] = [];
  const path = mapping.match.path;
  if (path !== undefined && (BUILT_IN_HOOKS as readonly string[]).includes(path)) {
    // Those requests never reach a mapping: its template would be ignored, while its signature would open the built-in endpoint.
    issues.push({
      path: `${at}.match.path`,
      message: `may not be "${path}": ${hooks.path}/${path} is the built-in endpoint`,
    });
  }
  if (mapping.transform === undefined) {
    const [field, needed] = mapping.action === 'wake'
      ? ['textTemplate', mapping.textTemplate]
      : ['messageTemplate', mapping.messageTemplate];
    if (needed === undefined) {
      issues.push({
        path: `${at}.${field}`,
        message: `is required for a ${mapping.action} mapping without a transform`,
      });
    }
  }
  if (mapping.sessionKey === undefined) return issues;
  const prefixes = hooks.allowedSessionKeyPrefixes;
  if (payloadControlsKey(mapping)) {
    if (!hooks.allowRequestSessionKey || prefixes === null) {
      issues.push({
        path: `${at}.sessionKey`,
        message:
          'is chosen by the payload, so it needs hooks.allowRequestSessionKey true and hooks.allowedSessionKeyPrefixes',
      });
    }
  } else if (prefixes !== null && !hasPrefix(mapping.sessionKey.source, prefixes)) {
    issues.push({ path: `${at}.sessionKey`, message: 'must start with one of hooks.allowedSessionKeyPrefixes' });
  }
  return issues;
}
