// The command provider (stdin/stdout, process group, kill at the bound).

import { spawn as nodeSpawn } from 'node:child_process';
import type { ChildProcess, SpawnOptions } from 'node:child_process';
import type { Attempt } from '../../retry.ts';
import type { Provider, TurnRequest } from './provider.ts';
import { clipLine } from '../../text.ts';
import { MESSAGE_MAX } from '../../delivery/http-call.ts';

/** Starts a process; `node:child_process` `spawn` by default. */
export type Spawn = (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;

/** A local agent CLI that reads a prompt on stdin and answers on stdout. */
export interface CommandProviderOptions {
  /** argv: the program, then its arguments (no shell). */
  command: readonly string[];
  spawn?: Spawn;
  /** How long a process may take to exit after SIGTERM before it gets SIGKILL. */
  graceMs?: number;
  /** A reply longer than this many bytes fails the turn (and stops the process). */
  maxOutputBytes?: number;
}

const _STDERR_TAIL = 4096;

/**
 * A provider that runs `command` once per turn: the input (see {@link formatInput}) on stdin, the
 * reply on stdout (trimmed), `HOOKS_INGRESS_RUN_ID`, `_SESSION_KEY`, `_AGENT_ID`, `_MODEL` and
 * `_THINKING` (when set) added to the environment, the agent's workspace as cwd. A non-zero exit
 * fails with the last line of stderr; on abort the process gets SIGTERM, then SIGKILL after the grace.
 */
export function createCommandProvider(options: CommandProviderOptions): Provider {
  const { command, spawn = nodeSpawn, graceMs = 2000, maxOutputBytes = 1024 * 1024 } = options;
  const [program, ...args] = command;
  if (program === undefined || program === '' || !command.every((a) => typeof a === 'string')) {
    throw new TypeError(`Cannot use command: expected a non-empty array of strings, got ${JSON.stringify(command)}`);
  }
  if (!Number.isFinite(graceMs) || graceMs < 0) {
    throw new RangeError(`Cannot use graceMs: ${graceMs} is not a duration`);
  }
  if (!Number.isInteger(maxOutputBytes) || maxOutputBytes < 1) {
    throw new RangeError(`Cannot use maxOutputBytes: ${maxOutputBytes} is not a positive integer`);
  }
  return {
    complete(request: TurnRequest): Promise<Attempt<string>> {
      if (request.signal.aborted) return Promise.resolve(_ABORTED);
      return _run(spawn, program, args, request, graceMs, maxOutputBytes);
    },
  };
}

/**
 * What a command reads on stdin. A turn with neither system prompt nor history is the prompt
 * alone, so plain CLIs (`llm`, `ollama run`) see just the message. Otherwise the system prompt comes
 * in `<system>…</system>`, the earlier turns in `<history>` as `<user>`/`<assistant>` elements, each
 * section followed by a blank line, and the prompt last, untagged.
 */
export function formatInput(request: Pick<TurnRequest, 'system' | 'history' | 'prompt'>): string {
  let text = '';
  if (request.system !== '') text += `<system>\n${request.system}\n</system>\n\n`;
  if (request.history.length > 0) {
    text += '<history>\n';
    for (const turn of request.history) text += `<${turn.role}>\n${turn.content}\n</${turn.role}>\n`;
    text += '</history>\n\n';
  }
  return text + request.prompt;
}

const _ABORTED: Attempt<string> = { ok: false, retryable: false, message: 'aborted' };

function _run(
  spawn: Spawn,
  program: string,
  args: readonly string[],
  request: TurnRequest,
  graceMs: number,
  maxOutputBytes: number,
): Promise<Attempt<string>> {
  const { signal, run } = request;
  const env = _env(request);
  return new Promise((resolve) => {
    // Its own process group, so a stop reaches whatever the command started too.
    const child = _spawn(spawn, program, args, {
      cwd: run.workspace,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: process.platform !== 'win32',
    });
    if ('ok' in child) return resolve(child);
    const ending = _ending(child, graceMs, (result) => {
      signal.removeEventListener('abort', onAbort);
      resolve(result);
    });
    const onAbort = () => ending.stop(_ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });

    const output = _capture(
      child,
      maxOutputBytes,
      () => ending.stop(_failure(`Output exceeds ${maxOutputBytes} bytes`)),
    );
    // A command that exits without reading all of stdin makes the write fail with EPIPE; its exit says what happened.
    child.stdin?.on('error', () => {});
    child.stdin?.end(formatInput(request));
    _awaitExit(child, program, ending, output);
  });
}

/** How a turn's child comes to an end: the one result it settles with, and the stop that may come first. */
interface _Ending {
  /** Settles the turn with `result`, the first time only. */
  settle(result: Attempt<string>): void;
  /** Stops the child, the turn ending with `result`. */
  stop(result: Attempt<string>): void;
  /** The result of a stop asked for, which wins over what the child's exit says. */
  stopped(): Attempt<string> | undefined;
  /** Notes the exit: a stop asked for settles then. */
  exited(): void;
  /** Clears the timers of the stop and of the pipes' drain. */
  clear(): void;
  /** Reads the pipes a moment longer after the exit before `finish`. */
  drain(finish: () => void): void;
}

function _ending(child: ChildProcess, graceMs: number, done: (result: Attempt<string>) => void): _Ending {
  let settled = false;
  let exited = false;
  let stopped: Attempt<string> | undefined;
  let killTimer: ReturnType<typeof setTimeout> | undefined;
  let drainTimer: ReturnType<typeof setTimeout> | undefined;
  const settle = (result: Attempt<string>) => {
    if (settled) return;
    settled = true;
    done(result);
  };
  return {
    settle,
    // SIGTERM now, SIGKILL after the grace. The turn ends at the kill even if a grandchild still
    // holds stdout open, so the promise never waits on a process that will not go.
    stop: (result) => {
      if (stopped !== undefined) return;
      stopped = result;
      _signal(child, 'SIGTERM');
      killTimer = setTimeout(() => {
        _signal(child, 'SIGKILL');
        settle(result);
      }, graceMs);
      if (exited) settle(result);
    },
    stopped: () => stopped,
    exited: () => {
      exited = true;
    },
    clear: () => {
      if (killTimer !== undefined) clearTimeout(killTimer);
      if (drainTimer !== undefined) clearTimeout(drainTimer);
    },
    drain: (finish) => {
      // One more turn of the loop after the moment, so bytes already in the pipes are read first.
      drainTimer = setTimeout(() => setImmediate(finish), EXIT_DRAIN_MS);
    },
  };
}

// The turn ends when the program exits, with what it wrote. What it wrote last may still be in
// the pipes: they are read until they close, or for a moment after the exit when a process it
// left running in the background holds them open (that process is not waited for, nor stopped).
function _awaitExit(
  child: ChildProcess,
  program: string,
  ending: _Ending,
  output: { stdout: () => string; stderr: () => string },
): void {
  child.on('error', (error) => ending.settle(_failure(`Cannot run ${program}: ${_reason(error)}`)));
  const finish = (code: number | null, killedBy: NodeJS.Signals | null) => {
    ending.clear();
    child.stdout?.destroy();
    child.stderr?.destroy();
    const stopped = ending.stopped();
    if (stopped !== undefined) return ending.settle(stopped);
    if (code === 0) return ending.settle({ ok: true, value: output.stdout().trim() });
    const last = output.stderr().split('\n').map((line) => line.trim()).filter((line) => line !== '').at(-1);
    const how = code === null ? `killed by ${killedBy ?? 'a signal'}` : `exit ${code}`;
    ending.settle(_failure(last === undefined ? how : `${how}: ${last}`));
  };
  child.on('exit', (code: number | null, killedBy: NodeJS.Signals | null) => {
    ending.exited();
    const stopped = ending.stopped();
    if (stopped !== undefined) return ending.settle(stopped);
    ending.drain(() => finish(code, killedBy));
  });
  // 'close' comes after the exit and the end of every stdio stream: the whole reply is in.
  child.on('close', (code: number | null, killedBy: NodeJS.Signals | null) => finish(code, killedBy));
}

/** How long the pipes are still read after the program exited, when something else holds them open. */
export const EXIT_DRAIN_MS = 100;

// A child, or the failure of a spawn that threw.
function _spawn(
  spawn: Spawn,
  program: string,
  args: readonly string[],
  options: Parameters<Spawn>[2],
): ChildProcess | Attempt<string> {
  try {
    return spawn(program, args, options);
  } catch (error) {
    return _failure(`Cannot run ${program}: ${_reason(error)}`);
  }
}

// The command's environment: this process's, and who asks (so a wrapper can log or route by run).
function _env(request: TurnRequest): NodeJS.ProcessEnv {
  const { run } = request;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOOKS_INGRESS_RUN_ID: run.runId,
    HOOKS_INGRESS_SESSION_KEY: run.sessionKey,
    HOOKS_INGRESS_AGENT_ID: run.agentId,
    HOOKS_INGRESS_MODEL: request.model,
  };
  if (request.thinking !== undefined) env.HOOKS_INGRESS_THINKING = request.thinking;
  return env;
}

// Collects stdout up to `maxBytes` (past it, `overflow` is called and the rest dropped) and the tail of stderr.
function _capture(
  child: ChildProcess,
  maxBytes: number,
  overflow: () => void,
): { stdout: () => string; stderr: () => string } {
  const stdout: Buffer[] = [];
  let stdoutBytes = 0;
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdoutBytes += chunk.length;
    if (stdoutBytes > maxBytes) overflow();
    else stdout.push(chunk);
  });
  // Decoded by the stream, so a character split across chunks stays whole.
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-_STDERR_TAIL);
  });
  return { stdout: () => Buffer.concat(stdout).toString('utf8'), stderr: () => stderr };
}

function _signal(child: ChildProcess, name: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(process.platform === 'win32' ? child.pid : -child.pid, name);
  } catch {
    // Already gone (ESRCH), or not ours to signal: nothing left to stop.
  }
}

function _failure(message: string): Attempt<string> {
  return { ok: false, retryable: false, message: clipLine(message, MESSAGE_MAX.provider) };
}

function _reason(error: unknown): string {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.message : String(error);
}
