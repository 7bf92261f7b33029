import { readinessWarnings } from '../config/readiness.ts';
import { COMMON, type Command } from './command.ts';
import { FAILURE, messagePrefix } from './io.ts';
import { loadConfigFor } from './load-config.ts';

/** `hooks-ingress check`: validates the config and loads its transforms. */
export const check: Command = {
  options: { ...COMMON },
  help: `Usage: hooks-ingress check [options]

Validate the config file, load the transforms it names, and list every
problem with its key path. Warns, one line each, about what will fail at
run time: an agent without a model, a model whose provider is missing, no
channel for replies. Exits 0 when the config is valid, 1 otherwise.

Options:
  -c, --config PATH     config file
  -h, --help            show this help
`,
  async run(flags, _positionals, io) {
    const config = await loadConfigFor(flags, io, { transforms: true });
    if (config === null) return FAILURE;
    for (const warning of readinessWarnings(config)) io.stderr(`${messagePrefix(io)}: warning: ${warning}\n`);
    io.stdout(`${config.file}: ok\n`);
    return 0;
  },
};
