// The gmail command; gmail-setup.ts writes the config, gmail-companion.ts runs gog in the foreground (gmail
// run) under the supervisor in runtime/gmail-companion.ts.

import { RUN_OPTIONS, runCompanion } from './gmail-companion.ts';
import type { GmailDeps } from '../server/gmail-companion.ts';
import { runSetup, SETUP_OPTIONS } from './gmail-setup.ts';
import { runGroup } from './group.ts';
import type { Io } from './io.ts';

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
export function gmailCommand(argv: readonly string[], io: Io, deps: GmailDeps = {}): Promise<number> {
  return runGroup(
    {
      name: 'gmail',
      help: GMAIL_HELP,
      commands: {
        setup: { options: SETUP_OPTIONS, run: runSetup },
        run: { options: RUN_OPTIONS, run: (rest, named) => runCompanion(rest, named, deps) },
      },
    },
    argv,
    io,
  );
}
