// The server process's lifecycle: config, service, listener, signals, pid file, companion, stop.

import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { locateConfig, locateStateDir } from '../config/locate.ts';
import type { Config } from '../config/types.ts';
import { type ControlHandler, type ControlServer, socketPathProblem, startControl } from '../control/server.ts';
import { listen, type Running } from '../edge/listen.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import { inheritedListenFd, unsetListenEnv } from '../edge/systemd.ts';
import { generateToken } from '../guard/token.ts';
import { fileModeWarnings } from '../config/file-modes.ts';
import { partialWalk, stateExposure } from '../config/state-exposure.ts';
import { readinessWarnings } from '../config/readiness.ts';
import { type BoundedLogger, boundWarnings, bufferLines, createLogger, flushOnExit, type Logger } from '../log.ts';
import { chooseLogFormat, jsonLinesToText, LOG_FORMATS, type LogFormat } from './log-text.ts';
import { secureStateDir } from '../store/state/access.ts';
import { lockStateDir, type StateLock } from '../store/state/lock.ts';
import { type Command, COMMON, type Flags } from './command.ts';
import { ignoreDebuggerSignal } from './debugger-signal.ts';
import { exists, FAILURE, type Io, messagePrefix, USAGE } from './io.ts';
import { loadConfigFor } from './load-config.ts';
import {
  builtOnFirstCall,
  DROP_OP,
  PAUSE_OP,
  REDELIVER_OP,
  RELOAD_PLAN_OP,
  REPLAY_OP,
  RESOLVE_OP,
  RESUME_OP,
  RETRY_OP,
  serverOperations,
  TRY_OP,
} from '../control/operations.ts';
import { Claims } from '../server/claims.ts';
import type { RunningInspector } from '../inspector/serve.ts';
import { type Reloader, reloader } from '../server/reload-plan.ts';
import type { Reloads } from '../server/reloads.ts';
import { type Service, startService } from '../server/service.ts';
import { usageLine } from './usage.ts';

/** How long a stopping server lets requests in flight finish. */
export const DRAIN_MS = 10_000;

/** `hooks-ingress serve` (the default command). */
export const serveCommand: Command = {
  options: {
    ...COMMON,
    host: { type: 'string' },
    port: { type: 'string', short: 'p' },
    'state-dir': { type: 'string' },
    'log-format': { type: 'string' },
  },
  help: `Usage: hooks-ingress serve [options]

Serve the webhook endpoints until SIGTERM or SIGINT. Prints "listening on URL" once
ready, then one log line per request on stderr (a flood's alike refusals counted, not
each logged; see log.requests in hooks-ingress.json(5)): text on a terminal, JSON otherwise.

Options:
  -c, --config PATH     config file (else $HOOKS_INGRESS_CONFIG, else
                        $XDG_CONFIG_HOME/hooks-ingress/config.json)
      --host HOST       address to bind (overrides gateway.bind)
  -p, --port PORT       port to bind; 0 takes a free one (overrides gateway.port)
      --state-dir DIR   state directory (overrides state.dir and $STATE_DIRECTORY)
      --log-format F    json or text, whatever stderr is
  -h, --help            show this help
`,
  run: (flags, _positionals, io) => serve(flags, io),
};

/** Runs the server until SIGTERM, SIGINT or `io.signal`; resolves to the exit code. */
export async function serve(flags: Flags, io: Io): Promise<number> {
  // Everything serve writes to stderr goes through one buffer, written once per event-loop turn,
  // so the request log stays in order with the rest and costs one write per turn, not per line.
  const lines = bufferLines(io.stderr);
  const release = flushOnExit(lines);
  // First of all, and until the very end: the transforms are loaded (run) while the config loads.
  const format = chooseLogFormat(flags['log-format'] as LogFormat | undefined, io.stderrIsTerminal === true);
  const releaseDebugger = ignoreDebuggerSignal(createLogger(logWriter(format, lines.write)));
  try {
    return await _serve(flags, { ...io, stderr: lines.write });
  } finally {
    lines.flush();
    releaseDebugger();
    release();
  }
}

async function _serve(flags: Flags, io: Io): Promise<number> {
  const asked = _checkFlags(flags, io);
  if (asked === null) return USAGE;
  const prepared = await _prepare(flags, io, asked.format);
  if (prepared === null) return FAILURE;
  const { config, log, stateDir } = prepared;
  const startedAt = Date.now();
  const lock = await _lockState(stateDir, io);
  if (lock === null) return FAILURE;
  const service = await _start(config, stateDir, log, io, lock);
  if (service === null) return FAILURE;
  const reloads = await _reloadOnHangup(flags, io, log, service, config, stateDir);
  const stopRequest = _stopSignal(io.signal);
  const running = await _listen(flags, asked.port, config, io, service);
  const replays = _replays(stateDir, service, log);
  const inspector = running === null ? null : await _inspector(config, stateDir, io, log, service, replays);
  const control = running === null || inspector === false
    ? null
    : await _control(stateDir, io, log, service, reloads.reloads, startedAt, running.server.url, {
      ...replays,
      inspector,
      reloader: reloads.reloader,
    });
  const started: _Started = { lock, service, log, reloads, stopRequest, inspector };
  if (running === null || inspector === false || control === null) {
    await _abandon(started, running);
    return FAILURE;
  }
  io.stdout(`listening on ${running.server.url}\n`);
  log.info('started', {
    url: running.server.url,
    stateDir,
    hooks: config.hooks.enabled ? config.hooks.path : 'disabled',
    activated: running.activated,
  });
  if (inspector) log.info('inspector listening', { url: inspector.url });

  const signal = await _withCompanion(config, io, log, stopRequest.stopped);
  await _stop(started, control, running, signal);
  return 0;
}

// One replay, resolve, retry and redelivery for both ways in: `requests replay`/`resolve` and
// `runs retry`/`redeliver` over the control channel and the inspector's buttons, sharing the claims
// of the replays and retries running now; each operation's code is imported at its first call.
function _replays(stateDir: string, service: Service, log: Logger): _Replays {
  const claims = new Claims();
  return {
    retry: builtOnFirstCall(async () =>
      (await import('../server/retry.ts')).retryOperation({
        stateDir,
        ledger: service.ledger,
        store: service.store,
        runs: service.runner,
        config: service.config,
        claims,
        newId: () => crypto.randomUUID(),
      })
    ),
    redeliver: builtOnFirstCall(async () =>
      (await import('../server/redeliver.ts')).redeliverOperation({
        store: service.store,
        runs: service.runner,
        config: service.config,
        claims,
      })
    ),
    replay: builtOnFirstCall(async () =>
      (await import('../server/replay.ts')).replayOperation({
        stateDir,
        ledger: service.ledger,
        app: service.app,
        store: service.store,
        claims,
        log,
      })
    ),
    resolve: builtOnFirstCall(async () =>
      (await import('../server/resolve.ts')).resolveOperation({
        stateDir,
        ledger: service.ledger,
        store: service.store,
        claims,
      })
    ),
  };
}

/** The operations over stored requests and runs that the control channel and the inspector share. */
type _Replays = Record<'replay' | 'resolve' | 'retry' | 'redeliver', ControlHandler>;

// The flags checked before anything is read: the port, and the log format asked for.
function _checkFlags(flags: Flags, io: Io): { port: number | undefined; format: LogFormat | undefined } | null {
  const port = flags.port === undefined ? undefined : Number(flags.port);
  if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65535)) {
    io.stderr(usageLine('serve', `--port must be an integer from 0 to 65535, got "${flags.port}"`));
    return null;
  }
  const asked = flags['log-format'];
  if (asked !== undefined && !(LOG_FORMATS as readonly string[]).includes(asked)) {
    io.stderr(usageLine('serve', `--log-format must be json or text, got "${asked}"`));
    return null;
  }
  return { port, format: asked as LogFormat | undefined };
}

// The config (written on a first run), its warnings, the logger and a state directory the server
// can use, all before anything starts; `null` once the reason is said.
async function _prepare(
  flags: Flags,
  io: Io,
  format: LogFormat | undefined,
): Promise<{ config: Config; log: BoundedLogger; stateDir: string } | null> {
  const located = locateConfig(flags.config, io.env);
  if (located.implicit && !(await exists(located.path))) await _firstRun(located.path, io);
  const config = await loadConfigFor(flags, io, { transforms: true });
  if (config === null) return null;
  for (const warning of [...readinessWarnings(config), ...(await fileModeWarnings(config))]) {
    io.stderr(`${messagePrefix(io)}: warning: ${warning}\n`);
  }

  // Warnings and errors bounded per message: a flood of one cannot bury the others (lib/log.ts).
  const log = boundWarnings(createLogger(logWriter(chooseLogFormat(format, io.stderrIsTerminal === true), io.stderr)));
  const stateDir = locateStateDir(flags['state-dir'], config, io.env);
  // Found before anything starts: a server whose control channel cannot exist is not started.
  const tooLong = socketPathProblem(stateDir);
  if (tooLong !== null) {
    io.stderr(`${messagePrefix(io)}: cannot use state directory ${stateDir}: ${tooLong}\n`);
    return null;
  }
  // A transform child may read the transforms directory: the state (journal, control secret) must
  // lie outside it, and outside what its links lead to.
  const exposure = await stateExposure(stateDir, config.hooks.transformsDir);
  if (exposure.problem !== null) {
    io.stderr(`${messagePrefix(io)}: cannot use state directory ${stateDir}: ${exposure.problem}\n`);
    return null;
  }
  if (exposure.partial) io.stderr(`${messagePrefix(io)}: warning: ${partialWalk(config.hooks.transformsDir)}\n`);
  return { config, log, stateDir };
}

/** What a start has made before the server listens, for the stop (or the start given up) to undo. */
interface _Started {
  lock: StateLock;
  service: Service;
  log: BoundedLogger;
  reloads: { reloads: Reloads; release: () => void };
  stopRequest: { release: () => void };
  inspector: RunningInspector | null | false;
}

// A start given up half-way (the listener, the inspector or the control channel could not start):
// what started stops at once, in the reverse order.
async function _abandon(started: _Started, running: { server: Running } | null): Promise<void> {
  started.reloads.reloads.stop();
  started.reloads.release();
  started.stopRequest.release();
  if (started.inspector) await started.inspector.close();
  await running?.server.close(0);
  await started.service.stop();
  started.log.flush();
  await started.lock.release();
}

// A stop never waits behind reloads: the waiting one is dropped, the running one aborted (nothing
// of it is applied). No new control request is taken; one in flight gets no answer.
async function _stop(
  started: _Started,
  control: ControlServer,
  running: { server: Running },
  signal: string,
): Promise<void> {
  const { log } = started;
  started.reloads.reloads.stop();
  await control.close();
  log.info('stopping', { signal });
  if (started.inspector) await started.inspector.close();
  await running.server.close(DRAIN_MS);
  await started.service.stop();
  log.flush();
  await started.lock.release();
  // Until here a SIGHUP is taken and ignored; without a listener it would end the process.
  started.reloads.release();
  log.info('stopped', {});
}

// One server per state directory: a second one (a second `serve`, a socket-activated instance
// beside a manual one) ends here with one line, before it has touched anything.
async function _lockState(dir: string, io: Io): Promise<StateLock | null> {
  try {
    const secured = await secureStateDir(dir);
    if (!secured.ok) {
      io.stderr(`${messagePrefix(io)}: cannot use state directory ${dir}: ${secured.reason}\n`);
      return null;
    }
    const { tightened } = secured;
    if (tightened !== null) {
      io.stderr(
        `${messagePrefix(io)}: warning: state directory ${dir} was writable by others (mode 0${
          tightened.from.toString(8)
        }): now 0${tightened.to.toString(8)}\n`,
      );
    }
    const outcome = await lockStateDir(dir);
    if (outcome.ok) return outcome.lock;
    io.stderr(
      `${
        messagePrefix(io)
      }: state directory ${dir} is in use by the server with pid ${outcome.pid}; stop it first or give another --state-dir\n`,
    );
  } catch (error) {
    if (!_isSystemError(error)) throw error;
    io.stderr(`${messagePrefix(io)}: cannot use state directory ${dir}: ${_reason(error)}\n`);
  }
  return null;
}

// Opens the store and starts the runtime; a state directory that cannot be read or written ends the start with one line.
async function _start(config: Config, dir: string, log: Logger, io: Io, lock: StateLock): Promise<Service | null> {
  try {
    return await startService(config, dir, log);
  } catch (error) {
    await lock.release().catch(() => {});
    if (!_isSystemError(error)) throw error;
    io.stderr(`${messagePrefix(io)}: cannot use state directory ${dir}: ${_reason(error)}\n`);
    return null;
  }
}

function _isSystemError(error: unknown): error is NodeJS.ErrnoException {
  return typeof (error as NodeJS.ErrnoException | null)?.code === 'string' &&
    typeof (error as NodeJS.ErrnoException).syscall === 'string';
}

// A filesystem error as one line: its code and what the OS said, without the stack.
function _reason(error: NodeJS.ErrnoException): string {
  return `${error.code}: ${error.message.replace(/^[A-Z]+: /, '')}`;
}

/** Where the logger's JSON lines go: as they are, or rewritten as text lines for a person. */
export function logWriter(format: LogFormat, write: (text: string) => void): (text: string) => void {
  return format === 'text' ? (text) => write(jsonLinesToText(text)) : write;
}

/** Writes a first config with a fresh token, readable by its owner only; says where, never what. */
async function _firstRun(path: string, io: Io): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const config = { hooks: { enabled: true, token: generateToken() } };
  try {
    await writeFile(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    io.stderr(`${messagePrefix(io)}: created ${path} with a new hook token (read it there; it is not printed)\n`);
  } catch (error) {
    // Another process created it first: use that one.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

// SIGHUP and `hooks-ingress reload` re-read the config: a valid one takes over for new requests,
// an invalid one is logged and ignored (lib/server/reload-plan.ts; coalesced by lib/server/reloads.ts). The SIGHUP
// listener is installed before the server says it is ready, so an early signal is never fatal.
async function _reloadOnHangup(
  flags: Flags,
  io: Io,
  log: Logger,
  service: Service,
  config: Config,
  stateDir: string,
): Promise<{ reloader: Reloader; reloads: Reloads; release: () => void }> {
  const planned = await reloader({
    file: locateConfig(flags.config, io.env).path,
    env: io.env,
    started: config,
    stateDir,
    log,
    apply: (next) => service.reload(next),
  });
  const onHangup = () => void planned.reloads.request();
  process.on('SIGHUP', onHangup);
  return { reloader: planned, reloads: planned.reloads, release: () => void process.off('SIGHUP', onHangup) };
}

// The owner-only control channel the CLI talks to (reload, outbox retry, status, the inspector's
// login; try and requests replay, whose code is imported at their first call), up before the server
// says it listens, so a command run after "listening on" always finds it.
async function _control(
  stateDir: string,
  io: Io,
  log: Logger,
  service: Service,
  reloads: Reloads,
  startedAt: number,
  url: string,
  more: _Replays & { inspector: RunningInspector | null; reloader: Reloader },
): Promise<ControlServer | null> {
  const handlers = {
    ...serverOperations({
      pid: process.pid,
      startedAt,
      now: Date.now,
      stateDir,
      url: () => url,
      store: service.store,
      reload: () => reloads.request(),
      lastReload: () => reloads.last(),
      reloading: () => reloads.state(),
      retryOutbox: service.retryOutbox,
      forwarding: service.forwarding,
      ledger: () => service.ledger?.size() ?? null,
      hooks: () => service.hookStatus(),
      limits: () => service.app.limitStats(),
      settled: () => service.ledger?.counted() ?? Promise.resolve(),
    }),
    ..._pauseOps(service),
    [REPLAY_OP]: more.replay,
    [RESOLVE_OP]: more.resolve,
    [RETRY_OP]: more.retry,
    [REDELIVER_OP]: more.redeliver,
    [RELOAD_PLAN_OP]: () => more.reloader.dryRun(),
    [TRY_OP]: builtOnFirstCall(async () =>
      (await import('../server/try.ts')).tryOperation({
        app: service.app,
        reloader: more.reloader,
        lastRoute: () => service.store.lastRoute(),
      })
    ),
    'inspect.login': () => _inspectLogin(more.inspector),
  };
  try {
    return await startControl({ stateDir, handlers, log });
  } catch (error) {
    io.stderr(
      `${messagePrefix(io)}: cannot start the control channel in ${stateDir}: ${
        _isSystemError(error) ? _reason(error) : (error as Error).message
      }\n`,
    );
    return null;
  }
}

// `inspect.login`: a one-time link to the inspector, which must be on.
function _inspectLogin(inspector: RunningInspector | null): Promise<unknown> {
  if (inspector === null) {
    throw new HttpError(
      404,
      ErrorCode.NotFound,
      'the inspector is off: set inspector.port in the config and restart the server',
    );
  }
  return Promise.resolve(inspector.login());
}

// pause, resume and drop (lib/server/pauses.ts).
function _pauseOps(service: Service): Record<string, ControlHandler> {
  return {
    [PAUSE_OP]: (args) => service.pauses.pause(args),
    [RESUME_OP]: (args) => service.pauses.resume(args),
    [DROP_OP]: (args) => service.pauses.drop(args),
  };
}

// The inspector page's listener when the config turns it on; `false` when it cannot listen (the
// server does not start half-way: the operator asked for the page).
async function _inspector(
  config: Config,
  stateDir: string,
  io: Io,
  log: Logger,
  service: Service,
  ops: _Replays,
): Promise<RunningInspector | null | false> {
  if (config.inspector === null) return null;
  try {
    const replayIds = (ids: readonly string[], options: { dryRun: boolean; force: boolean | readonly string[] }) =>
      ops.replay({ ids, ...options });
    const resolveIds = (ids: readonly string[]) => ops.resolve({ ids });
    // Loaded only when the config turns the page on, like every other optional part.
    const { startInspector } = await import('../inspector/serve.ts');
    return await startInspector({
      config: config.inspector,
      stateDir,
      env: io.env,
      log,
      store: service.store,
      replay: replayIds,
      resolve: resolveIds,
      retry: (ids, { check }) => ops.retry({ ids, check }),
      redeliver: (ids) => ops.redeliver({ ids }),
      takenJudge: () => service.app.takenJudge(),
      hooks: () => service.hookStatus(),
      pause: (hook, paused) => paused ? service.pauses.pause({ hook }) : service.pauses.resume({ hook }),
    });
  } catch (error) {
    io.stderr(`${messagePrefix(io)}: cannot listen for the inspector: ${(error as Error).message}\n`);
    return false;
  }
}

// Listens on the systemd-inherited socket when there is one, else on the configured address.
async function _listen(
  flags: Flags,
  port: number | undefined,
  config: Config,
  io: Io,
  service: Service,
): Promise<{ server: Running; activated: boolean } | null> {
  const fd = inheritedListenFd(io.env, process.pid);
  // The socket is ours alone: children (command providers, transforms) must not think it is theirs.
  if (fd !== null && io.env === process.env) unsetListenEnv(process.env);
  try {
    const server = await listen(
      service.app,
      fd !== null ? { fd } : { host: flags.host ?? config.gateway.bind, port: port ?? config.gateway.port },
    );
    return { server, activated: fd !== null };
  } catch (error) {
    io.stderr(`${messagePrefix(io)}: cannot listen: ${(error as Error).message}\n`);
    return null;
  }
}

// The Gmail watcher, when the preset is set up and gog is installed, runs and stops with the server
// (its module is imported only for a config with the gmail preset).
async function _withCompanion(config: Config, io: Io, log: Logger, stopped: Promise<string>): Promise<string> {
  const companionStop = new AbortController();
  const companion = config.hooks.presets.includes('gmail')
    ? await (await import('../server/gmail-companion.ts')).serveCompanion(config, {
      ...io,
      signal: companionStop.signal,
    })
    : null;
  if (companion !== null && 'skip' in companion) log.warn('gmail watcher not started', { reason: companion.skip });
  const watching = companion !== null && 'run' in companion ? companion.run() : Promise.resolve();
  const signal = await stopped;
  companionStop.abort();
  await watching;
  return signal;
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
