// Parses the command line and runs the command it names; each command, with its help, is in its own
// file, imported only when it runs: `--version` loads this file alone, and `events` no server code.

import { readFileSync } from 'node:fs';
import type { Command, Flags } from './command.ts';
import { FAILURE, type Io, messagePrefix, processIo, USAGE } from './io.ts';
import { parseCommand, unknownCommand, usageLine } from './usage.ts';

const COMMANDS: Readonly<Record<string, () => Promise<Command>>> = {
  serve: async () => (await import('./serve.ts')).serveCommand,
  check: async () => (await import('./check.ts')).check,
  events: async () => (await import('./listing.ts')).events,
  runs: async () => (await import('./listing.ts')).runs,
  requests: async () => (await import('./requests.ts')).requests,
  try: async () => (await import('./try.ts')).tryCommand,
  reload: async () => (await import('./reload.ts')).reload,
  status: async () => (await import('./status.ts')).status,
  pause: async () => (await import('./pause.ts')).pause,
  resume: async () => (await import('./pause.ts')).resume,
  drop: async () => (await import('./pause.ts')).drop,
  send: async () => (await import('./send.ts')).send,
  outbox: async () => (await import('./outbox.ts')).outbox,
  sign: async () => (await import('./sign.ts')).sign,
  token: async () => (await import('./token.ts')).token,
  inspect: async () => (await import('./inspect.ts')).inspect,
};
// Commands with commands of their own, which parse their own arguments.
const GROUPS: Readonly<Record<string, (argv: readonly string[], io: Io) => Promise<number>>> = {
  gmail: async (argv, io) => (await import('./gmail.ts')).gmailCommand(argv, io),
  config: async (argv, io) => (await import('./config-get.ts')).configCommand(argv, io),
  alerts: async (argv, io) => (await import('./alerts.ts')).alertsCommand(argv, io),
};

const HELP = `Usage: hooks-ingress [command] [options]

Webhook front door for an AI assistant's gateway: wake its main session or start
isolated agent runs over HTTP.

Commands:
  serve     serve the webhook endpoints (the default)
  check     validate the config file
  config    print a configured value (see "config --help")
  events    print the main session's events
  runs      list agent runs and their outcomes
  requests  list what arrived on the hooks path, show one, replay it
  try       show what a request to a hook would become, enqueuing nothing
  reload    make the running server re-read its config and print its verdict
  status    whether the server runs, and how it is doing
  pause     hold a hook's work (runs, wakes, outbox) until resumed; list paused hooks
  resume    let a paused hook's work go, in the order it came
  drop      discard what a paused hook holds
  send      send a test message through a channel
  alerts    send a test alert to the owner (see "alerts --help")
  outbox    forward mode: list the outbox, send dead entries again
  gmail     set up and run the Gmail watcher (see "gmail --help")
  inspect   print a one-time login link to the inspector page
  sign      print or send the request a signed sender would send
  token     print a new random hook token

Options:
  -h, --help      show help (also after a command)
  -v, -V, --version
                  show the version

Run "hooks-ingress help COMMAND" (or "hooks-ingress COMMAND --help") for a
command's options.
`;

/** Runs the CLI with `argv` (without the executable and script); resolves to the exit code. */
export async function main(argv: readonly string[], io: Io = processIo()): Promise<number> {
  const [first, ...rest] = argv;
  // -V too: many tools spell it so, and hooks-ingress has no other use for it.
  if (first === '--version' || first === '-v' || first === '-V') {
    io.stdout(`${version()}\n`);
    return 0;
  }
  if (first === 'help' && rest.length > 0) return _helpFor(rest, io);
  if (first === '--help' || first === '-h' || first === 'help') {
    io.stdout(HELP);
    return 0;
  }
  if (first !== undefined && Object.hasOwn(GROUPS, first)) {
    return _answered({ ...io, command: first }, (named) => GROUPS[first]!(rest, named));
  }
  const named = first !== undefined && !first.startsWith('-');
  const name = named ? first : 'serve';
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (load === undefined) {
    io.stderr(usageLine(null, unknownCommand(name, [...Object.keys(COMMANDS), ...Object.keys(GROUPS)])));
    return USAGE;
  }
  const command = await load();
  const parsed = parseCommand(name, named ? rest : argv, command, io);
  if (typeof parsed === 'number') return parsed;
  return _answered({ ...io, command: name }, (named) => command.run(parsed.values as Flags, parsed.positionals, named));
}

// A filesystem error no command expected (a state directory that is a file, a journal it may not
// read) is one line naming the path and why, as any bad input is; anything else is a bug and keeps its stack.
async function _answered(io: Io, run: (io: Io) => Promise<number>): Promise<number> {
  try {
    return await run(io);
  } catch (error) {
    const failed = error as NodeJS.ErrnoException;
    if (typeof failed?.code !== 'string' || typeof failed.syscall !== 'string') throw error;
    // Loaded only here: `--version` and the commands that succeed never pay for it.
    const { unreadable } = await import('../config/read.ts');
    const why = failed.syscall === 'mkdir' && failed.code === 'EEXIST'
      ? 'it exists and is not a directory'
      : unreadable(failed);
    io.stderr(
      `${messagePrefix(io)}: cannot ${failed.syscall}${failed.path === undefined ? '' : ` ${failed.path}`}: ${why}\n`,
    );
    return FAILURE;
  }
}

// `help COMMAND` is `COMMAND --help`; `help gmail run` reaches a group's command the same way.
function _helpFor(names: readonly string[], io: Io): Promise<number> | number {
  const [name] = names as [string, ...string[]];
  if (!Object.hasOwn(COMMANDS, name) && !Object.hasOwn(GROUPS, name)) {
    io.stderr(usageLine(null, unknownCommand(name, [...Object.keys(COMMANDS), ...Object.keys(GROUPS)])));
    return USAGE;
  }
  if (Object.hasOwn(COMMANDS, name) && names.length > 1) {
    io.stderr(usageLine(null, `"help ${name}" takes no further argument, got "${names[1]}"`));
    return USAGE;
  }
  return main([...names, '--help'], io);
}

/** The package version, read from package.json next to lib/ (and dist/). */
export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

// `deno run -A lib/cli/main.ts` runs this module directly; Node runs it through bin/hooks-ingress.
if ((import.meta as ImportMeta & { main?: boolean }).main) {
  process.exitCode = await main(process.argv.slice(2));
}
