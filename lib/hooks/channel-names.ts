// Channel names as requests may write them: any case, OpenClaw's aliases (imsg, teams).

import { type Channel, CHANNELS } from '../model/actions.ts';
import type { Schema } from '../schema.ts';

/**
 * Other names OpenClaw accepts for the channels hooks-ingress delivers to: its built-in aliases
 * (`imsg`) and the ones its channel plugins declare (`teams` from the Microsoft Teams plugin).
 * OpenClaw's remaining aliases (`gchat`, `google-chat`, `internet-relay-chat`) name channels
 * hooks-ingress has no adapter for, so they are refused like any unknown channel.
 */
export const CHANNEL_ALIASES: Readonly<Record<string, Channel>> = { imsg: 'imessage', teams: 'msteams' };

/** The canonical channel a name stands for (trimmed, any case, aliases resolved), or `null`. */
export function canonicalChannel(name: string): Channel | null {
  const key = name.trim().toLowerCase();
  const found = CHANNEL_ALIASES[key] ?? key;
  return (CHANNELS as readonly string[]).includes(found) ? (found as Channel) : null;
}

const _NAMES = [...CHANNELS, ...Object.keys(CHANNEL_ALIASES)].map((c) => JSON.stringify(c)).join(', ');

/** A channel field: answers with the canonical name, so records and answers never carry an alias. */
export const channel: Schema<Channel> = (value, at, report) => {
  const found = typeof value === 'string' ? canonicalChannel(value) : null;
  if (found === null) report.issues.push({ path: at, message: `must be one of ${_NAMES}` });
  return found ?? undefined;
};
