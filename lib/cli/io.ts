// The injectable stdout/stderr/environment, exit codes; printResult() for a control answer of another shape.

import { access } from 'node:fs/promises';
import type { Env } from '../config/types.ts';

/** Where the CLI reads and writes; the real process by default, injectable for tests. */
export interface Io {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Env;
  /** Aborting it stops `serve` and `events --follow` as SIGTERM would. */
  signal?: AbortSignal;
  /** The command being run (`events`, `gmail setup`), which every message on stderr names. */
  command?: string;
  /** Whether stderr is a terminal, where `serve` logs text instead of JSON. */
  stderrIsTerminal?: boolean;
}

/** How messages of the running command begin: `hooks-ingress events`, or `hooks-ingress` outside a command. */
export function messagePrefix(io: Pick<Io, 'command'>): string {
  return io.command === undefined ? 'hooks-ingress' : `hooks-ingress ${io.command}`;
}

/** Exit code of a command that ran and failed. */
export const FAILURE = 1;
/** Exit code of a command line that cannot be run as written. */
export const USAGE = 2;

/** The real process's streams and environment. */
export function processIo(): Io {
  // `hooks-ingress runs --json | head -1`: a reader that went away is not an error worth a stack trace.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(0);
  });
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    env: process.env,
    stderrIsTerminal: process.stderr.isTTY === true,
  };
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

/**
 * Runs `print` over an answer's result and returns its exit code. The answer came from whatever
 * listens on the socket: one of another shape is said in a line (exit 1), not a crash.
 */
export function printResult(io: Pick<Io, 'stderr'>, prefix: string, print: () => number): number {
  try {
    return print();
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    io.stderr(`${prefix}: the server's answer is not one this command reads\n`);
    return FAILURE;
  }
}
