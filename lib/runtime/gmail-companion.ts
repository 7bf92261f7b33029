// The Gmail companion's running part: the supervisor that keeps `gog gmail watch serve` running
// (for `gmail run`, and beside `serve`), the environment it gets, and its output passed on.

import { type ChildProcess, spawn as spawnChild } from 'node:child_process';
import type { Env } from '../config/types.ts';
import { sleep } from '../retry.ts';
import { hideUrlCredentials, shellWord } from '../text.ts';
import { relayLines } from './relay.ts';

/** How `gmail run` restarts the companion: 1 s doubling to 60 s, back to 1 s after a run of 60 s. */
export const BACKOFF = { firstMs: 1_000, maxMs: 60_000, resetAfterMs: 60_000 } as const;

/** How long a companion asked to stop gets before it is killed. */
export const STOP_GRACE_MS = 10_000;

/** Where the supervisor writes, what it passes on of the environment, and what stops it (the CLI's io). */
export interface CompanionIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Env;
  signal?: AbortSignal;
}

/** What the supervisor touches outside the process; each is injectable for tests. */
export interface SuperviseDeps {
  spawn?: (file: string, args: readonly string[], env: Env) => ChildProcess;
  now?: () => number;
  /** Resolves after `ms`, or as soon as `signal` aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** Keeps the companion running until SIGTERM, SIGINT or `io.signal`; passes the signal on and waits for it. */
export async function superviseCompanion(
  file: string,
  args: readonly string[],
  io: CompanionIo,
  deps: SuperviseDeps,
): Promise<void> {
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
      io.stderr(
        `${name}: gog ${outcome} after ${((now() - started) / 1000).toFixed(1)} s; starting it again in ${
          delay / 1000
        } s\n`,
      );
      await pause(delay, stopping.signal);
      delay = Math.min(delay * 2, BACKOFF.maxMs);
    }
  } finally {
    process.off('SIGTERM', onTerm).off('SIGINT', onInt);
    io.signal?.removeEventListener('abort', onAbort);
  }
}

function _start(
  spawn: NonNullable<SuperviseDeps['spawn']>,
  file: string,
  args: readonly string[],
  io: CompanionIo,
): ChildProcess {
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
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'TMPDIR',
  'TZ',
  'LANG',
  'DBUS_SESSION_BUS_ADDRESS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'HTTPS_PROXY',
  'https_proxy',
  'HTTP_PROXY',
  'http_proxy',
  'NO_PROXY',
  'no_proxy',
]);

/** Resolves with how the child ended, once its output is closed (or it could not start). */
function _ended(child: ChildProcess): Promise<string> {
  return new Promise((resolve) => {
    child.once(
      'close',
      (code: number | null, signal: NodeJS.Signals | null) =>
        resolve(code === null ? `was ended by ${signal ?? 'a signal'}` : `exited with code ${code}`),
    );
    child.once('error', (error) => resolve(`could not run: ${error.message}`));
  });
}

async function _stop(
  child: ChildProcess,
  ended: Promise<string>,
  signal: NodeJS.Signals,
  sleep: NonNullable<SuperviseDeps['sleep']>,
): Promise<void> {
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
