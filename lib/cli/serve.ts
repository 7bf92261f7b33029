import { access, mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Io } from './main.ts';
import { loadConfig, locateConfig, locateStateDir, type Config, type ConfigResult } from '../config/config.ts';
import { createDeliver } from '../delivery/deliver.ts';
import { serveCompanion } from './gmail.ts';
import { Heartbeat } from '../runtime/heartbeat.ts';
import { checkTransforms, TransformPool } from '../hooks/transforms/pool.ts';
import { createLogger } from '../log.ts';
import { Runner } from '../runtime/runner.ts';
import { providerRegistry } from '../runtime/providers/registry.ts';
import { createApp, listen } from '../edge/server.ts';
import { lockStateDir, type StateLock } from '../store/state-lock.ts';
import { Store } from '../store/store.ts';
import { Transcripts } from '../store/transcripts.ts';
import { inheritedListenFd, unsetListenEnv } from '../edge/systemd.ts';
import { createTelemetry } from '../edge/telemetry.ts';
import { generateToken } from '../guard/token.ts';

// The composition root: builds the store, runtime, delivery and HTTP app from the config, and runs them.

/** How long a stopping server lets requests in flight finish. */
export const DRAIN_MS = 10_000;

const FAILURE = 1;
const USAGE = 2;

/** What `serve` (and the commands that read its config) take from the command line. */
export interface ServeFlags {
  config?: string;
  host?: string;
  port?: string;
  'state-dir'?: string;
}

/** Loads the config the flags and environment name; prints every problem (and ignored key) on stderr. */
export async function loadConfigFor(flags: ServeFlags, io: Io, options: { transforms?: boolean } = {}): Promise<Config | null> {
  const { path } = locateConfig(flags.config, io.env);
  const result = await _reload(flags, io, options.transforms ?? false);
  if (!result.ok) {
    io.stderr(`hooks-ingress: invalid config ${path}:\n${result.problems.map((p) => `  ${p}\n`).join('')}`);
    return null;
  }
  for (const key of result.ignored) io.stderr(`hooks-ingress: ${key} is not used by hooks-ingress (ignored)\n`);
  for (const warning of result.warnings) io.stderr(`hooks-ingress: warning: ${warning}\n`);
  return result.config;
}

// The running server's pid file (also the state directory's lock), read by `hooks-ingress reload`.
export { PID_FILE } from '../store/state-lock.ts';

// Loads the config, and (for the commands that will run them) loads its transforms too.
async function _reload(flags: ServeFlags, io: Io, transforms = true): Promise<ConfigResult> {
  const result = await loadConfig(locateConfig(flags.config, io.env).path, io.env);
  if (!result.ok || !transforms) return result;
  const problems = await checkTransforms(result.config);
  return problems.length === 0 ? result : { ok: false, problems };
}

/** Writes a first config with a fresh token, readable by its owner only; says where, never what. */
async function _firstRun(path: string, io: Io): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const config = { hooks: { enabled: true, token: generateToken() } };
  try {
    await writeFile(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    io.stderr(`hooks-ingress: created ${path} with a new hook token (read it there; it is not printed)\n`);
  } catch (error) {
    // Another process created it first: use that one.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** Runs the server until SIGTERM, SIGINT or `io.signal`; resolves to the exit code. */
export async function serve(flags: ServeFlags, io: Io): Promise<number> {
  const port = flags.port === undefined ? undefined : Number(flags.port);
  if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65535)) {
    io.stderr(`hooks-ingress serve: --port must be an integer from 0 to 65535\n`);
    return USAGE;
  }
  const located = locateConfig(flags.config, io.env);
  if (located.implicit && !(await exists(located.path))) await _firstRun(located.path, io);
  let config = await loadConfigFor(flags, io, { transforms: true });
  if (config === null) return FAILURE;

  const log = createLogger(io.stderr);
  const stateDir = locateStateDir(flags['state-dir'], config, io.env);
  const opened = await _openState(stateDir, config, io);
  if (opened === null) return FAILURE;
  const { store, tornBytes, lock, rejected } = opened;
  // One warning per line left out (a few, then a count), so a damaged journal is noticed and found.
  for (const { line, problem } of rejected.slice(0, 20)) log.warn('journal line skipped', { line, problem });
  if (rejected.length > 0 || tornBytes > 0) log.warn('journal had unreadable lines', { skipped: rejected.length, tornBytes });
  const heartbeat = new Heartbeat({
    store,
    everyMs: config.agents.heartbeatEveryMs,
    onBeat: () => void runner.heartbeatTurn(),
    onError: (error) => log.error('heartbeat not recorded', { error: String(error) }),
  });
  const runtimeParts = (c: Config) => ({
    config: c,
    providerFor: providerRegistry(c.providers),
    deliver: createDeliver({ channels: c.channels, lastRoute: () => store.lastRoute() }),
  });
  const runner = new Runner({ ...runtimeParts(config), store, transcripts: new Transcripts(stateDir), heartbeat, log });
  runner.start();
  // A `now` wake acknowledged just before a crash still gets its heartbeat.
  if (store.heartbeatOwed()) heartbeat.request('recovery');
  heartbeat.start();

  const transforms = new TransformPool(log);
  transforms.configure(config);
  // The limiter lives in the app (a reload may replace it); the metrics page reads it when rendered.
  const telemetry = createTelemetry({ store, limiter: () => app.limiterStats(), queueDepth: () => runner.depth });
  const app = createApp({ config, store, heartbeat, log, runs: runner, transforms: transforms.call, telemetry });
  const stop = async () => {
    await runner.stop();
    await heartbeat.stop();
    await transforms.close();
    await store.close();
    await lock.release();
  };

  // SIGHUP re-reads the config: a valid one takes over for new requests, an invalid one is logged
  // and ignored. Reloads run one at a time, in order, and every part is built before any is swapped.
  let reloading = Promise.resolve();
  const reload = async () => {
    const next = await _reload(flags, io);
    if (!next.ok) return log.error('reload refused: the config has problems; the old one stays', { problems: next.problems.join('; ') });
    const parts = runtimeParts(next.config);
    transforms.configure(next.config);
    runner.reconfigure(parts);
    app.reload(next.config);
    config = next.config;
    log.info('reloaded', { file: config.file });
  };
  const onReload = () => {
    reloading = reloading.then(reload).catch((error: unknown) => log.error('reload failed; the old config stays where it was not yet replaced', { error: String(error) }));
  };
  // Handlers are in place before the server says it is ready, so an early signal is never fatal.
  process.on('SIGHUP', onReload);
  const stopRequest = _stopSignal(io.signal);

  // systemd socket activation: serve on the inherited socket instead of binding one.
  const fd = inheritedListenFd(io.env, process.pid);
  // The socket is ours alone: children (command providers, transforms) must not think it is theirs.
  if (fd !== null && io.env === process.env) unsetListenEnv(process.env);
  let running;
  try {
    running = await listen(app, fd !== null ? { fd } : { host: flags.host ?? config.gateway.bind, port: port ?? config.gateway.port });
  } catch (error) {
    io.stderr(`hooks-ingress: cannot listen: ${(error as Error).message}\n`);
    process.off('SIGHUP', onReload);
    stopRequest.release();
    await stop();
    return FAILURE;
  }
  io.stdout(`listening on ${running.url}\n`);
  log.info('started', { url: running.url, stateDir, hooks: config.hooks.enabled ? config.hooks.path : 'disabled', activated: fd !== null });

  // The Gmail watcher, when the preset is set up and gog is installed, runs and stops with the server.
  const companionStop = new AbortController();
  const companion = await serveCompanion(config, { ...io, signal: companionStop.signal });
  if (companion !== null && 'skip' in companion) log.warn('gmail watcher not started', { reason: companion.skip });
  const watching = companion !== null && 'run' in companion ? companion.run() : Promise.resolve();
  const signal = await stopRequest.stopped;
  companionStop.abort();
  await watching;
  process.off('SIGHUP', onReload);
  await reloading;
  log.info('stopping', { signal });
  await running.close(DRAIN_MS);
  await stop();
  log.info('stopped', {});
  return 0;
}

/**
 * Takes the state directory (one server per directory) and opens its journal. A directory another
 * server holds, or one that cannot be created or written, ends the start with one line on stderr.
 */
async function _openState(dir: string, config: Config, io: Io): Promise<(Awaited<ReturnType<typeof Store.open>> & { lock: StateLock }) | null> {
  let lock: StateLock;
  try {
    const outcome = await lockStateDir(dir);
    if (!outcome.ok) {
      io.stderr(`hooks-ingress: state directory ${dir} is in use by the server with pid ${outcome.pid}; stop it first or give another --state-dir\n`);
      return null;
    }
    lock = outcome.lock;
  } catch (error) {
    io.stderr(`hooks-ingress: cannot use state directory ${dir}: ${_reason(error)}\n`);
    return null;
  }
  try {
    return { ...(await Store.open(dir, { idempotencyTtlMs: config.hooks.idempotencyTtlSeconds * 1000 })), lock };
  } catch (error) {
    await lock.release().catch(() => {});
    io.stderr(`hooks-ingress: cannot use state directory ${dir}: ${_reason(error)}\n`);
    return null;
  }
}

// A filesystem error as one line: its code and what the OS said, without the stack.
function _reason(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException;
  return code === undefined ? String(message ?? error) : `${code}: ${message.replace(/^[A-Z]+: /, '')}`;
}

/** Whether a path exists. */
export async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/** Resolves with the name of the first stop request (SIGTERM, SIGINT, or `abort`); `release` drops the handlers. */
function _stopSignal(abort?: AbortSignal): { stopped: Promise<string>; release: () => void } {
  let release = () => {};
  const stopped = new Promise<string>((resolve) => {
    const onTerm = () => stop('SIGTERM');
    const onInt = () => stop('SIGINT');
    const onAbort = () => stop('abort');
    release = () => {
      process.off('SIGTERM', onTerm).off('SIGINT', onInt);
      abort?.removeEventListener('abort', onAbort);
    };
    const stop = (name: string) => {
      release();
      resolve(name);
    };
    process.on('SIGTERM', onTerm).on('SIGINT', onInt);
    abort?.addEventListener('abort', onAbort, { once: true });
    if (abort?.aborted) stop('abort');
  });
  return { stopped, release };
}
