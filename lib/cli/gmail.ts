import { spawn as spawnChild, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, open, readFile, realpath, rename, rm, stat } from 'node:fs/promises';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Io } from './main.ts';
import {
  buildConfig,
  DEFAULTS,
  GENERATED_KEY_PREFIX,
  loadConfig,
  locateConfig,
  normaliseHooksPath,
  substituteEnv,
  type Config,
  type Env,
} from '../config/config.ts';
import { parseJsonc, stripJsonc } from '../jsonc.ts';
import { sleep } from '../retry.ts';
import { generateToken } from '../guard/token.ts';

/** What `gmail setup` writes to `hooks.gmail` when neither a flag nor the file names a value. */
export const GMAIL_DEFAULTS = {
  label: 'INBOX',
  topic: 'gog-gmail-watch',
  subscription: 'gog-gmail-watch-push',
  includeBody: true,
  maxBytes: 20_000,
} as const;

/** How `gmail run` restarts the companion: 1 s doubling to 60 s, back to 1 s after a run of 60 s. */
export const BACKOFF = { firstMs: 1_000, maxMs: 60_000, resetAfterMs: 60_000 } as const;

/** How long a companion asked to stop gets before it is killed. */
export const STOP_GRACE_MS = 10_000;

const USAGE = 2;
const FAILURE = 1;
export const INSTALL_HINT =
  'install gogcli (brew install steipete/tap/gogcli, or see https://gogcli.sh) and authorise the account with "gog auth add <address>"';

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

const SETUP_HELP = `Usage: hooks-ingress gmail setup --account ADDRESS [options]

Write the configuration the gmail preset needs, keeping everything else in the
file: hooks.enabled true, a new hooks.token when neither hooks.token nor
hooks.tokenFile is set, "gmail" in hooks.presets, hooks.allowRequestSessionKey
true and "hook:" in hooks.allowedSessionKeyPrefixes (the preset's session key
hook:gmail:<message id> comes from the payload), and hooks.gmail. A value the
file already has is kept unless a flag names a new one; hooks.gmail.hookUrl is
always rewritten. The result is validated first; nothing is written when it is
invalid. The original is kept as FILE.bak (mode 0600); comments do not survive.

Also creates hooks.gmail.hookToken, the credential gog posts with: it opens the
gmail hook only (gog takes its hook token on its command line alone, where
local users can read it). Prints the companion command on stdout, with
placeholders where its credentials go; "gmail run" fills them in.

Options:
      --account ADDRESS   the Gmail address to watch (required)
      --label LABEL       the label to watch (default INBOX)
      --topic TOPIC       the Pub/Sub topic, projects/<project>/topics/<name>
                          (default gog-gmail-watch)
      --subscription NAME the Pub/Sub push subscription (default gog-gmail-watch-push)
  -p, --port PORT         the port hooks-ingress listens on, for the hook URL
                          (default gateway.port, else ${DEFAULTS.port})
      --include-body      send the text body of each mail (the default)
      --no-include-body   send headers and the snippet only
      --max-bytes N       cap on the body bytes sent (default ${GMAIL_DEFAULTS.maxBytes})
  -c, --config PATH       config file (else $HOOKS_INGRESS_CONFIG, else
                          $XDG_CONFIG_HOME/hooks-ingress/config.json)
  -h, --help              show this help
`;

const RUN_HELP = `Usage: hooks-ingress gmail run [options]

Run the companion "gog gmail watch serve" with the arguments built from
hooks.gmail; gog posts with hooks.gmail.hookToken, which opens the gmail hook
only. gog must be on PATH. When it exits it is started
again after 1 s, doubling up to 60 s (back to 1 s once it ran for 60 s).
SIGTERM and SIGINT are passed on to it; once it stopped, this exits 0.

Options:
  -c, --config PATH     config file
  -h, --help            show this help
`;

const SETUP_OPTIONS = {
  account: { type: 'string' },
  label: { type: 'string' },
  topic: { type: 'string' },
  subscription: { type: 'string' },
  port: { type: 'string', short: 'p' },
  'include-body': { type: 'boolean' },
  'no-include-body': { type: 'boolean' },
  'max-bytes': { type: 'string' },
  config: { type: 'string', short: 'c' },
  help: { type: 'boolean', short: 'h' },
} as const;

const RUN_OPTIONS = {
  config: { type: 'string', short: 'c' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** What `gmail setup` was asked to write; absent fields keep the file's value, else the default. */
export interface SetupOptions {
  account: string;
  label?: string;
  topic?: string;
  subscription?: string;
  port?: number;
  includeBody?: boolean;
  maxBytes?: number;
}

/** The new file content, with notes on changes the operator should know of; or why there is none. */
export type SetupResult = { ok: true; value: Record<string, unknown>; notes: string[] } | { ok: false; problems: string[] };

/** What `gmail run` touches outside the process; each is injectable for tests. */
export interface GmailDeps {
  spawn?: (file: string, args: readonly string[], env: Env) => ChildProcess;
  which?: (name: string, env: Env) => Promise<string | null>;
  now?: () => number;
  /** Resolves after `ms`, or as soon as `signal` aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** Runs `hooks-ingress gmail ARGV`; resolves to the exit code (0 ok, 1 failure, 2 usage). */
export async function gmailCommand(argv: readonly string[], io: Io, deps: GmailDeps = {}): Promise<number> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === 'help') {
    io.stdout(GMAIL_HELP);
    return 0;
  }
  if (command === 'setup') return _setup(rest, io);
  if (command === 'run') return _run(rest, io, deps);
  io.stderr(`hooks-ingress gmail: ${command === undefined ? 'missing command' : `unknown command "${command}"`}\n\n${GMAIL_HELP}`);
  return USAGE;
}

/**
 * Applies `gmail setup` to a parsed config file without touching anything it does not own.
 * Works on a copy; `env` resolves `${NAME}` in hooks.path for the hook URL.
 */
export function applyGmailSetup(raw: unknown, options: SetupOptions, env: Env, newToken: () => string = generateToken): SetupResult {
  if (!_isObject(raw)) return { ok: false, problems: ['the file must hold a JSON object'] };
  const root = structuredClone(raw);
  const problems = _shapeProblems(root);
  if (problems.length > 0) return { ok: false, problems };
  const notes: string[] = [];
  const hooks = _ensureObject(root, 'hooks');

  if (hooks['enabled'] === false) notes.push('hooks.enabled was false; it is now true');
  hooks['enabled'] = true;
  if (hooks['token'] === undefined && hooks['tokenFile'] === undefined) {
    hooks['token'] = newToken();
    notes.push('generated a new hook token (hooks.token)');
  }
  const presets = _ensureArray(hooks, 'presets');
  if (!presets.includes('gmail')) presets.push('gmail');
  if (hooks['allowRequestSessionKey'] === false) {
    notes.push('hooks.allowRequestSessionKey was false; it is now true, because the gmail preset takes its session key from the payload');
  }
  hooks['allowRequestSessionKey'] = true;
  if (hooks['allowedSessionKeyPrefixes'] === undefined) {
    notes.push(`hooks.allowedSessionKeyPrefixes was not set; it is now ["${GENERATED_KEY_PREFIX}"], so session keys chosen by a request must start with it`);
  }
  const prefixes = _ensureArray(hooks, 'allowedSessionKeyPrefixes');
  // The preset's key starts with the same prefix as the generated keys; a prefix that admits one admits the other.
  const admitted = prefixes.some((p) => typeof p === 'string' && GENERATED_KEY_PREFIX.startsWith(p.trim().toLowerCase()));
  if (!admitted) prefixes.push(GENERATED_KEY_PREFIX);

  const gmail = _ensureObject(hooks, 'gmail');
  if (gmail['hookToken'] === undefined) {
    gmail['hookToken'] = newToken();
    notes.push('generated hooks.gmail.hookToken, the credential gog posts with: it opens the gmail hook and nothing else');
  }
  gmail['account'] = options.account;
  gmail['label'] = options.label ?? gmail['label'] ?? GMAIL_DEFAULTS.label;
  gmail['topic'] = options.topic ?? gmail['topic'] ?? GMAIL_DEFAULTS.topic;
  gmail['subscription'] = options.subscription ?? gmail['subscription'] ?? GMAIL_DEFAULTS.subscription;
  const url = _setupHookUrl(root, hooks, options.port, env);
  if (!url.ok) return { ok: false, problems: [url.problem] };
  const before = gmail['hookUrl'];
  if (typeof before === 'string' && before !== url.value) notes.push(`hooks.gmail.hookUrl was ${before}; it is now ${url.value}`);
  gmail['hookUrl'] = url.value;
  gmail['includeBody'] = options.includeBody ?? gmail['includeBody'] ?? GMAIL_DEFAULTS.includeBody;
  gmail['maxBytes'] = options.maxBytes ?? gmail['maxBytes'] ?? GMAIL_DEFAULTS.maxBytes;
  return { ok: true, value: root, notes };
}

/**
 * The arguments of `gog gmail watch serve` for a loaded config (the real gogcli flags). gog reads
 * its hook token from the command line only, so it gets hooks.gmail.hookToken, which opens the
 * gmail hook alone, never the hook token. `shown` puts placeholders where the credentials go.
 */
export function companionArgs(config: Config, shown = false): { ok: true; args: string[] } | { ok: false; problem: string } {
  const gmail = config.hooks.gmail;
  if (gmail.account === undefined) {
    return { ok: false, problem: 'hooks.gmail.account is not set: run "hooks-ingress gmail setup --account <address>" first' };
  }
  if (gmail.hookToken === undefined) {
    return { ok: false, problem: 'hooks.gmail.hookToken is not set: run "hooks-ingress gmail setup --account <address>" again to create it' };
  }
  const args = ['gmail', 'watch', 'serve', '--account', gmail.account];
  // hooks.gmail.serve configures gog's own push endpoint; gog's defaults apply to what it leaves out.
  for (const key of ['bind', 'port', 'path']) {
    const value = gmail.serve?.[key];
    if (typeof value === 'string' || typeof value === 'number') args.push(`--${key}`, String(value));
  }
  if (gmail.pushToken !== undefined) args.push('--token', shown ? '<hooks.gmail.pushToken>' : gmail.pushToken);
  args.push('--hook-url', gmail.hookUrl ?? hookUrl(config.gateway.port, config.hooks.path));
  args.push('--hook-token', shown ? '<hooks.gmail.hookToken>' : gmail.hookToken);
  if (gmail.includeBody ?? GMAIL_DEFAULTS.includeBody) args.push('--include-body');
  args.push('--max-bytes', String(gmail.maxBytes ?? GMAIL_DEFAULTS.maxBytes));
  return { ok: true, args };
}

/** The URL the companion posts to: this server on the loopback address, at `{path}/gmail`. */
export function hookUrl(port: number, path: string): string {
  return `http://127.0.0.1:${port}${normaliseHooksPath(path)}/gmail`;
}

/** The first executable file called `name` in the absolute directories of `env.PATH`, or `null`. */
export async function findOnPath(name: string, env: Env): Promise<string | null> {
  for (const dir of (env['PATH'] ?? '').split(delimiter)) {
    // An empty or relative entry means the current directory: never run a `gog` found there.
    if (!isAbsolute(dir)) continue;
    const file = join(dir, name);
    try {
      if (!(await stat(file)).isFile()) continue;
      await access(file, constants.X_OK);
      return file;
    } catch {
      // Not here: try the next directory.
    }
  }
  return null;
}

/** Quotes an argument for a POSIX shell when it holds anything but plain characters. */
export function shellWord(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

async function _setup(argv: readonly string[], io: Io): Promise<number> {
  const name = 'hooks-ingress gmail setup';
  let values;
  try {
    ({ values } = parseArgs({ args: [...argv], options: SETUP_OPTIONS, strict: true, allowPositionals: false }));
  } catch (error) {
    io.stderr(`${name}: ${(error as Error).message}\n\n${SETUP_HELP}`);
    return USAGE;
  }
  if (values.help === true) {
    io.stdout(SETUP_HELP);
    return 0;
  }
  const options = _setupOptions(values);
  if (!options.ok) {
    io.stderr(`${name}: ${options.error}\n\n${SETUP_HELP}`);
    return USAGE;
  }

  const { path } = locateConfig(values.config, io.env);
  const original = await _readOriginal(path);
  if (!original.ok) {
    io.stderr(`${name}: ${original.error}\n`);
    return FAILURE;
  }
  const parsed = original.text === null ? { ok: true as const, value: {} } : parseJsonc(original.text);
  if (!parsed.ok) {
    io.stderr(`${name}: cannot parse ${path}: ${parsed.error}\n`);
    return FAILURE;
  }
  const refuse = (problems: readonly string[]) => {
    io.stderr(`${name}: the result would be invalid, so ${path} was not changed:\n${problems.map((p) => `  ${p}\n`).join('')}`);
    return FAILURE;
  };
  const applied = applyGmailSetup(parsed.value, options.value, io.env);
  if (!applied.ok) return refuse(applied.problems);
  const built = await buildConfig(applied.value, { file: original.target, env: io.env });
  if (!built.ok) return refuse(built.problems);
  const args = companionArgs(built.config, true);
  if (!args.ok) return refuse([args.problem]);

  const text = `${JSON.stringify(applied.value, null, 2)}\n`;
  if (text === original.text) {
    io.stderr(`${name}: ${original.target} already holds this configuration; not rewritten\n`);
  } else {
    const backup = `${original.target}.bak`;
    let writing = original.text === null ? original.target : backup;
    try {
      await mkdir(dirname(original.target), { recursive: true, mode: 0o700 });
      if (original.text !== null) await _writeAtomic(backup, original.text);
      writing = original.target;
      await _writeAtomic(original.target, text);
    } catch (error) {
      io.stderr(`${name}: cannot write ${writing}: ${(error as NodeJS.ErrnoException).code ?? String(error)}; ${original.target} was not changed\n`);
      return FAILURE;
    }
    io.stderr(`${name}: wrote ${original.target}${original.text === null ? '' : ` (the original is in ${backup})`}\n`);
    if (original.text !== null && _hasComments(original.text)) {
      io.stderr(`${name}: the comments in ${original.target} were not kept (it was rewritten as JSON); ${backup} still has them\n`);
    }
  }
  for (const note of applied.notes) io.stderr(`${name}: ${note}\n`);

  const gmail = built.config.hooks.gmail;
  const topic = gmail.topic ?? GMAIL_DEFAULTS.topic;
  // Gmail wants the full topic name; a bare name cannot say which Google Cloud project it lives in.
  const fullTopic = topic.startsWith('projects/') ? topic : `projects/<project-id>/topics/${topic}`;
  const start = ['gmail', 'watch', 'start', '--account', options.value.account, '--topic', fullTopic, '--label', gmail.label ?? GMAIL_DEFAULTS.label];
  io.stderr(
    `${name}: register the watch once with the command below` +
      `${fullTopic === topic ? '' : ' (put your Google Cloud project id in the topic, or pass --topic projects/<id>/topics/<name>)'};` +
      ` Gmail ends a watch after 7 days, so renew it with "gog gmail watch renew --account ${shellWord(options.value.account)}":\n` +
      `  gog ${start.map(shellWord).join(' ')}\n`,
  );
  io.stderr(
    `${name}: "hooks-ingress gmail run" runs the companion command below with its credentials in place of the placeholders` +
      ` (from ${original.target}). gog takes its hook token only on its command line, where local users can read it,` +
      ` so it gets hooks.gmail.hookToken, which opens the gmail hook and nothing else.\n`,
  );
  io.stdout(`gog ${args.args.map(shellWord).join(' ')}\n`);
  return 0;
}

function _setupOptions(values: {
  account?: string;
  label?: string;
  topic?: string;
  subscription?: string;
  port?: string;
  'include-body'?: boolean;
  'no-include-body'?: boolean;
  'max-bytes'?: string;
}): { ok: true; value: SetupOptions } | { ok: false; error: string } {
  const account = values.account?.trim();
  if (!account) return { ok: false, error: '--account is required (the Gmail address to watch)' };
  const value: SetupOptions = { account };
  for (const key of ['label', 'topic', 'subscription'] as const) {
    const given = values[key];
    if (given === undefined) continue;
    if (given.trim() === '') return { ok: false, error: `--${key} may not be empty` };
    value[key] = given.trim();
  }
  if (values.port !== undefined) {
    const port = Number(values.port);
    if (!(Number.isInteger(port) && port >= 1 && port <= 65535)) return { ok: false, error: '--port must be an integer from 1 to 65535' };
    value.port = port;
  }
  if (values['max-bytes'] !== undefined) {
    const max = Number(values['max-bytes']);
    if (!(Number.isInteger(max) && max >= 1)) return { ok: false, error: '--max-bytes must be a whole number of at least 1' };
    value.maxBytes = max;
  }
  if (values['include-body'] && values['no-include-body']) return { ok: false, error: 'Cannot set both --include-body and --no-include-body' };
  if (values['include-body']) value.includeBody = true;
  if (values['no-include-body']) value.includeBody = false;
  return { ok: true, value };
}

function _setupHookUrl(
  root: Record<string, unknown>,
  hooks: Record<string, unknown>,
  flag: number | undefined,
  env: Env,
): { ok: true; value: string } | { ok: false; problem: string } {
  const gateway = root['gateway'];
  const configured = _isObject(gateway) && typeof gateway['port'] === 'number' ? gateway['port'] : undefined;
  const port = flag ?? configured ?? DEFAULTS.port;
  if (port === 0) {
    return { ok: false, problem: 'hooks.gmail.hookUrl: gateway.port is 0 (any free port), so pass --port with the port the server listens on' };
  }
  // An invalid hooks.path is reported by the validation that follows; the URL only needs a best guess.
  const raw = typeof hooks['path'] === 'string' ? substituteEnv(hooks['path'], 'hooks.path', env, []) : DEFAULTS.path;
  return { ok: true, value: hookUrl(port, String(raw)) };
}

async function _run(argv: readonly string[], io: Io, deps: GmailDeps): Promise<number> {
  const name = 'hooks-ingress gmail run';
  let values;
  try {
    ({ values } = parseArgs({ args: [...argv], options: RUN_OPTIONS, strict: true, allowPositionals: false }));
  } catch (error) {
    io.stderr(`${name}: ${(error as Error).message}\n\n${RUN_HELP}`);
    return USAGE;
  }
  if (values.help === true) {
    io.stdout(RUN_HELP);
    return 0;
  }
  const { path } = locateConfig(values.config, io.env);
  const loaded = await loadConfig(path, io.env);
  if (!loaded.ok) {
    io.stderr(`${name}: invalid config ${path}:\n${loaded.problems.map((p) => `  ${p}\n`).join('')}`);
    return FAILURE;
  }
  const { config } = loaded;
  const built = companionArgs(config);
  if (!built.ok) {
    io.stderr(`${name}: ${built.problem}\n`);
    return FAILURE;
  }
  if (!config.hooks.enabled || !config.hooks.presets.includes('gmail')) {
    io.stderr(`${name}: warning: hooks.enabled is not true or hooks.presets lacks "gmail", so the server will not accept the companion's posts\n`);
  }
  const gog = await (deps.which ?? findOnPath)('gog', io.env);
  if (gog === null) {
    io.stderr(`${name}: gog is not on PATH: ${INSTALL_HINT}\n`);
    return FAILURE;
  }
  await _supervise(gog, built.args, io, deps);
  return 0;
}

/**
 * The companion `serve` runs beside itself (and stops with itself) when the Gmail preset is set up:
 * `null` when it is not, `skip` with the reason when it is but the companion cannot run.
 */
export async function serveCompanion(config: Config, io: Io, deps: GmailDeps = {}): Promise<{ run: () => Promise<void> } | { skip: string } | null> {
  if (config.hooks.gmail.account === undefined || !config.hooks.enabled || !config.hooks.presets.includes('gmail')) return null;
  if (io.env['HOOKS_INGRESS_SKIP_GMAIL_WATCHER'] === '1') return { skip: 'HOOKS_INGRESS_SKIP_GMAIL_WATCHER=1' };
  const built = companionArgs(config);
  if (!built.ok) return { skip: built.problem };
  const gog = await (deps.which ?? findOnPath)('gog', io.env);
  if (gog === null) return { skip: `gog is not on PATH (${INSTALL_HINT})` };
  return { run: () => _supervise(gog, built.args, io, deps) };
}

/** Keeps the companion running until SIGTERM, SIGINT or `io.signal`; passes the signal on and waits for it. */
async function _supervise(file: string, args: readonly string[], io: Io, deps: GmailDeps): Promise<void> {
  const name = 'hooks-ingress gmail run';
  const spawn = deps.spawn ?? _spawn;
  const now = deps.now ?? Date.now;
  const pause = deps.sleep ?? sleep;
  const stopping = new AbortController();
  let forward: NodeJS.Signals = 'SIGTERM';
  const stop = (signal: NodeJS.Signals) => {
    forward = signal;
    stopping.abort();
  };
  const onTerm = () => stop('SIGTERM');
  const onInt = () => stop('SIGINT');
  const onAbort = () => stop('SIGTERM');
  process.on('SIGTERM', onTerm).on('SIGINT', onInt);
  io.signal?.addEventListener('abort', onAbort, { once: true });
  if (io.signal?.aborted) stopping.abort();
  const shown = `${file} ${_redact(args).map(shellWord).join(' ')}`;
  let delay: number = BACKOFF.firstMs;
  try {
    while (!stopping.signal.aborted) {
      const started = now();
      const child = _start(spawn, file, args, io);
      io.stderr(`${name}: started ${shown} (pid ${child.pid ?? '?'})\n`);
      const ended = _ended(child);
      const outcome = await _unlessAborted(ended, stopping.signal);
      if (outcome === null) {
        await _stop(child, ended, forward, pause);
        io.stderr(`${name}: gog stopped\n`);
        return;
      }
      if (now() - started >= BACKOFF.resetAfterMs) delay = BACKOFF.firstMs;
      io.stderr(`${name}: gog ${outcome} after ${((now() - started) / 1000).toFixed(1)} s; starting it again in ${delay / 1000} s\n`);
      await pause(delay, stopping.signal);
      delay = Math.min(delay * 2, BACKOFF.maxMs);
    }
  } finally {
    process.off('SIGTERM', onTerm).off('SIGINT', onInt);
    io.signal?.removeEventListener('abort', onAbort);
  }
}

function _start(spawn: NonNullable<GmailDeps['spawn']>, file: string, args: readonly string[], io: Io): ChildProcess {
  const child = spawn(file, args, io.env);
  child.stdout?.setEncoding('utf8').on('data', (text: string) => io.stdout(text));
  child.stderr?.setEncoding('utf8').on('data', (text: string) => io.stderr(text));
  return child;
}

/** Resolves with how the child ended, once its output is closed (or it could not start). */
function _ended(child: ChildProcess): Promise<string> {
  return new Promise((resolve) => {
    child.once('close', (code: number | null, signal: NodeJS.Signals | null) =>
      resolve(code === null ? `was ended by ${signal ?? 'a signal'}` : `exited with code ${code}`),
    );
    child.once('error', (error) => resolve(`could not run: ${error.message}`));
  });
}

async function _stop(child: ChildProcess, ended: Promise<string>, signal: NodeJS.Signals, sleep: NonNullable<GmailDeps['sleep']>): Promise<void> {
  _signal(child, signal);
  const done = new AbortController();
  const grace = sleep(STOP_GRACE_MS, done.signal).then(() => {
    if (!done.signal.aborted) _signal(child, 'SIGKILL');
  });
  await ended;
  done.abort();
  await grace;
}

// By pid, because Deno's ChildProcess.kill() sends nothing once it has been called before.
function _signal(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(child.pid, signal);
  } catch {
    // It ended meanwhile.
  }
}

/** The promise's value, or `null` as soon as the signal aborts. */
async function _unlessAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | null> {
  if (signal.aborted) return null;
  let onAbort = () => {};
  const aborted = new Promise<null>((resolve) => {
    onAbort = () => resolve(null);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** The arguments with the values of secret flags replaced, for logs. */
function _redact(args: readonly string[]): string[] {
  return args.map((arg, i) => (args[i - 1] === '--hook-token' || args[i - 1] === '--token' ? '<redacted>' : arg));
}

function _spawn(file: string, args: readonly string[], env: Env): ChildProcess {
  return spawnChild(file, [...args], { env: { ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The file's text (`null` when it does not exist) and the real path to write, so a symlink stays one. */
async function _readOriginal(path: string): Promise<{ ok: true; target: string; text: string | null } | { ok: false; error: string }> {
  try {
    const target = await realpath(path);
    return { ok: true, target, text: await readFile(target, 'utf8') };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { ok: true, target: path, text: null };
    return { ok: false, error: `cannot read ${path}: ${code ?? String(error)}` };
  }
}

/** Writes through a fresh owner-only file renamed into place, so a reader never sees half a file. */
async function _writeAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
}

/** Whether the JSONC text has a comment: a slash outside strings that stripping blanked. */
function _hasComments(text: string): boolean {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const stripped = stripJsonc(body);
  for (let i = 0; i < body.length; i++) if (body[i] === '/' && stripped[i] === ' ') return true;
  return false;
}

function _isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Where a key setup writes into holds something of another kind: it cannot write there without losing it. */
function _shapeProblems(root: Record<string, unknown>): string[] {
  const hooks = root['hooks'];
  if (hooks === undefined) return [];
  if (!_isObject(hooks)) return ['hooks: must be an object'];
  const problems: string[] = [];
  if (hooks['gmail'] !== undefined && !_isObject(hooks['gmail'])) problems.push('hooks.gmail: must be an object');
  for (const key of ['presets', 'allowedSessionKeyPrefixes']) {
    if (hooks[key] !== undefined && !Array.isArray(hooks[key])) problems.push(`hooks.${key}: must be an array`);
  }
  return problems;
}

/** The object under `key`, created when absent; `_shapeProblems` ruled out anything else. */
function _ensureObject(parent: Record<string, unknown>, key: string): Record<string, unknown> {
  if (parent[key] === undefined) parent[key] = {};
  return parent[key] as Record<string, unknown>;
}

/** The array under `key`, created when absent; `_shapeProblems` ruled out anything else. */
function _ensureArray(parent: Record<string, unknown>, key: string): unknown[] {
  if (parent[key] === undefined) parent[key] = [];
  return parent[key] as unknown[];
}
