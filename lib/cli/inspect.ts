import { spawn } from 'node:child_process';
import { COMMON, type Command } from './command.ts';
import { callServer } from './control.ts';
import { FAILURE, messagePrefix } from './io.ts';
import { stateDirFor } from './state-dir.ts';

/** What the server's `inspect.login` operation answers. */
export interface InspectLogin {
  url: string;
  expiresAt: string;
}

/** `hooks-ingress inspect`: a one-time login link to the running server's inspector page. */
export const inspect: Command = {
  options: { ...COMMON, 'state-dir': { type: 'string' }, open: { type: 'boolean' } },
  help: `Usage: hooks-ingress inspect [options]

Print a login link to the inspector page of the running server (inspector.port must
be set). The link works once, for one minute; opening it starts a session in that
browser. It is the one secret hooks-ingress prints: do not paste it anywhere.

Options:
  -c, --config PATH     config file (for state.dir)
      --state-dir DIR   state directory
      --open            also open the link with $BROWSER, else xdg-open
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
    const { url } = answer.result as InspectLogin;
    io.stdout(`Open this link within a minute; it works once:\n${url}\n`);
    if (flags.open === true) {
      const opener = io.env['BROWSER'] ?? 'xdg-open';
      const child = spawn(opener, [url], { stdio: 'ignore', detached: true });
      child.on('error', (error) => io.stderr(`${prefix}: cannot run ${opener}: ${(error as NodeJS.ErrnoException).code ?? String(error)}\n`));
      child.unref();
    }
    return 0;
  },
};

function _fail(io: { stderr(text: string): void }, line: string): number {
  io.stderr(`${line}\n`);
  return FAILURE;
}
