// `hooks-ingress requests replay`: the CLI asks the running server (the one writer of the state
// directory) over the control channel, and the server runs each stored request again through its
// configuration of now (lib/server/replay.ts, the operation it answers).

import type { LedgerEntry } from '../model/ledger-entry.ts';
import { filterEntries } from '../store/ledger/read.ts';
import type { Flags } from './command.ts';
import { callServer } from '../control/client.ts';
import { escapeControls, jsonLine } from '../text.ts';
import { FAILURE, type Io, messagePrefix, printResult, USAGE } from './io.ts';
import { describeBecame, formatEntryLine } from './entry-text.ts';
import { filterFrom, type LedgerAccess, ledgerOf } from './ledger-access.ts';
import { describePlan, planReplay, resolutionFor } from './failures.ts';
import { serverChecks, skipLines, withTaken } from './replay-checks.ts';
import { REPLAY_OP } from '../control/operations.ts';
import type { ReplayArgs, ReplayResult } from '../server/replay.ts';
import { formatPreview } from './preview-text.ts';
import { usageLine } from './usage.ts';

/** `requests replay ID…`, or `requests replay` with the list's filters (and `--yes`). */
export async function replayCommand(flags: Flags, ids: string[], io: Io): Promise<number> {
  const filter = _filter(flags, ids, io);
  if (typeof filter === 'number') return filter;
  const ledger = await ledgerOf(flags, io);
  if (ledger === null) return FAILURE;
  const chosen = filter === null
    ? { ids, ...(flags.force === true ? { force: true } : {}) }
    : await _chosen(flags, io, ledger, filter);
  if (typeof chosen === 'number') return chosen;
  const args: ReplayArgs = { ...chosen, ...(flags['dry-run'] === true ? { dryRun: true } : {}) };
  const answer = await callServer(ledger.dir, REPLAY_OP, args, {
    timeoutMs: Math.min(600_000, 30_000 + 10_000 * chosen.ids.length),
  });
  switch (answer.kind) {
    case 'no-server':
      io.stderr(`${messagePrefix(io)}: ${answer.why}; replay is done by the running server (start it, then replay)\n`);
      return FAILURE;
    case 'timeout':
      io.stderr(
        `${
          messagePrefix(io)
        }: the server did not answer in time; see its log and hooks-ingress requests for what was replayed\n`,
      );
      return FAILURE;
    case 'error':
      io.stderr(`${messagePrefix(io)}: ${escapeControls(answer.message, false)}\n`);
      return FAILURE;
  }
  return printResult(io, messagePrefix(io), () => {
    const { results } = answer.result as { results: ReplayResult[] };
    if (!Array.isArray(results) || results.some((r) => typeof r !== 'object' || r === null)) {
      throw new TypeError('Cannot read the answer: results is not a list of results');
    }
    let failed = false;
    for (const result of results) {
      io.stdout(flags.json ? jsonLine(result) : formatReplay(result));
      if (!result.ok || ('outcome' in result ? result.outcome.status : result.preview.status) >= 400) failed = true;
    }
    return failed ? FAILURE : 0;
  });
}

type _Filter = Exclude<ReturnType<typeof filterFrom>, string>;

// The list's filters when no id is given (`null` with ids), or the usage error's exit code: ids or
// filters, one of them, never both.
function _filter(flags: Flags, ids: string[], io: Io): _Filter | null | number {
  const filtered = ids.length === 0;
  const filter = filterFrom(flags, Date.now());
  if (typeof filter === 'string') {
    io.stderr(usageLine('requests', filter));
    return USAGE;
  }
  if (filtered && Object.keys(filter).length === 0) {
    io.stderr(
      usageLine(
        'requests',
        'replay needs entry ids, or filters (--hook, --status, --code, --since, --until, --failed) to pick entries',
      ),
    );
    return USAGE;
  }
  if (!filtered && Object.keys(filter).length > 0) {
    io.stderr(usageLine('requests', 'replay takes entry ids or filters, not both'));
    return USAGE;
  }
  return filtered ? filter : null;
}

// The plan for the entries the filters pick: each original once, what it skips and why, and the
// entries it runs listed; their ids with --yes (or --dry-run), forced only where --force was needed
// and given, else the exit code once the plan and what to add are said.
async function _chosen(
  flags: Flags,
  io: Io,
  ledger: LedgerAccess,
  filter: _Filter,
): Promise<Pick<ReplayArgs, 'ids' | 'force'> | number> {
  const entries = await ledger.read();
  if (entries === null) return FAILURE;
  const roots = await ledger.roots();
  const matching = filterEntries(entries, filter);
  const read = planReplay(matching, { entries, roots }, flags.force === true);
  // Delivery ids taken are known to the running server alone.
  const plan = withTaken(read, await serverChecks(ledger.dir, read.run.map((e) => e.id)), flags.force === true);
  const counted = `${matching.length} request${matching.length === 1 ? '' : 's'} match${
    matching.length === 1 ? 'es' : ''
  }`;
  io.stdout(
    matching.length === 0 ? `${counted}\n` : `${counted}; ${describePlan(plan)}${plan.run.length === 0 ? '' : ':'}\n`,
  );
  for (const entry of plan.run) io.stdout(formatEntryLine(entry, resolutionFor(entry, roots)));
  for (const line of skipLines(plan)) io.stdout(`${escapeControls(line, false)}\n`);
  if (plan.run.length === 0) return 0;
  if (flags.yes !== true && flags['dry-run'] !== true) {
    io.stderr(
      `${messagePrefix(io)}: nothing replayed; add --yes to replay ${
        plan.run.length === 1 ? 'it' : `these ${plan.run.length}`
      }\n`,
    );
    return 0;
  }
  return { ids: plan.run.map((e) => e.id), ...(plan.forced.length === 0 ? {} : { force: plan.forced }) };
}

/** One replay's result as a line. */
export function formatReplay(result: ReplayResult): string {
  if (!result.ok) return `${escapeControls(`not replayed ${result.id}: ${result.error}`, false)}\n`;
  if ('preview' in result) {
    const skip = result.skip === undefined ? '' : ` (a replay is skipped without --force: ${result.skip})`;
    return `${escapeControls(`dry run of ${result.id}: nothing replayed${skip}`, false)}\n${
      formatPreview(result.preview)
    }`;
  }
  const { outcome } = result;
  const became = describeBecame({ became: outcome.became } as LedgerEntry);
  const parts = [
    `replayed ${outcome.replayOf}`,
    outcome.entry === undefined ? `request=${outcome.requestId}` : `as ${outcome.entry} request=${outcome.requestId}`,
    String(outcome.status),
  ];
  if (outcome.code !== undefined) parts.push(outcome.code);
  if (outcome.error !== undefined) parts.push(outcome.error);
  if (became !== '') parts.push(became);
  return `${escapeControls(parts.join('  '), false)}\n`;
}
