import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { CHANNELS, type Channel } from '../actions.ts';
import { locateConfig, locateStateDir, type Config, type Env } from '../config/config.ts';
import { createDeliver } from '../delivery/deliver.ts';
import { gmailCommand } from './gmail.ts';
import { exists, loadConfigFor, PID_FILE, serve } from './serve.ts';
import { readEvents, readRuns, type Rejected, type RunRecord, type SessionEvent } from '../store/store.ts';
import { sleep } from '../retry.ts';
import { generateToken } from '../guard/token.ts';

/** Where the CLI reads and writes; the real process by default, injectable for tests. */
export interface Io {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Env;
  /** Aborting it stops `serve` and `events --follow` as SIGTERM would. */
  signal?: AbortSignal;
}

const USAGE = 2;
const FAILURE = 1;

const COMMON = {
  config: { type: 'string', short: 'c' },
  help: { type: 'boolean', short: 'h' },
} as const;

// `events` and `runs` read the same journal the same way.
const LISTING = {
  ...COMMON,
  'state-dir': { type: 'string' },
  json: { type: 'boolean' },
  follow: { type: 'boolean', short: 'f' },
  limit: { type: 'string', short: 'n' },
} as const;

const COMMANDS = {
  serve: {
    options: { ...COMMON, host: { type: 'string' }, port: { type: 'string', short: 'p' }, 'state-dir': { type: 'string' } },
    help: `Usage: hooks-ingress serve [options]

Serve the webhook endpoints until SIGTERM or SIGINT. Prints "listening on URL" once
ready, then one JSON log line per request on stderr.

Options:
  -c, --config PATH     config file (else $HOOKS_INGRESS_CONFIG, else
                        $XDG_CONFIG_HOME/hooks-ingress/config.json)
      --host HOST       address to bind (overrides gateway.bind)
  -p, --port PORT       port to bind; 0 takes a free one (overrides gateway.port)
      --state-dir DIR   state directory (overrides state.dir and $STATE_DIRECTORY)
  -h, --help            show this help
`,
  },
  check: {
    options: { ...COMMON },
    help: `Usage: hooks-ingress check [options]

Validate the config file, load the transforms it names, and list every
problem with its key path.
Exits 0 when the config is valid, 1 otherwise.

Options:
  -c, --config PATH     config file
  -h, --help            show this help
`,
  },
  events: {
    options: LISTING,
    help: `Usage: hooks-ingress events [options]

Print the main session's events, oldest first. Works while the server runs.

Options:
  -c, --config PATH     config file (for state.dir)
      --state-dir DIR   state directory
      --json            one JSON object per line (time, kind, text, source, seq)
  -f, --follow          keep printing new events as they arrive
  -n, --limit N         only the last N events
  -h, --help            show this help
`,
  },
  runs: {
    options: LISTING,
    help: `Usage: hooks-ingress runs [options]

List agent runs, oldest first: id, hook name, agent, session key, model, status
(pending, running, ok, error, timeout), timings, attempts, reply preview and delivery.
Works while the server runs.

Options:
  -c, --config PATH     config file (for state.dir)
      --state-dir DIR   state directory
      --json            one JSON object per line (the whole run record)
  -f, --follow          keep printing runs as they change
  -n, --limit N         only the last N runs
  -h, --help            show this help
`,
  },
  reload: {
    options: { ...COMMON, 'state-dir': { type: 'string' } },
    help: `Usage: hooks-ingress reload [options]

Ask the running server to re-read its config (it gets SIGHUP through the pid file in
the state directory). A valid config takes over for new requests at once; an invalid
one is refused, logged by the server, and the old one stays.

Options:
  -c, --config PATH     config file (for state.dir)
      --state-dir DIR   state directory
  -h, --help            show this help
`,
  },
  send: {
    options: { ...COMMON, channel: { type: 'string' }, to: { type: 'string' } },
    positionals: true,
    help: `Usage: hooks-ingress send --channel CHANNEL [--to RECIPIENT] TEXT

Send TEXT through a configured channel's adapter, to check its configuration.
Without --to, the channel's channels.NAME.defaultTo is used. Exits 0 when the
message was delivered, 1 otherwise.

Options:
  -c, --config PATH     config file
      --channel NAME    telegram, discord, slack, mattermost, signal, whatsapp,
                        imessage or msteams
      --to RECIPIENT    the recipient, in the channel's own form
  -h, --help            show this help
`,
  },
  token: {
    options: { help: COMMON.help },
    help: `Usage: hooks-ingress token

Print a new random hook token (32 bytes of entropy, base64url).
`,
  },
} as const;

type Command = keyof typeof COMMANDS;

const HELP = `Usage: hooks-ingress [command] [options]

Webhook front door for an AI assistant's gateway: wake its main session or start
isolated agent runs over HTTP.

Commands:
  serve     serve the webhook endpoints (the default)
  check     validate the config file
  events    print the main session's events
  runs      list agent runs and their outcomes
  reload    make the running server re-read its config
  send      send a test message through a channel
  gmail     set up and run the Gmail watcher (see "gmail --help")
  token     print a new random hook token

Options:
  -h, --help      show help (also after a command)
  -v, --version   show the version

Run "hooks-ingress COMMAND --help" for a command's options.
`;

/** Runs the CLI with `argv` (without the executable and script); resolves to the exit code. */
export async function main(argv: readonly string[], io: Io = _processIo()): Promise<number> {
  const [first, ...rest] = argv;
  if (first === '--version' || first === '-v') {
    io.stdout(`${version()}\n`);
    return 0;
  }
  if (first === '--help' || first === '-h' || first === 'help') {
    io.stdout(HELP);
    return 0;
  }
  const named = first !== undefined && !first.startsWith('-');
  if (first === 'gmail') return gmailCommand(rest, io);
  const command = (named ? first : 'serve') as Command;
  if (!Object.hasOwn(COMMANDS, command)) {
    io.stderr(`hooks-ingress: unknown command "${first}"\n\n${HELP}`);
    return USAGE;
  }
  const spec = COMMANDS[command];
  let values: Flags & { help?: boolean };
  let positionals: string[];
  try {
    const options: ParseArgsConfig['options'] = spec.options;
    ({ values, positionals } = parseArgs({ args: named ? rest : [...argv], options, strict: true, allowPositionals: 'positionals' in spec }) as {
      values: Flags & { help?: boolean };
      positionals: string[];
    });
  } catch (error) {
    io.stderr(`hooks-ingress ${command}: ${(error as Error).message}\n\n${spec.help}`);
    return USAGE;
  }
  if (values.help === true) {
    io.stdout(spec.help);
    return 0;
  }
  const flags = values;
  switch (command) {
    case 'serve':
      return serve(flags, io);
    case 'check':
      return checkCommand(flags, io);
    case 'events':
      return eventsCommand(flags, io);
    case 'runs':
      return runsCommand(flags, io);
    case 'reload':
      return reloadCommand(flags, io);
    case 'send':
      return sendCommand(flags, positionals, io);
    case 'token':
      io.stdout(`${generateToken()}\n`);
      return 0;
  }
}

interface Flags {
  channel?: string;
  to?: string;
  config?: string;
  host?: string;
  port?: string;
  'state-dir'?: string;
  json?: boolean;
  follow?: boolean;
  limit?: string;
}

/** The package version, read from package.json next to lib/ (and dist/). */
export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}


async function reloadCommand(flags: Flags, io: Io): Promise<number> {
  const dir = await _stateDir(flags, io);
  if (dir === null) return FAILURE;
  let pid: number;
  try {
    pid = Number((await readFile(join(dir, PID_FILE), 'utf8')).trim());
  } catch {
    io.stderr(`hooks-ingress reload: no running server found (no ${join(dir, PID_FILE)})\n`);
    return FAILURE;
  }
  // Never signal 0 or a negative number: that would reach a whole process group.
  if (!(Number.isInteger(pid) && pid > 1)) {
    io.stderr(`hooks-ingress reload: ${join(dir, PID_FILE)} does not hold a process id\n`);
    return FAILURE;
  }
  try {
    process.kill(pid, 'SIGHUP');
  } catch (error) {
    io.stderr(`hooks-ingress reload: cannot signal pid ${pid}: ${(error as NodeJS.ErrnoException).code ?? String(error)}\n`);
    return FAILURE;
  }
  io.stdout(`asked pid ${pid} to reload its config\n`);
  return 0;
}

async function sendCommand(flags: Flags, positionals: string[], io: Io): Promise<number> {
  const channel = flags.channel;
  const text = positionals.join(' ').trim();
  const named = CHANNELS.filter((c) => c !== 'last');
  if (channel === undefined || !(named as readonly string[]).includes(channel) || text === '') {
    io.stderr(`hooks-ingress send: give --channel (one of ${named.join(', ')}) and the text to send\n\n${COMMANDS.send.help}`);
    return USAGE;
  }
  const config = await loadConfigFor(flags, io);
  if (config === null) return FAILURE;
  const deliver = createDeliver({ channels: config.channels, lastRoute: () => null, retry: { maxAttempts: 3, baseDelayMs: 1_000, maxDelayMs: 10_000 } });
  const outcome = await deliver({ channel: channel as Channel, ...(flags.to === undefined ? {} : { to: flags.to }), text });
  if (outcome.status === 'delivered') {
    io.stdout(`delivered to ${outcome.channel} ${outcome.to}${outcome.messageIds.length > 0 ? ` (${outcome.messageIds.join(', ')})` : ''}\n`);
    return 0;
  }
  io.stderr(`hooks-ingress send: ${outcome.status}: ${outcome.reason}\n`);
  return FAILURE;
}

async function checkCommand(flags: Flags, io: Io): Promise<number> {
  const config = await loadConfigFor(flags, io, { transforms: true });
  if (config === null) return FAILURE;
  io.stdout(`${config.file}: ok\n`);
  return 0;
}



async function eventsCommand(flags: Flags, io: Io): Promise<number> {
  const print = (event: SessionEvent) => io.stdout(flags.json ? `${JSON.stringify(event)}\n` : formatEvent(event));
  const rejected = _rejectedOnce(io);
  return _list(flags, io, (dir) => readEvents(dir, rejected), (e) => String(e.seq), print);
}

async function runsCommand(flags: Flags, io: Io): Promise<number> {
  const print = (run: RunRecord) => io.stdout(flags.json ? `${JSON.stringify(run)}\n` : formatRun(run));
  const rejected = _rejectedOnce(io);
  return _list(flags, io, (dir) => readRuns(dir, rejected), (r) => JSON.stringify(r), print);
}

// A journal line left out is said once on stderr, also when --follow reads the file again.
function _rejectedOnce(io: Io): (rejected: Rejected) => void {
  const said = new Set<number>();
  return ({ line, problem }) => {
    if (said.has(line)) return;
    said.add(line);
    io.stderr(`hooks-ingress: journal line ${line} skipped: ${problem}\n`);
  };
}


/**
 * Prints the last `--limit` items of a state directory's journal; with `--follow`, polls and
 * prints each item whose `identity` it has not printed yet (a new event, or a run that changed).
 */
async function _list<T>(flags: Flags, io: Io, read: (dir: string) => Promise<T[]>, identity: (item: T) => string, print: (item: T) => void): Promise<number> {
  const limit = flags.limit === undefined ? Infinity : Number(flags.limit);
  if (!(Number.isInteger(limit) && limit >= 0) && limit !== Infinity) {
    io.stderr('hooks-ingress: --limit must be a whole number\n');
    return USAGE;
  }
  const dir = await _stateDir(flags, io);
  if (dir === null) return FAILURE;
  if (!(await exists(dir))) {
    io.stderr(`hooks-ingress: state directory ${dir} does not exist (no server has used it)\n`);
    return FAILURE;
  }
  let items = await read(dir);
  const seen = new Set(items.map(identity));
  items.slice(Math.max(0, items.length - limit)).forEach(print);
  while (flags.follow && !io.signal?.aborted) {
    await sleep(250, io.signal);
    items = await read(dir);
    for (const item of items) {
      const id = identity(item);
      if (seen.has(id)) continue;
      seen.add(id);
      print(item);
    }
  }
  return 0;
}

// The state directory a reading command looks in; without a config file it still has its default place.
async function _stateDir(flags: Flags, io: Io): Promise<string | null> {
  if (flags['state-dir'] !== undefined) return flags['state-dir'];
  const located = locateConfig(flags.config, io.env);
  let config: Config | null = null;
  if (!located.implicit || (await exists(located.path))) {
    config = await loadConfigFor(flags, io);
    if (config === null) return null;
  }
  return locateStateDir(undefined, config ?? _noConfig, io.env);
}

/** One run as a human reads it: a header line, then the reply preview and the delivery. */
export function formatRun(run: RunRecord): string {
  const took = run.startedAt && run.finishedAt ? ` ${((Date.parse(run.finishedAt) - Date.parse(run.startedAt)) / 1000).toFixed(1)}s` : '';
  const lines = [
    `${run.acceptedAt}  ${run.status}${took}  ${run.runId}  hook=${run.hook} name=${JSON.stringify(run.name)} agent=${run.agentId} session=${run.sessionKey}` +
      `${run.model ? ` model=${run.model}` : ''} attempts=${run.attempts}${run.retry ? ' (resumed)' : ''}`,
  ];
  const text = run.reply ?? run.error;
  if (text !== undefined) lines.push(`    ${run.reply !== undefined ? 'reply' : 'error'}: ${_preview(text)}`);
  if (run.delivery !== undefined) {
    const d = run.delivery;
    lines.push(`    delivery: ${d.status === 'delivered' ? `delivered to ${d.channel} ${d.to}${d.messageIds.length > 0 ? ` (${d.messageIds.join(', ')})` : ''}` : `${d.status}: ${d.reason}`}`);
  }
  return `${lines.join('\n')}\n`;
}

function _preview(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

/** One event as a human reads it: time, kind and source, then the text (continuation lines indented). */
export function formatEvent(event: SessionEvent): string {
  const text = event.text.replace(/\r?\n/g, '\n    ');
  return `${event.time}  ${event.kind}  [${event.source}]  ${text}\n`;
}

const _noConfig = { stateDir: null } as Config;



function _processIo(): Io {
  // `hooks-ingress runs --json | head -1`: a reader that went away is not an error worth a stack trace.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(0);
  });
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    env: process.env,
  };
}

// `deno run -A lib/cli.ts` runs this module directly; Node runs it through bin/hooks-ingress.
if ((import.meta as ImportMeta & { main?: boolean }).main) {
  process.exitCode = await main(process.argv.slice(2));
}
