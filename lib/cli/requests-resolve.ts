// `hooks-ingress requests resolve ID…`: failures marked resolved without replaying them, for what
// can never be fixed. The running server writes it to its journal (lib/server/resolve.ts), beside
// the replays' outcomes, so a replay running now and a resolution never cross.

import { callServer } from '../control/client.ts';
import { RESOLVE_OP } from '../control/operations.ts';
import type { ResolveResult } from '../server/resolve.ts';
import { escapeControls, jsonLine } from '../text.ts';
import type { Flags } from './command.ts';
import { FAILURE, type Io, messagePrefix, printResult, USAGE } from './io.ts';
import { ledgerOf } from './ledger-access.ts';
import { usageLine } from './usage.ts';

/** `requests resolve ID…`: each id's original marked resolved by hand; exit 1 when any was not. */
export async function resolveCommand(flags: Flags, ids: string[], io: Io): Promise<number> {
  if (ids.length === 0) {
    io.stderr(usageLine('requests', 'resolve needs entry ids (or request ids)'));
    return USAGE;
  }
  const ledger = await ledgerOf(flags, io);
  if (ledger === null) return FAILURE;
  const answer = await callServer(ledger.dir, RESOLVE_OP, { ids });
  switch (answer.kind) {
    case 'no-server':
      io.stderr(
        `${messagePrefix(io)}: ${answer.why}; resolve is done by the running server (start it, then resolve)\n`,
      );
      return FAILURE;
    case 'timeout':
      io.stderr(
        `${
          messagePrefix(io)
        }: the server did not answer in time; see hooks-ingress requests --failed for what is resolved\n`,
      );
      return FAILURE;
    case 'error':
      io.stderr(`${messagePrefix(io)}: ${escapeControls(answer.message, false)}\n`);
      return FAILURE;
  }
  return printResult(io, messagePrefix(io), () => {
    const { results } = answer.result as { results: ResolveResult[] };
    if (!Array.isArray(results) || results.some((r) => typeof r !== 'object' || r === null)) {
      throw new TypeError('Cannot read the answer: results is not a list of results');
    }
    let failed = false;
    for (const result of results) {
      io.stdout(flags.json ? jsonLine(result) : formatResolved(result));
      if (!result.ok) failed = true;
    }
    return failed ? FAILURE : 0;
  });
}

/** One resolution's result as a line. */
export function formatResolved(result: ResolveResult): string {
  const line = result.ok
    ? `resolved ${result.root} by hand${result.root === result.id ? '' : ` (named as ${result.id})`}`
    : `not resolved ${result.id}: ${result.error}`;
  return `${escapeControls(line, false)}\n`;
}
