import { runCompanion, type GmailDeps } from './gmail-companion.ts';
import { runSetup } from './gmail-setup.ts';
import { USAGE, type Io } from './io.ts';
import { unknownCommand, usageLine } from './usage.ts';

/** Help for `hooks-ingress gmail`. */
export const GMAIL_HELP = `Usage: hooks-ingress gmail COMMAND [options]

Connect Gmail push notifications to the gmail preset through the companion
watcher "gog gmail watch serve" (gogcli, https://gogcli.sh), which posts each
new mail to {hooks.path}/gmail.

Commands:
  setup     write the gmail configuration and print the companion command
  run       run the companion, restarting it when it exits

Run "hooks-ingress gmail COMMAND --help" for a command's options.
`;

/** Runs `hooks-ingress gmail ARGV`; resolves to the exit code (0 ok, 1 failure, 2 usage). */
export async function gmailCommand(argv: readonly string[], io: Io, deps: GmailDeps = {}): Promise<number> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === 'help') {
    io.stdout(GMAIL_HELP);
    return 0;
  }
  if (command === 'setup') return runSetup(rest, io);
  if (command === 'run') return runCompanion(rest, io, deps);
  io.stderr(usageLine('gmail', command === undefined ? 'missing command (setup or run)' : unknownCommand(command, ['setup', 'run'])));
  return USAGE;
}

