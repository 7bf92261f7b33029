// The reload command: the running server asked to read its config again (or, with --dry-run, what it would
// change), its verdict printed.

import { type Command, COMMON } from './command.ts';
import { callServer } from '../control/client.ts';
import { escapeControls } from '../text.ts';
import { FAILURE, type Io, printResult, USAGE } from './io.ts';
import { stateDirFor } from './state-dir.ts';
import { RELOAD_PLAN_OP } from '../control/operations.ts';
import type { DryRunVerdict } from '../server/reload-plan.ts';
import type { ReloadChanges, ReloadVerdict } from '../server/reloads.ts';
import { usageLine } from './usage.ts';

/** Said with every verdict: a `${NAME}` in the file is read from the server's environment. */
export const VARIABLES_LINE = "${VAR} values come from the server's environment, not this shell's";

/** How long `reload` waits for the server's verdict by default, in seconds. */
export const RELOAD_TIMEOUT_SECONDS = 10;

/** `hooks-ingress reload`: asks the running server to re-read its config and prints its verdict. */
export const reload: Command = {
  options: { ...COMMON, 'state-dir': { type: 'string' }, timeout: { type: 'string' }, 'dry-run': { type: 'boolean' } },
  help: `Usage: hooks-ingress reload [--dry-run] [options]

Ask the running server, over its control channel, to re-read its config file with
its own environment (\${VAR} values are the server's, not this shell's), and print
its verdict: applied, with the hooks, mappings (and which of their keys), transform
modules (by content) and secrets added, removed or changed, and the keys whose new
values wait for the next start (gateway.port, inspector.port, ...); or refused, with
the server's reasons (the old config stays). Exits 0 when applied, 1 when refused,
when no server runs, or when no verdict comes in time.

Options:
  -c, --config PATH     config file (for state.dir)
      --state-dir DIR   state directory
      --dry-run         print what a reload would change, applying nothing
      --timeout SECONDS how long to wait for the verdict (default ${RELOAD_TIMEOUT_SECONDS})
  -h, --help            show this help
`,
  async run(flags, _positionals, io) {
    const raw = flags.timeout;
    const seconds = raw === undefined ? RELOAD_TIMEOUT_SECONDS : Number(raw);
    if (!(Number.isFinite(seconds) && seconds > 0 && seconds <= 3600)) {
      io.stderr(
        usageLine('reload', `--timeout must be a number of seconds more than 0 and at most 3600, got "${raw}"`),
      );
      return USAGE;
    }
    // A file it cannot parse names no state directory: the default one may hold another server.
    const dir = await stateDirFor(flags, io, { unparsable: false });
    if (dir === null) {
      io.stderr(
        'hooks-ingress reload: the server was not contacted: without a readable config file its state directory is not known (--state-dir names it; the server reads its config file itself)\n',
      );
      return FAILURE;
    }
    const dryRun = flags['dry-run'] === true;
    // Its own operation: a server that does not know it refuses it, rather than reloading.
    const answer = await callServer(dir, dryRun ? RELOAD_PLAN_OP : 'reload', null, { timeoutMs: seconds * 1000 });
    switch (answer.kind) {
      case 'result':
        return printResult(
          io,
          'hooks-ingress reload',
          () => printVerdict(answer.result as ReloadVerdict | DryRunVerdict, io),
        );
      case 'no-server':
        io.stderr(`hooks-ingress reload: ${answer.why}\n`);
        return FAILURE;
      case 'timeout':
        io.stderr(
          `hooks-ingress reload: no verdict from the server within ${seconds} s; it may still apply the config (see its log)\n`,
        );
        return FAILURE;
      case 'error':
        io.stderr(`hooks-ingress reload: ${answer.message}\n`);
        return FAILURE;
    }
  },
};

/** Prints a reload verdict (applied or would apply on stdout, refused or failed on stderr), every text escaped, and returns the exit code. */
export function printVerdict(verdict: ReloadVerdict | DryRunVerdict, io: Pick<Io, 'stdout' | 'stderr'>): number {
  const file = verdict.file === null ? 'its config' : escapeControls(verdict.file, false);
  if (verdict.outcome === 'applied' || verdict.outcome === 'would-apply') {
    const lines = changeLines(verdict.changes);
    const restart = (verdict.needsRestart ?? []).map((key) => escapeControls(key, false));
    io.stdout(
      (verdict.outcome === 'applied'
        ? `applied: the server reloaded ${file}\n`
        : `dry run: nothing applied; a reload of ${file} would change\n`) +
        (lines.length === 0
          ? '  no hook, mapping, transform or secret added, removed or changed\n'
          : lines.map((l) => `  ${l}\n`).join('')) +
        (restart.length === 0 ? '' : `  not applied until the next start: ${restart.join(', ')}\n`) +
        `  ${VARIABLES_LINE}\n`,
    );
    return 0;
  }
  const head = verdict.outcome === 'refused'
    ? `refused: ${file} has problems; the server keeps its config`
    : 'failed: the server could not finish the reload';
  io.stderr(
    `hooks-ingress reload: ${head}\n${verdict.problems.map((p) => `  ${escapeControls(p, false)}\n`).join('')}`,
  );
  return FAILURE;
}

/** `hooks added: /hooks/github`, one line per kind of change that happened. */
export function changeLines(changes: ReloadChanges): string[] {
  const lines: string[] = [];
  for (const [kind, lists] of Object.entries(changes) as [string, Record<string, string[]>][]) {
    for (const [how, names] of Object.entries(lists)) {
      if (names.length > 0) lines.push(escapeControls(`${kind} ${how}: ${names.join(', ')}`, false));
    }
  }
  return lines;
}
