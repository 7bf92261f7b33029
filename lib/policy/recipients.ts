// Who each platform can reach, as pure checks: the request path refuses an unreachable `to` with
// them before anything is recorded, and each adapter checks again before it sends.

import type { Channel } from '../model/actions.ts';
import { show } from '../text.ts';

/** A named channel (every channel but `last`). */
export type NamedChannel = Exclude<Channel, 'last'>;

// A chat id is an integer (negative for groups, -100… for supergroups and channels) with at most
// 52 significant bits, so a JS number holds it exactly; a public username is 4 to 32 letters,
// digits and underscores, starting with a letter.
const _TELEGRAM_CHAT_ID = /^-?[1-9][0-9]{0,15}$/;
const _TELEGRAM_USERNAME = /^@[A-Za-z][A-Za-z0-9_]{3,31}$/;
// Snowflakes are unsigned 64-bit integers; every id since Discord's launch has 17 to 20 digits.
const _SNOWFLAKE = /^[1-9][0-9]{16,19}$/;
const _MAX_SNOWFLAKE = 2n ** 64n - 1n;
// An encoded conversation id: C public channel, G private channel or group, D direct message;
// a U or W user id posts to the app's direct message with that user.
const _SLACK_CHANNEL = /^[CGDUW][A-Z0-9]{8,}$/;
const _MATTERMOST_CHANNEL = /^[a-z0-9]{26}$/;
/** A phone number in E.164 with its `+`. */
export const E164 = /^\+[1-9]\d{6,14}$/;
/** The prefix of a Signal group recipient. */
export const SIGNAL_GROUP = 'group:';
const _BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const _WHATSAPP_PHONE = /^\+?[1-9]\d{6,14}$/;
const _EMAIL = /^[^\s@;]+@[^\s@;]+\.[^\s@;]+$/;
/** `<service>;-;<address>` for one person, `<service>;+;chat<digits>` for a group. */
export const CHAT_GUID = /^(?:iMessage|SMS|RCS|any);[-+];\S+$/;
// Teams conversation ids: `a:…` (personal), `19:…@thread.…` (channels, group chats), possibly `;messageid=…`.
const _CONVERSATION = /^[0-9a-z]+:\S+$/i;

/** Why `to` cannot be a recipient on a platform, or `null` when it can. */
export const RECIPIENT_RULES: Readonly<Record<NamedChannel, (to: string) => string | null>> = {
  telegram: (to) =>
    typeof to === 'string' &&
      ((_TELEGRAM_CHAT_ID.test(to) && Number.isSafeInteger(Number(to))) || _TELEGRAM_USERNAME.test(to))
      ? null
      : `Invalid Telegram recipient: expected a numeric chat id or @channelusername, got ${show(to)}`,
  discord: (to) =>
    typeof to === 'string' && _SNOWFLAKE.test(to) && BigInt(to) <= _MAX_SNOWFLAKE
      ? null
      : `Invalid Discord recipient: expected a numeric channel id (a snowflake of 17 to 20 digits), got ${show(to)}`,
  slack: (to) =>
    typeof to === 'string' && _SLACK_CHANNEL.test(to)
      ? null
      : `Invalid Slack recipient: expected a channel id (C…, G…, D…) or a user id (U…, W…), got ${show(to)}`,
  mattermost: (to) =>
    typeof to === 'string' && _MATTERMOST_CHANNEL.test(to)
      ? null
      : `Invalid Mattermost recipient: expected a channel id of 26 lowercase letters and digits, got ${show(to)}`,
  signal: (to) => {
    const group = typeof to === 'string' && to.startsWith(SIGNAL_GROUP) ? to.slice(SIGNAL_GROUP.length) : undefined;
    const valid = group === undefined
      ? typeof to === 'string' && E164.test(to)
      : _BASE64.test(group) && Buffer.from(group, 'base64').length === 32;
    if (valid) return null;
    return `Invalid Signal recipient: expected a phone number in E.164 (+ and 7 to 15 digits) or group:<base64 id of 32 bytes> as signal-cli listGroups prints it, got ${
      show(to)
    }`;
  },
  whatsapp: (to) =>
    _WHATSAPP_PHONE.test(to)
      ? null
      : `Invalid WhatsApp recipient: expected a phone number in E.164 (7 to 15 digits, with or without +), got ${
        show(to)
      }`,
  // Both ways to Messages.app take the same recipients: an E.164 phone, an email, or a chat guid.
  imessage: (to) =>
    E164.test(to) || _EMAIL.test(to) || CHAT_GUID.test(to)
      ? null
      : `Invalid iMessage recipient: expected a phone number in E.164, an email address or a chat guid such as iMessage;+;chat123456789, got ${
        show(to)
      }`,
  msteams: (
    to,
  ) => (_CONVERSATION.test(to)
    ? null
    : `Invalid Teams recipient: expected a conversation id such as a:1pL6… or 19:…@thread.tacv2, got ${show(to)}`),
};
