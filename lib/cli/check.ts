// The check command: the config validated and its transforms loaded, what it leaves off on purpose said.

import { fileModeWarnings } from '../config/file-modes.ts';
import { locateConfig, locateStateDir } from '../config/locate.ts';
import { readinessWarnings } from '../config/readiness.ts';
import { partialWalk, stateExposure } from '../config/state-exposure.ts';
import type { Config } from '../config/types.ts';
import { type Command, COMMON, type Flags } from './command.ts';
import { ignoreDebuggerSignal } from './debugger-signal.ts';
import { FAILURE, type Io, messagePrefix } from './io.ts';
import { printInvalid, readConfig } from './load-config.ts';
import { checkTransformsOf } from '../server/transforms.ts';

/** `hooks-ingress check`: validates the config and loads its transforms. */
export const check: Command = {
  options: { ...COMMON },
  help: `Usage: hooks-ingress check [options]

Validate the config file, load the transforms it names, and list every
problem with its key path. Then warns, one line each, about what will fail
at run time: an agent without a model, a model whose provider is missing,
no channel for replies, a session-key prefix (a bare "agent:") that admits
every agent's sessions; about what transforms on Node can still reach (the
network, signals); and about file modes: a config file or transforms
directory others can write, a world-readable config file with a secret in
it. It fails, as serve refuses to start, when transforms could read the
state directory: it lies inside the transforms directory, or a symbolic link
there leads to it. It notes what is off (/metrics without gateway.auth.token).
Errors come first. Exits 0 when the config is valid, 1 otherwise.

Options:
  -c, --config PATH     config file
  -h, --help            show this help
`,
  async run(flags, _positionals, io) {
    // Loading the transforms runs their code, in children that can signal this process on Node.
    const releaseDebugger = ignoreDebuggerSignal({
      info() {},
      error() {},
      warn: (message) => io.stderr(`${messagePrefix(io)}: warning: ${message}\n`),
    });
    try {
      return await _check(flags, io);
    } finally {
      releaseDebugger();
    }
  },
};

async function _check(flags: Flags, io: Io): Promise<number> {
  const { path } = locateConfig(flags.config, io.env);
  const result = await readConfig(flags, io, false);
  if (!result.ok) {
    printInvalid(io, path, result.problems);
    return FAILURE;
  }
  const { config } = result;
  // A transform that does not load is an error like any other: said before the warnings, which
  // still follow, so one run of check shows everything there is to fix.
  const problems = await checkTransformsOf(config);
  if (problems.length > 0) printInvalid(io, path, problems);
  const name = messagePrefix(io);
  // What serve refuses: a state directory that transforms could read.
  const stateDir = locateStateDir(undefined, config, io.env);
  const exposure = await stateExposure(stateDir, config.hooks.transformsDir);
  if (exposure.problem !== null) io.stderr(`${name}: cannot use state directory ${stateDir}: ${exposure.problem}\n`);
  if (exposure.partial) io.stderr(`${name}: warning: ${partialWalk(config.hooks.transformsDir)}\n`);
  for (const key of result.ignored) io.stderr(`${name}: ${key} is not used by hooks-ingress (ignored)\n`);
  for (const warning of [...result.warnings, ...readinessWarnings(config), ...(await fileModeWarnings(config))]) {
    io.stderr(`${name}: warning: ${warning}\n`);
  }
  for (const note of notes(config)) io.stderr(`${name}: note: ${note}\n`);
  if (problems.length > 0 || exposure.problem !== null) return FAILURE;
  io.stdout(`${config.file}: ok\n`);
  return 0;
}

/** What a valid config leaves off on purpose, and how to turn it on. */
export function notes(config: Config): string[] {
  const notes: string[] = [];
  if (config.gateway.authToken === null) {
    notes.push(
      'GET /metrics is off (it answers 404): set gateway.auth.token to turn it on; scrape it with that token as Bearer',
    );
  }
  return notes;
}
