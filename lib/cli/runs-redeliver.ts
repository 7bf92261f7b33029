// `hooks-ingress runs redeliver RUN_ID...`: a run's stored reply sent to its channel again, with no
// model call, by the running server over the control channel (lib/server/redeliver.ts).

import { callServer } from '../control/client.ts';
import { REDELIVER_OP } from '../control/operations.ts';
import type { RedeliverResult } from '../server/redeliver.ts';
import { escapeControls, jsonLine } from '../text.ts';
import type { Flags } from './command.ts';
import { FAILURE, type Io, messagePrefix, printResult, USAGE } from './io.ts';
import { unanswered } from './runs-retry.ts';
import { usedStateDir } from './state-dir.ts';
import { usageLine } from './usage.ts';

/** `runs redeliver RUN_ID...`: each run's reply sent again; exit 1 when any was refused or not delivered. */
export async function redeliverCommand(flags: Flags, ids: string[], io: Io): Promise<number> {
  if (ids.length === 0) {
    io.stderr(usageLine('runs', 'redeliver needs run ids'));
    return USAGE;
  }
  const dir = await usedStateDir(flags, io);
  if (dir === null) return FAILURE;
  const answer = await callServer(dir, REDELIVER_OP, { ids }, { timeoutMs: 30_000 + 30_000 * ids.length });
  if (answer.kind !== 'result') return unanswered(io, answer, 'redelivery');
  return printResult(io, messagePrefix(io), () => {
    const results = (answer.result as { results?: unknown } | null)?.results;
    if (!Array.isArray(results) || results.some((r) => typeof r !== 'object' || r === null)) {
      throw new TypeError('Cannot read the answer: results is not a list of results');
    }
    let failed = false;
    for (const result of results as RedeliverResult[]) {
      io.stdout(flags.json ? jsonLine(result) : formatRedelivered(result));
      if (!result.ok || result.delivery.status !== 'delivered') failed = true;
    }
    return failed ? FAILURE : 0;
  });
}

/** One redelivery's result as a line. */
export function formatRedelivered(result: RedeliverResult): string {
  if (!result.ok) return `${escapeControls(`not redelivered ${result.id}: ${result.error}`, false)}\n`;
  const d = result.delivery;
  const line = d.status === 'delivered'
    ? `redelivered ${result.id} to ${d.channel} ${d.to}${
      d.messageIds.length > 0 ? ` (${d.messageIds.join(', ')})` : ''
    }`
    : `redelivery of ${result.id} ${d.status}: ${d.reason}`;
  return `${escapeControls(line, false)}\n`;
}
