// Test helper: the control channel's server in-process on a real unix socket in a temp state dir,
// answering `echo` (and any handlers given), for its own spec and for callServer()'s.
import { type TestContext } from 'node:test';
import { startControl, type ControlHandlers, type ControlServer } from '../lib/edge/control.ts';
import { captureLog } from './_app.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';

export interface Started {
  dir: string;
  control: ControlServer;
  calls: unknown[];
  lines: Record<string, unknown>[];
}

/** Starts the channel for test `t`, closed when it ends; `calls` holds what `echo` was asked, `lines` the log. */
export async function startEcho(t: TestContext, handlers: ControlHandlers = {}, options: { maxLineBytes?: number; dir?: string; idleMs?: number; now?: () => number } = {}): Promise<Started> {
  const dir = options.dir ?? (await tempDir(t, 'ctl-'));
  const calls: unknown[] = [];
  const { log, lines } = captureLog();
  const echo: ControlHandlers = {
    echo: (args) => {
      calls.push(args);
      return Promise.resolve({ echoed: args });
    },
    ...handlers,
  };
  const control = await startControl({ stateDir: dir, handlers: echo, log, ...(options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes }), ...(options.idleMs === undefined ? {} : { idleMs: options.idleMs }), ...(options.now === undefined ? {} : { now: options.now }) });
  defer(t, () => control.close());
  return { dir, control, calls, lines };
}
