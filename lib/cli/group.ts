// A command group (`config`, `gmail`): commands of their own, each parsing its own options. The
// command is the first argument that is neither an option nor an option's value, so options may
// stand before or after its name (`config --config F get KEY` as `config get KEY --config F`), as
// they do around `requests show` and `outbox retry`, whose commands are positionals.
import { type Io, USAGE } from './io.ts';
import { type OptionSpec, unknownCommand, usageLine } from './usage.ts';

/** One command of a group: the options it takes, and what it runs with the other arguments. */
export interface GroupCommand {
  options: Readonly<Record<string, OptionSpec>>;
  run(argv: readonly string[], io: Io): Promise<number>;
}

/** A command group: its name on the command line, its help, and its commands by name. */
export interface Group {
  name: string;
  help: string;
  commands: Readonly<Record<string, GroupCommand>>;
}

/**
 * Runs the command `argv` names, with every other argument in its order. `help`, or `--help`
 * with no command named, prints the group's help; a missing or unknown command is a usage error.
 */
export function runGroup(group: Group, argv: readonly string[], io: Io): Promise<number> {
  const names = Object.keys(group.commands);
  const { name, rest } = splitCommand(argv, _options(group));
  if (name === 'help' || (name === undefined && rest.some((a) => a === '--help' || a === '-h'))) {
    io.stdout(group.help);
    return Promise.resolve(0);
  }
  const command = name !== undefined && Object.hasOwn(group.commands, name) ? group.commands[name] : undefined;
  if (command === undefined) {
    const problem = name === undefined ? `missing command (${names.join(' or ')})` : unknownCommand(name, names);
    io.stderr(usageLine(group.name, problem));
    return Promise.resolve(USAGE);
  }
  return command.run(rest, io);
}

/**
 * The command named in `argv`, and the arguments left for it in their order: the first argument
 * that is neither an option nor the value of one `options` declares as a string (`--config F`,
 * `-c F`; not `--config=F` or `-cF`). After `--`, the next argument is the command.
 */
export function splitCommand(
  argv: readonly string[],
  options: Readonly<Record<string, OptionSpec>>,
): { name: string | undefined; rest: string[] } {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') return _without(argv, i + 1);
    if (!arg.startsWith('-') || arg === '-') return _without(argv, i);
    if (_takesNext(arg, options)) i++;
  }
  return { name: undefined, rest: [...argv] };
}

function _without(argv: readonly string[], at: number): { name: string | undefined; rest: string[] } {
  return { name: argv[at], rest: [...argv.slice(0, at), ...argv.slice(at + 1)] };
}

// Whether the option `arg` is followed by its value as the next argument. An option no command
// declares takes none here; the command's own parser refuses it.
function _takesNext(arg: string, options: Readonly<Record<string, OptionSpec>>): boolean {
  if (arg.startsWith('--')) return !arg.includes('=') && options[arg.slice(2)]?.type === 'string';
  // A run of short options: the first that takes a value takes the rest of the run, or the next argument.
  const specs = Object.values(options);
  for (let at = 1; at < arg.length; at++) {
    if (specs.find((o) => o.short === arg[at])?.type === 'string') return at === arg.length - 1;
  }
  return false;
}

// Every option any of the group's commands takes: enough to tell an option's value from a command's name.
function _options(group: Group): Record<string, OptionSpec> {
  const all: Record<string, OptionSpec> = {};
  for (const command of Object.values(group.commands)) {
    for (const [name, spec] of Object.entries(command.options)) {
      if (all[name] !== undefined && (all[name].type !== spec.type || all[name].short !== spec.short)) {
        throw new TypeError(`Cannot read the ${group.name} commands' options: --${name} is declared two ways`);
      }
      all[name] = spec;
    }
  }
  return all;
}
