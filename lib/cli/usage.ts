// Usage errors as a user reads them: one line that names the command and the problem, a guess
// when a name looks misspelt, and where the help is. Node's own parseArgs wording (several lines,
// "argument is ambiguous", advice about "--") never reaches the terminal.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { suggest } from '../schema.ts';
import { type Io, USAGE } from './io.ts';

/** An option as parseArgs declares it. */
export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string | undefined;
}

/** The one line of a usage error: `hooks-ingress events: <problem>; see hooks-ingress events --help`. */
export function usageLine(command: string | null, problem: string): string {
  const name = command === null ? 'hooks-ingress' : `hooks-ingress ${command}`;
  return `${name}: ${problem}; see ${name} --help\n`;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** What `parseCommand` hands back: parseArgs' values and positionals for these options. */
export type Parsed<T extends Options> = ReturnType<
  typeof parseArgs<{ options: T; strict: true; allowPositionals: boolean }>
>;

/**
 * Parses a command's arguments the way every command does: a usage error is one line on stderr
 * and exit code USAGE, `--help` prints the help and 0 (both returned as the exit code); otherwise
 * the parsed values and positionals.
 */
export function parseCommand<T extends Options>(
  name: string,
  argv: readonly string[],
  spec: { options: T; help: string; positionals?: boolean },
  io: Io,
): Parsed<T> | number {
  let parsed: Parsed<T>;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: spec.options,
      strict: true,
      allowPositionals: spec.positionals === true,
    });
  } catch (error) {
    io.stderr(usageLine(name, parseArgsProblem(error, spec.options)));
    return USAGE;
  }
  if ((parsed.values as { help?: unknown }).help === true) {
    io.stdout(spec.help);
    return 0;
  }
  return parsed;
}

/** The problem for a command name that is not one, with the closest command when it looks misspelt. */
export function unknownCommand(name: string, commands: readonly string[]): string {
  const guess = suggest(name, commands);
  return `unknown command "${name}"${guess === null ? '' : ` (did you mean "${guess}"?)`}`;
}

/** What went wrong in parseArgs, said in one short clause; `options` gives the guesses for a misspelt option. */
export function parseArgsProblem(error: unknown, options: Readonly<Record<string, OptionSpec>>): string {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  const quoted = /'([^']*)'/.exec(message)?.[1] ?? '';
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      // The version belongs to the program, not to a command.
      if (['-v', '-V', '--version'].includes(quoted)) {
        return `unknown option "${quoted}" (the version is "hooks-ingress --version")`;
      }
      const long = quoted.startsWith('--') ? quoted.slice(2).split('=')[0]! : null;
      const guess = long === null ? null : suggest(long, Object.keys(options));
      return `unknown option "${quoted}"${guess === null ? '' : ` (did you mean "--${guess}"?)`}`;
    }
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      // `check config.json`: the file is an option's value here, not an argument.
      return Object.hasOwn(options, 'config') && _looksLikeConfig(quoted)
        ? `unexpected argument "${quoted}" (did you mean "-c ${quoted}"?)`
        : `unexpected argument "${quoted}"`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return _invalidValue(message, options);
    default:
      // Any other parse failure: its first line, without Node's advice.
      return message.split('\n')[0]!.replace(/\.$/, '');
  }
}

// A path or a file name of the kinds a config has: what someone meant as the config file.
function _looksLikeConfig(argument: string): boolean {
  return argument.includes('/') || /\.json[c5]?$/i.test(argument);
}

// "Option '-c, --config <value>' argument missing", "... argument is ambiguous", "Option '--json' does not take an argument".
function _invalidValue(message: string, options: Readonly<Record<string, OptionSpec>>): string {
  const named = /--([\w-]+)/.exec(message)?.[1] ?? '';
  const flag = Object.hasOwn(options, named) ? `--${named}` : `--${named || '?'}`;
  if (/does not take an argument/.test(message)) return `option ${flag} takes no value`;
  if (/ambiguous/.test(message)) {
    return `option ${flag} needs a value (to give one that starts with "-", write ${flag}=VALUE)`;
  }
  return `option ${flag} needs a value`;
}
