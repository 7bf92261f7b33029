// `hooks-ingress gmail run`: the Gmail companion (`gog gmail watch serve`) in the foreground. Its
// arguments, and what serve runs beside itself, are lib/server/gmail-companion.ts; the supervisor
// that keeps it running is runtime/gmail-companion.ts.

import { loadConfig } from '../config/load.ts';
import { locateConfig } from '../config/locate.ts';
import { superviseCompanion } from '../runtime/gmail-companion.ts';
import { companionArgs, findOnPath, type GmailDeps, INSTALL_HINT } from '../server/gmail-companion.ts';
import { FAILURE, type Io } from './io.ts';
import { parseCommand } from './usage.ts';

const RUN_HELP = `Usage: hooks-ingress gmail run [options]

Run the companion "gog gmail watch serve" with the arguments built from
hooks.gmail; gog posts with hooks.gmail.hookToken, which opens the gmail hook
only. gog must be on PATH. When it exits it is started
again after 1 s, doubling up to 60 s (back to 1 s once it ran for 60 s).
SIGTERM and SIGINT are passed on to it; once it stopped, this exits 0.

Options:
  -c, --config PATH     config file
  -h, --help            show this help
`;

/** The options of `gmail run`. */
export const RUN_OPTIONS = {
  config: { type: 'string', short: 'c' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Runs `hooks-ingress gmail run ARGV`: the companion in the foreground. */
export async function runCompanion(argv: readonly string[], io: Io, deps: GmailDeps): Promise<number> {
  const name = 'hooks-ingress gmail run';
  const parsed = parseCommand('gmail run', argv, { options: RUN_OPTIONS, help: RUN_HELP }, io);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const { path } = locateConfig(values.config, io.env);
  const loaded = await loadConfig(path, io.env);
  if (!loaded.ok) {
    io.stderr(`${name}: invalid config ${path}:\n${loaded.problems.map((p) => `  ${p}\n`).join('')}`);
    return FAILURE;
  }
  const { config } = loaded;
  const built = companionArgs(config);
  if (!built.ok) {
    io.stderr(`${name}: ${built.problem}\n`);
    return FAILURE;
  }
  if (!config.hooks.enabled || !config.hooks.presets.includes('gmail')) {
    io.stderr(
      `${name}: warning: hooks.enabled is not true or hooks.presets lacks "gmail", so the server will not accept the companion's posts\n`,
    );
  }
  const gog = await (deps.which ?? findOnPath)('gog', io.env);
  if (gog === null) {
    io.stderr(`${name}: gog is not on PATH: ${INSTALL_HINT}\n`);
    return FAILURE;
  }
  await superviseCompanion(gog, built.args, io, deps);
  return 0;
}
