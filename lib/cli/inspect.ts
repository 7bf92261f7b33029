// The inspect command: a one-time login link to the running server's inspector.

import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Command, COMMON } from './command.ts';
import { callServer } from '../control/client.ts';
import { FAILURE, type Io, messagePrefix } from './io.ts';
import type { InspectLogin } from '../inspector/serve.ts';
import { stateDirFor } from './state-dir.ts';

/** How long, at most, `inspect --open` keeps the file that hands the link to the browser. */
export const HANDOVER_KEEP_MS = 20_000;

// A login link of an inspector on this machine: http, a loopback host and a port, the login path
// and one code. Under socket activation the client cannot know the inspector's real port, so the
// link's shape is checked, not its port.
const _LOGIN_LINK =
  /^http:\/\/(?:127(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}|localhost|\[::1\]):([1-9]\d{0,4})\/inspector\/login\?code=[A-Za-z0-9_-]{16,128}$/;

/** Whether `url` is a login link to an inspector on a loopback address (what `inspect` prints and opens). */
export function isLoginLink(url: unknown): url is string {
  const port = typeof url === 'string' ? _LOGIN_LINK.exec(url)?.[1] : undefined;
  return port !== undefined && Number(port) <= 65_535;
}

/** `hooks-ingress inspect`: a one-time login link to the running server's inspector page. */
export const inspect: Command = {
  options: { ...COMMON, 'state-dir': { type: 'string' }, open: { type: 'boolean' } },
  help: `Usage: hooks-ingress inspect [options]

Print a login link to the inspector page of the running server (inspector.port must
be set). The link works once, for one minute; opening it starts a session in that
browser tab. It is the one secret hooks-ingress prints: do not paste it anywhere.

Options:
  -c, --config PATH     config file (for state.dir)
      --state-dir DIR   state directory
      --open            also open the link with $BROWSER, else xdg-open, through a
                        private file (the link is never on a command line); the
                        file is removed after ${HANDOVER_KEEP_MS / 1000} s or when the link expires
  -h, --help            show this help
`,
  async run(flags, _positionals, io) {
    const dir = await stateDirFor(flags, io);
    if (dir === null) return FAILURE;
    const answer = await callServer(dir, 'inspect.login', {});
    const prefix = messagePrefix(io);
    if (answer.kind === 'no-server') return _fail(io, `${prefix}: ${answer.why}`);
    if (answer.kind === 'timeout') return _fail(io, `${prefix}: the server did not answer`);
    if (answer.kind === 'error') return _fail(io, `${prefix}: ${answer.message}`);
    const { url, expiresAt } = (answer.result ?? {}) as Partial<InspectLogin>;
    // Whatever listens on the socket wrote the answer: nothing but a local login link is printed or opened.
    if (!isLoginLink(url)) {
      return _fail(
        io,
        `${prefix}: the server's answer is not a login link to an inspector on a loopback address; nothing opened`,
      );
    }
    io.stdout(`Open this link within a minute; it works once:\n${url}\n`);
    if (flags.open !== true) return 0;
    const until = Math.min(
      Date.now() + HANDOVER_KEEP_MS,
      typeof expiresAt === 'string' && Number.isFinite(Date.parse(expiresAt)) ? Date.parse(expiresAt) : Infinity,
    );
    return _open(url, until, io);
  },
};

/**
 * Hands `url` to the browser without putting it on a command line (anyone may read
 * /proc/PID/cmdline): a page that sends the browser on to the link, 0600 in a fresh 0700
 * directory, opened by its path; removed at `until`, or earlier on SIGINT, SIGTERM or `io.signal`.
 */
async function _open(url: string, until: number, io: Io): Promise<number> {
  const prefix = messagePrefix(io);
  const parent = io.env['XDG_RUNTIME_DIR'] || io.env['TMPDIR'] || tmpdir();
  let dir: string;
  try {
    dir = await mkdtemp(join(parent, 'hooks-ingress-inspect-'));
  } catch (error) {
    return _fail(
      io,
      `${prefix}: cannot make a private directory in ${parent} to hand the link over: ${
        (error as NodeJS.ErrnoException).code ?? String(error)
      }`,
    );
  }
  const page = join(dir, 'login.html');
  try {
    await chmod(dir, 0o700);
    await writeFile(page, _redirect(url), { mode: 0o600, flag: 'wx' });
    const opener = io.env['BROWSER'] || 'xdg-open';
    const started = await new Promise<boolean>((resolve) => {
      const child = spawn(opener, [page], { stdio: 'ignore', detached: true });
      child.once('spawn', () => resolve(true));
      child.once('error', (error) => {
        io.stderr(`${prefix}: cannot run ${opener}: ${(error as NodeJS.ErrnoException).code ?? String(error)}\n`);
        resolve(false);
      });
      child.unref();
    });
    if (!started) return FAILURE;
    io.stderr(
      `${prefix}: opened with ${opener}; its page is removed in ${
        Math.max(0, Math.ceil((until - Date.now()) / 1000))
      } s (Ctrl-C removes it now)\n`,
    );
    await _waitUntil(until, io.signal);
    return 0;
  } finally {
    // Only what was made here goes, never a walk of the folder: run as root with $TMPDIR or
    // $XDG_RUNTIME_DIR in a folder another user owns, a recursive removal could be steered into
    // other folders by a link swapped in while it walks. A folder someone filled stays.
    await rm(page, { force: true });
    await rmdir(dir).catch(() => {});
  }
}

// The link is checked (isLoginLink): none of its characters needs escaping in an attribute.
function _redirect(url: string): string {
  return `<!doctype html>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0; url=${url}">
<title>hooks-ingress inspector</title>
<p><a href="${url}">Open the inspector</a></p>
`;
}

function _waitUntil(until: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, until - Date.now()));
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
    if (signal?.aborted) done();
    else signal?.addEventListener('abort', done);
  });
}

function _fail(io: { stderr(text: string): void }, line: string): number {
  io.stderr(`${line}\n`);
  return FAILURE;
}
