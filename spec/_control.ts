// Test helper: the control channel's server in-process on a real unix socket in a temp state dir,
// answering `echo` (and any handlers given), for its own spec and for callServer()'s; and an
// impostor listening in the server's place, for what the client trusts.
import { chmod, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { type TestContext } from 'node:test';
import {
  CONTROL_SECRET,
  CONTROL_SOCKET,
  type ControlHandlers,
  type ControlServer,
  startControl,
} from '../lib/control/server.ts';
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
export async function startEcho(
  t: TestContext,
  handlers: ControlHandlers = {},
  options: { maxLineBytes?: number; dir?: string; idleMs?: number; maxConnections?: number; now?: () => number } = {},
): Promise<Started> {
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
  const control = await startControl({
    stateDir: dir,
    handlers: echo,
    log,
    ...(options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes }),
    ...(options.idleMs === undefined ? {} : { idleMs: options.idleMs }),
    ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections }),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  defer(t, () => control.close());
  return { dir, control, calls, lines };
}

/** What {@link startImpostor} heard. */
export interface Impostor {
  dir: string;
  /** The request lines it received, parsed. */
  requests: Record<string, unknown>[];
}

/**
 * A listener on a state directory's control socket that is not the server: what a process of the
 * server's user could put there. Its files are as the server makes them (a 0600 socket and a 0600
 * secret of hex digits, owned by the directory's owner), so the client's checks pass, and it
 * answers each request line with `answer(request)` as it is (a JSON value, written as one line).
 */
export async function startImpostor(
  t: TestContext,
  answer: (request: Record<string, unknown>) => unknown,
  dir?: string,
): Promise<Impostor> {
  const state = dir ?? (await tempDir(t, 'ctl-impostor-'));
  await writeFile(join(state, CONTROL_SECRET), `${'ab'.repeat(32)}\n`, { mode: 0o600 });
  const requests: Record<string, unknown>[] = [];
  const server = createServer((socket) => {
    let text = '';
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const newline = text.indexOf('\n');
      if (newline === -1) return;
      const request = JSON.parse(text.slice(0, newline)) as Record<string, unknown>;
      requests.push(request);
      socket.end(`${JSON.stringify(answer(request))}\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(join(state, CONTROL_SOCKET), resolve));
  await chmod(join(state, CONTROL_SOCKET), 0o600);
  defer(t, () => new Promise<void>((resolve) => server.close(() => resolve())));
  return { dir: state, requests };
}
