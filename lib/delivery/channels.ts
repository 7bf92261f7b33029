// The channels schema and building the configured adapters (each adapter's file imported when the config
// names it).

import type { Channel } from '../model/actions.ts';
import { type Issue, literal, number, object, optional, string } from '../schema.ts';
import type { Adapter } from './adapter.ts';

const text = string({ trim: true, nonEmpty: true });
const url = string({ trim: true, pattern: { regex: /^https?:\/\/\S+$/, rule: 'must be an http:// or https:// URL' } });

/** `channels`: one optional section per platform; `defaultTo` is the recipient when a run names none. */
export const channelsSchema = object({
  telegram: optional(object({ botToken: text, apiBase: optional(url), defaultTo: optional(text) })),
  discord: optional(object({ botToken: text, apiBase: optional(url), defaultTo: optional(text) })),
  slack: optional(object({ botToken: text, apiBase: optional(url), defaultTo: optional(text) })),
  mattermost: optional(
    object({
      serverUrl: url,
      token: text,
      maxLength: optional(number({ integer: true, min: 2 })),
      defaultTo: optional(text),
    }),
  ),
  signal: optional(object({ url, account: text, defaultTo: optional(text) })),
  whatsapp: optional(
    object({ phoneNumberId: text, accessToken: text, apiBase: optional(url), defaultTo: optional(text) }),
  ),
  imessage: optional(
    object({
      // BlueBubbles when serverUrl is set; otherwise the `imsg` CLI on this Mac.
      serverUrl: optional(url),
      password: optional(text),
      method: optional(literal('apple-script', 'private-api')),
      command: optional(text),
      defaultTo: optional(text),
    }),
  ),
  msteams: optional(
    object({
      appId: text,
      appPassword: text,
      tenantId: optional(text),
      serviceUrl: url,
      tokenUrl: optional(url),
      defaultTo: optional(text),
    }),
  ),
});

export type ChannelsConfig = NonNullable<ReturnType<typeof channelsSchema>>;

/** A configured channel: its adapter and the recipient used when a run names none. */
export interface ConfiguredChannel {
  adapter: Adapter;
  defaultTo?: string;
}

type Sections = Required<ChannelsConfig>;
type Make<K extends keyof Sections> = (
  section: NonNullable<Sections[K]>,
  fetchImpl: { fetch?: typeof fetch },
) => Adapter;

// Each platform's adapter, imported when a config first names that platform: a service that
// replies on Telegram alone never loads the other seven.
const ADAPTERS: { readonly [K in keyof Sections]: () => Promise<Make<K>> } = {
  telegram: async () => {
    const { createTelegramAdapter } = await import('./telegram.ts');
    return (c, f) => createTelegramAdapter({ botToken: c.botToken, apiBase: c.apiBase, ...f });
  },
  discord: async () => {
    const { createDiscordAdapter } = await import('./discord.ts');
    return (c, f) => createDiscordAdapter({ botToken: c.botToken, apiBase: c.apiBase, ...f });
  },
  slack: async () => {
    const { createSlackAdapter } = await import('./slack.ts');
    return (c, f) => createSlackAdapter({ botToken: c.botToken, apiBase: c.apiBase, ...f });
  },
  mattermost: async () => {
    const { createMattermostAdapter } = await import('./mattermost.ts');
    return (c, f) => createMattermostAdapter({ serverUrl: c.serverUrl, token: c.token, maxLength: c.maxLength, ...f });
  },
  signal: async () => {
    const { createSignalAdapter } = await import('./signal.ts');
    return (c, f) => createSignalAdapter({ url: c.url, account: c.account, ...f });
  },
  whatsapp: async () => {
    const { createWhatsAppAdapter } = await import('./whatsapp.ts');
    return (c, f) =>
      createWhatsAppAdapter({
        phoneNumberId: c.phoneNumberId,
        accessToken: c.accessToken,
        ...(c.apiBase ? { apiBase: c.apiBase } : {}),
        ...f,
      });
  },
  imessage: async () => {
    const { createBlueBubblesAdapter, createImsgAdapter } = await import('./imessage.ts');
    return (c, f) => {
      if (c.serverUrl === undefined) return createImsgAdapter(c.command === undefined ? {} : { command: c.command });
      if (c.password === undefined) {
        throw new TypeError('Invalid option password: required with serverUrl (BlueBubbles)');
      }
      return createBlueBubblesAdapter({
        serverUrl: c.serverUrl,
        password: c.password,
        ...(c.method ? { method: c.method } : {}),
        ...f,
      });
    };
  },
  msteams: async () => {
    const { createTeamsAdapter } = await import('./msteams.ts');
    return ({ appId, appPassword, tenantId, serviceUrl, tokenUrl }, f) =>
      createTeamsAdapter({
        appId,
        appPassword,
        serviceUrl,
        ...(tenantId ? { tenantId } : {}),
        ...(tokenUrl ? { tokenUrl } : {}),
        ...f,
      });
  },
};

/** Builds the adapters the config names (importing only theirs); an option an adapter refuses is reported at its key path. */
export async function buildChannels(
  config: ChannelsConfig,
  issues: Issue[],
  fetchImpl?: typeof fetch,
): Promise<Map<Channel, ConfiguredChannel>> {
  const built = new Map<Channel, ConfiguredChannel>();
  const f = fetchImpl === undefined ? {} : { fetch: fetchImpl };
  for (const channel of Object.keys(ADAPTERS) as (keyof Sections)[]) {
    const section = config[channel];
    if (section === undefined) continue;
    const make = (await ADAPTERS[channel]()) as Make<typeof channel>;
    let adapter: Adapter;
    try {
      adapter = make(section as never, f);
    } catch (error) {
      issues.push({ path: `channels.${channel}`, message: (error as Error).message });
      continue;
    }
    if (section.defaultTo !== undefined) {
      const problem = adapter.checkRecipient(section.defaultTo);
      if (problem !== null) issues.push({ path: `channels.${channel}.defaultTo`, message: problem });
    }
    built.set(channel, { adapter, ...(section.defaultTo === undefined ? {} : { defaultTo: section.defaultTo }) });
  }
  return built;
}
