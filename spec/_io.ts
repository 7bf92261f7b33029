// Test helper: the one Io capture, for running the CLI's main() in-process.
import type { Io } from '../lib/cli/io.ts';

/** What a captured command wrote. */
export interface Output {
  stdout: string;
  stderr: string;
}

/** An Io that collects what is written; `onStdout` and `onStderr` see everything written so far to their stream. */
export function captureIo(
  env: Record<string, string | undefined>,
  options: {
    signal?: AbortSignal;
    onStdout?: (all: string) => void;
    onStderr?: (all: string) => void;
    stderrIsTerminal?: boolean;
  } = {},
): { io: Io; out: Output } {
  const out: Output = { stdout: '', stderr: '' };
  const io: Io = {
    stdout: (text) => {
      out.stdout += text;
      options.onStdout?.(out.stdout);
    },
    stderr: (text) => {
      out.stderr += text;
      options.onStderr?.(out.stderr);
    },
    env,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.stderrIsTerminal === undefined ? {} : { stderrIsTerminal: options.stderrIsTerminal }),
  };
  return { io, out };
}
