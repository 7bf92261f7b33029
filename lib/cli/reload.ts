import { readPidFile } from '../store/pid-file.ts';
import { COMMON, type Command } from './command.ts';
import { FAILURE } from './io.ts';
import { stateDirFor } from './load-config.ts';

/** `hooks-ingress reload`: sends SIGHUP to the server whose pid file is in the state directory. */
export const reload: Command = {
  options: { ...COMMON, 'state-dir': { type: 'string' } },
  help: `Usage: hooks-ingress reload [options]

Ask the running server to re-read its config (it gets SIGHUP through the pid file in
the state directory). A valid config takes over for new requests at once; an invalid
one is refused, logged by the server, and the old one stays.

Options:
  -c, --config PATH     config file (for state.dir)
      --state-dir DIR   state directory
  -h, --help            show this help
`,
  async run(flags, _positionals, io) {
    const dir = await stateDirFor(flags, io);
    if (dir === null) return FAILURE;
    const { file, text } = await readPidFile(dir);
    if (text === null) {
      io.stderr(`hooks-ingress reload: no running server found (no ${file})\n`);
      return FAILURE;
    }
    const pid = Number(text);
    // Never signal 0 or a negative number: that would reach a whole process group.
    if (!(Number.isInteger(pid) && pid > 1)) {
      io.stderr(`hooks-ingress reload: ${file} does not hold a process id\n`);
      return FAILURE;
    }
    try {
      process.kill(pid, 'SIGHUP');
    } catch (error) {
      io.stderr(`hooks-ingress reload: cannot signal pid ${pid}: ${(error as NodeJS.ErrnoException).code ?? String(error)}\n`);
      return FAILURE;
    }
    io.stdout(`asked pid ${pid} to reload its config\n`);
    return 0;
  },
};
