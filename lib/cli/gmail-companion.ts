import { spawn as spawnChild, type ChildProcess } from 'node:child_process';
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { delimiter, isAbsolute, join } from 'node:path';
import { normaliseHooksPath } from '../config/file-schema.ts';
import { loadConfig } from '../config/load.ts';
import { locateConfig } from '../config/locate.ts';
import type { Config, Env } from '../config/types.ts';
import { sleep } from '../retry.ts';
import { hideUrlCredentials } from '../text.ts';
import { FAILURE, type Io } from './io.ts';
import { relayLines } from './relay.ts';
import { parseCommand } from './usage.ts';

// The Gmail companion (`gog gmail watch serve`): its arguments, and the supervisor that keeps it running.

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

export const INSTALL_HINT =
  'install gogcli (brew install steipete/tap/gogcli, or see https://gogcli.sh) and authorise the account with "gog auth add <address>"';


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

const RUN_OPTIONS = {
  config: { type: 'string', short: 'c' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** What `gmail run` touches outside the process; each is injectable for tests. */
export interface GmailDeps {
  spawn?: (file: string, args: readonly string[], env: Env) => ChildProcess;
  which?: (name: string, env: Env) => Promise<string | null>;
  now?: () => number;
  /** Resolves after `ms`, or as soon as `signal` aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
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

/** Runs `hooks-ingress gmail run ARGV`: the companion in the foreground. */
export async function runCompanion(argv: readonly string[], io: Io, deps: GmailDeps): Promise<number> {
  const name = 'hooks-ingress gmail run';
  const parsed = parseCommand('gmail run', argv, { options: RUN_OPTIONS, help: RUN_HELP }, io);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
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
  const shown = hideUrlCredentials(`${file} ${_redact(args).map(shellWord).join(' ')}`);
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
  const child = spawn(file, args, companionEnv(io.env));
  // At a bounded pace: gog writing without pause waits on its own writes instead of filling our memory.
  if (child.stdout) relayLines(child.stdout, (text) => io.stdout(text));
  if (child.stderr) relayLines(child.stderr, (text) => io.stderr(text));
  return child;
}

/**
 * What gog's environment keeps of ours: what it needs to run and find its own configuration and
 * keyring (PATH, HOME, the XDG directories, the D-Bus session of the Secret Service keyring), its
 * own settings (GOG_*, such as GOG_KEYRING_PASSWORD for its file keyring), the locale and time zone,
 * and the TLS and proxy settings Go's HTTP client reads. Nothing else: not the hook token, nor an
 * API key, nor any other secret the server was given in its environment.
 */
export function companionEnv(env: Env): Env {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && (_COMPANION_ENV.has(name) || /^(GOG|XDG|LC)_/.test(name))) kept[name] = value;
  }
  return kept;
}

const _COMPANION_ENV = new Set([
  'PATH', 'HOME', 'USER', 'LOGNAME', 'TMPDIR', 'TZ', 'LANG',
  'DBUS_SESSION_BUS_ADDRESS',
  'SSL_CERT_FILE', 'SSL_CERT_DIR',
  'HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy',
]);

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
  return spawnChild(file, [...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
}

