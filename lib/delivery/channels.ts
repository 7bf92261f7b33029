import type { Channel } from '../actions.ts';
import { literal, number, object, optional, string, type Issue } from '../schema.ts';
import type { Adapter } from './adapter.ts';
import { createDiscordAdapter } from './discord.ts';
import { createBlueBubblesAdapter, createImsgAdapter } from './imessage.ts';
import { createMattermostAdapter } from './mattermost.ts';
import { createTeamsAdapter } from './msteams.ts';
import { createSignalAdapter } from './signal.ts';
import { createSlackAdapter } from './slack.ts';
import { createTelegramAdapter } from './telegram.ts';
import { createWhatsAppAdapter } from './whatsapp.ts';

const text = string({ trim: true, nonEmpty: true });
const url = string({ trim: true, pattern: { regex: /^https?:\/\/\S+$/, rule: 'must be an http:// or https:// URL' } });

/** `channels`: one optional section per platform; `defaultTo` is the recipient when a run names none. */
export const channelsSchema = object({
  telegram: optional(object({ botToken: text, apiBase: optional(url), defaultTo: optional(text) })),
  discord: optional(object({ botToken: text, apiBase: optional(url), defaultTo: optional(text) })),
  slack: optional(object({ botToken: text, apiBase: optional(url), defaultTo: optional(text) })),
  mattermost: optional(object({ serverUrl: url, token: text, maxLength: optional(number({ integer: true, min: 2 })), defaultTo: optional(text) })),
  signal: optional(object({ url, account: text, defaultTo: optional(text) })),
  whatsapp: optional(object({ phoneNumberId: text, accessToken: text, apiBase: optional(url), defaultTo: optional(text) })),
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

/** Builds the adapters the config names; an option an adapter refuses is reported at its key path. */
export function buildChannels(config: ChannelsConfig, issues: Issue[], fetchImpl?: typeof fetch): Map<Channel, ConfiguredChannel> {
  const built = new Map<Channel, ConfiguredChannel>();
  const add = (channel: Channel, make: () => Adapter, defaultTo: string | undefined) => {
    let adapter: Adapter;
    try {
      adapter = make();
    } catch (error) {
      issues.push({ path: `channels.${channel}`, message: (error as Error).message });
      return;
    }
    if (defaultTo !== undefined) {
      const problem = adapter.checkRecipient(defaultTo);
      if (problem !== null) issues.push({ path: `channels.${channel}.defaultTo`, message: problem });
    }
    built.set(channel, { adapter, ...(defaultTo === undefined ? {} : { defaultTo }) });
  };
  const f = fetchImpl === undefined ? {} : { fetch: fetchImpl };
  const { telegram, discord, slack, mattermost, signal, whatsapp, imessage, msteams } = config;
  if (telegram) add('telegram', () => createTelegramAdapter({ botToken: telegram.botToken, apiBase: telegram.apiBase, ...f }), telegram.defaultTo);
  if (discord) add('discord', () => createDiscordAdapter({ botToken: discord.botToken, apiBase: discord.apiBase, ...f }), discord.defaultTo);
  if (slack) add('slack', () => createSlackAdapter({ botToken: slack.botToken, apiBase: slack.apiBase, ...f }), slack.defaultTo);
  if (mattermost) {
    add('mattermost', () => createMattermostAdapter({ serverUrl: mattermost.serverUrl, token: mattermost.token, maxLength: mattermost.maxLength, ...f }), mattermost.defaultTo);
  }
  if (signal) add('signal', () => createSignalAdapter({ url: signal.url, account: signal.account, ...f }), signal.defaultTo);
  if (whatsapp) {
    add(
      'whatsapp',
      () => createWhatsAppAdapter({ phoneNumberId: whatsapp.phoneNumberId, accessToken: whatsapp.accessToken, ...(whatsapp.apiBase ? { apiBase: whatsapp.apiBase } : {}), ...f }),
      whatsapp.defaultTo,
    );
  }
  if (imessage) {
    const make = () => {
      if (imessage.serverUrl === undefined) return createImsgAdapter(imessage.command === undefined ? {} : { command: imessage.command });
      if (imessage.password === undefined) throw new TypeError('Invalid option password: required with serverUrl (BlueBubbles)');
      return createBlueBubblesAdapter({ serverUrl: imessage.serverUrl, password: imessage.password, ...(imessage.method ? { method: imessage.method } : {}), ...f });
    };
    add('imessage', make, imessage.defaultTo);
  }
  if (msteams) {
    const { appId, appPassword, tenantId, serviceUrl, tokenUrl } = msteams;
    add(
      'msteams',
      () => createTeamsAdapter({ appId, appPassword, serviceUrl, ...(tenantId ? { tenantId } : {}), ...(tokenUrl ? { tokenUrl } : {}), ...f }),
      msteams.defaultTo,
    );
  }
  return built;
}
