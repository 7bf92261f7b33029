// The send command: one test message through a configured channel.

import { type Channel, CHANNELS } from '../model/actions.ts';
import type { Config } from '../config/types.ts';
import { type Command, COMMON } from './command.ts';
import { FAILURE, messagePrefix, USAGE } from './io.ts';
import { loadConfigFor } from './load-config.ts';
import { printDelivery } from './delivery-text.ts';
import { buildDeliver } from '../server/service.ts';
import { usageLine } from './usage.ts';

/** After this long without an answer, `send` says what it is waiting for. */
export const WAIT_NOTICE_MS = 1_000;
const ATTEMPTS = 3;

const HELP = `Usage: hooks-ingress send --channel CHANNEL [--to RECIPIENT] TEXT

Send TEXT through a configured channel's adapter, to check its configuration.
Without --to, the channel's channels.NAME.defaultTo is used. Exits 0 when the
message was delivered, 1 otherwise.

Options:
  -c, --config PATH     config file
      --channel NAME    telegram, discord, slack, mattermost, signal, whatsapp,
                        imessage or msteams
      --to RECIPIENT    the recipient, in the channel's own form
  -h, --help            show this help
`;

/** `hooks-ingress send`: one test message through a configured channel. */
export const send: Command = {
  options: { ...COMMON, channel: { type: 'string' }, to: { type: 'string' } },
  positionals: true,
  help: HELP,
  async run(flags, positionals, io) {
    const channel = flags.channel;
    const text = positionals.join(' ').trim();
    const named = CHANNELS.filter((c) => c !== 'last');
    const problem = channel === undefined
      ? `give --channel (one of ${named.join(', ')})`
      : !(named as readonly string[]).includes(channel)
      ? `--channel must be one of ${named.join(', ')}, got "${channel}"`
      : text === ''
      ? 'give the TEXT to send'
      : null;
    if (problem !== null) {
      io.stderr(usageLine('send', problem));
      return USAGE;
    }
    const config = await loadConfigFor(flags, io);
    if (config === null) return FAILURE;
    const deliver = await buildDeliver(config, () => null, {
      maxAttempts: ATTEMPTS,
      baseDelayMs: 1_000,
      maxDelayMs: 10_000,
    });
    // An unreachable platform can take a while to fail; a silent terminal looks hung.
    const notice = setTimeout(
      () => io.stderr(`${messagePrefix(io)}: ${waitingFor(config, channel as Channel)}\n`),
      WAIT_NOTICE_MS,
    );
    let outcome;
    try {
      outcome = await deliver({
        channel: channel as Channel,
        ...(flags.to === undefined ? {} : { to: flags.to }),
        text,
      });
    } finally {
      clearTimeout(notice);
    }
    return printDelivery(io, outcome);
  },
};

/** What `send` is waiting for: the platform, and the address it was given for it when there is one. */
export function waitingFor(config: Pick<Config, 'channels'>, channel: Channel): string {
  const section = (config.channels as Record<string, Record<string, unknown> | undefined>)[channel] ?? {};
  const address = ['apiBase', 'serverUrl', 'url', 'serviceUrl'].map((key) => section[key]).find((value) =>
    typeof value === 'string'
  );
  const where = typeof address === 'string'
    ? ` at ${address}`
    : section['command'] !== undefined
    ? ` (${String(section['command'])})`
    : '';
  return `waiting for ${channel}${where} to answer (up to ${ATTEMPTS} attempts; Ctrl-C stops)`;
}
