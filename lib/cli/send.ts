import { CHANNELS, type Channel } from '../actions.ts';
import { COMMON, type Command } from './command.ts';
import { FAILURE, USAGE } from './io.ts';
import { loadConfigFor } from './load-config.ts';
import { buildDeliver } from './service.ts';

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
    if (channel === undefined || !(named as readonly string[]).includes(channel) || text === '') {
      io.stderr(`hooks-ingress send: give --channel (one of ${named.join(', ')}) and the text to send\n\n${HELP}`);
      return USAGE;
    }
    const config = await loadConfigFor(flags, io);
    if (config === null) return FAILURE;
    const deliver = buildDeliver(config, () => null, { maxAttempts: 3, baseDelayMs: 1_000, maxDelayMs: 10_000 });
    const outcome = await deliver({ channel: channel as Channel, ...(flags.to === undefined ? {} : { to: flags.to }), text });
    if (outcome.status === 'delivered') {
      io.stdout(`delivered to ${outcome.channel} ${outcome.to}${outcome.messageIds.length > 0 ? ` (${outcome.messageIds.join(', ')})` : ''}\n`);
      return 0;
    }
    io.stderr(`hooks-ingress send: ${outcome.status}: ${outcome.reason}\n`);
    return FAILURE;
  },
};
