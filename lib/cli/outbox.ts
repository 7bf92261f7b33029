// The outbox command (forward mode's outbox and the completion callbacks): listing, and retry over the
// control channel (or in the journal when no server runs).

import { sleep } from '../retry.ts';
import type { OutboxEntry, OutboxState } from '../store/journal/outbox.ts';
import { readCallbacks, readOutbox } from '../store/journal/read.ts';
import type { CallbackEntry } from '../store/journal/callbacks.ts';
import { type Command, COMMON, type Flags } from './command.ts';
import { callServer } from '../control/client.ts';
import { retryOutbox, type RetryOutcome, type RetryRequest } from '../store/journal/outbox-retry.ts';
import { escapeControls } from '../text.ts';
import { exists, FAILURE, type Io, printResult, USAGE } from './io.ts';
import { stateDirFor, usedStateDir } from './state-dir.ts';
import { unknownCommand, usageLine } from './usage.ts';
import { lockStateDir } from '../store/state/lock.ts';

const STATES: readonly OutboxState[] = ['pending', 'sent', 'dead'];

/** `hooks-ingress outbox --help`. */
export const OUTBOX_HELP = `Usage: hooks-ingress outbox [options]
       hooks-ingress outbox retry ID... | --dead [options]

Forward mode's outbox: each accepted action bound for the upstream gateway, oldest
first, with its state (pending, sent, dead), attempts, last error, the field the
upstream refused (a dead entry it answered 4xx), the entry whose merged wake carried
it (batch=) and the upstream's runId; then the completion callbacks (onComplete),
each with its receiver's origin, run, attempts, the receiver's last status and last
error. Works while the server runs. Entries go upstream one at a time in the order
they were accepted (a session's wakes past its heartbeat window merged into one);
callbacks go one at a time per receiver origin, in the order their runs ended.
"retry" sends dead entries again, or pending ones now (with the pending ones ahead
of them, which go first): the running server is asked over its control channel;
with no server running, the entries are marked pending and the next start sends them.

Options:
  -c, --config PATH     config file (for state.dir)
      --state-dir DIR   state directory
      --json            one JSON object per line (the whole entry; a callback's without its
                        URL, whose path or query may hold a token: its origin stays)
  -f, --follow          keep printing entries as they change
      --state STATE     only entries in this state: pending, sent or dead
  -n, --limit N         only the last N entries
      --dead            with retry: every dead entry
  -h, --help            show this help
`;

const OPTIONS = {
  ...COMMON,
  'state-dir': { type: 'string' },
  json: { type: 'boolean' },
  follow: { type: 'boolean', short: 'f' },
  state: { type: 'string' },
  limit: { type: 'string', short: 'n' },
  dead: { type: 'boolean' },
} as const;

type OutboxFlags = Flags & { state?: string; dead?: boolean };

/** `hooks-ingress outbox [retry]`: forward mode's outbox, and sending dead entries again. */
export const outbox: Command = {
  options: OPTIONS,
  positionals: true,
  help: OUTBOX_HELP,
  run(flags, positionals, io) {
    const [sub, ...ids] = positionals;
    if (sub === 'retry') return _retry(flags, ids, io);
    if (sub !== undefined) {
      io.stderr(usageLine('outbox', unknownCommand(sub, ['retry'])));
      return Promise.resolve(USAGE);
    }
    return _list(flags, io);
  },
};

async function _list(flags: OutboxFlags, io: Io): Promise<number> {
  const limit = flags.limit === undefined ? Infinity : Number(flags.limit);
  const state = flags.state;
  if (
    (flags.limit !== undefined && !(Number.isInteger(limit) && limit >= 0)) ||
    (state !== undefined && !STATES.includes(state as OutboxState))
  ) {
    io.stderr(usageLine('outbox', `--limit must be a whole number and --state one of ${STATES.join(', ')}`));
    return USAGE;
  }
  const dir = await usedStateDir(flags, io);
  if (dir === null) return FAILURE;
  const print = (entry: OutboxEntry | CallbackEntry) =>
    io.stdout(
      flags.json
        ? `${JSON.stringify(_shown(entry))}\n`
        : 'origin' in entry
        ? formatCallback(entry)
        : formatEntry(entry),
    );
  const read = async () =>
    [...(await readOutbox(dir)), ...(await readCallbacks(dir))].filter((e) => state === undefined || e.state === state);
  let entries = await read();
  const seen = new Set(entries.map((e) => JSON.stringify(e)));
  entries.slice(Math.max(0, entries.length - limit)).forEach(print);
  while (flags.follow && !io.signal?.aborted) {
    await sleep(250, io.signal);
    entries = await read();
    for (const entry of entries) {
      const identity = JSON.stringify(entry);
      if (seen.has(identity)) continue;
      seen.add(identity);
      print(entry);
    }
  }
  return 0;
}

async function _retry(flags: OutboxFlags, ids: string[], io: Io): Promise<number> {
  if ((flags.dead === true) === ids.length > 0) {
    io.stderr(usageLine('outbox', 'retry takes entry ids or --dead (not both)'));
    return USAGE;
  }
  const dir = await stateDirFor(flags, io);
  if (dir === null) return FAILURE;
  const request: RetryRequest = flags.dead === true ? { dead: true } : { ids };
  const answer = await callServer(dir, 'outbox.retry', request);
  if (answer.kind === 'result') {
    return printResult(
      io,
      'hooks-ingress outbox retry',
      () => _retried(answer.result as RetryOutcome, 'the server is sending them', io),
    );
  }
  if (answer.kind === 'error') io.stderr(`hooks-ingress outbox retry: ${answer.message}\n`);
  if (answer.kind === 'timeout') io.stderr(`hooks-ingress outbox retry: the server at ${dir} did not answer in time\n`);
  if (answer.kind !== 'no-server') return FAILURE;
  // Nothing to retry in a directory no server has used; taking it would create it (a mistyped --state-dir).
  if (!(await exists(dir))) {
    io.stderr(`hooks-ingress outbox retry: state directory ${dir} does not exist (no server has used it)\n`);
    return FAILURE;
  }
  // No server: this process takes the state directory, so none starts meanwhile, and writes the
  // journal itself; the next start sends the entries.
  const locked = await lockStateDir(dir);
  if (!locked.ok) {
    io.stderr(
      `hooks-ingress outbox retry: the server with pid ${locked.pid} holds ${dir} but does not answer on its control channel\n`,
    );
    return FAILURE;
  }
  try {
    // The writer only here, so that listing the outbox loads the readers alone.
    const { Store } = await import('../store/journal/store.ts');
    const { store } = await Store.open(dir, { idempotencyTtlMs: 60_000 });
    try {
      return _retried(await retryOutbox(store, request), 'sent when the server starts', io);
    } finally {
      await store.close();
    }
  } finally {
    await locked.lock.release();
  }
}

function _retried(outcome: RetryOutcome, then: string, io: Io): number {
  if (outcome.notRetryable.length > 0) {
    io.stderr(
      `hooks-ingress outbox retry: not a dead or pending entry: ${
        escapeControls(outcome.notRetryable.join(', '), false)
      }\n`,
    );
    return FAILURE;
  }
  const n = outcome.retried.length;
  io.stdout(`${n} entr${n === 1 ? 'y' : 'ies'} pending again; ${then}\n`);
  return 0;
}

/**
 * One entry as a human reads it on a terminal. The hook name comes from a request, the run id,
 * error text and refused field from the upstream: their control characters are shown as escapes,
 * so nothing in them acts on the terminal and an entry keeps to its lines (at most three).
 */
export function formatEntry(entry: OutboxEntry): string {
  const when = entry.sentAt ?? entry.deadAt ?? entry.nextAttemptAt;
  const head =
    `${entry.acceptedAt}  ${entry.state}  ${entry.id}  /${entry.target} hook=${entry.hook} attempts=${entry.attempts}` +
    `${entry.runId ? ` runId=${entry.runId}` : ''}${
      entry.upstreamRunId ? ` upstreamRunId=${entry.upstreamRunId}` : ''
    }${entry.batch ? ` batch=${entry.batch}` : ''}` +
    `${when ? ` ${entry.state === 'pending' ? 'next' : 'at'}=${when}` : ''}`;
  const error = entry.lastError ? `    last error: ${escapeControls(entry.lastError, false)}\n` : '';
  const refused = entry.refusedField
    ? `    refused field: ${escapeControls(entry.refusedField, false)} (accepted here, refused upstream)\n`
    : '';
  return `${escapeControls(head, false)}\n${error}${refused}`;
}

// An entry as --json prints it: a callback without its URL, as the listing shows only its origin (a
// receiver's URL may carry its credential in its path or query, and a terminal is no place for it).
function _shown(entry: OutboxEntry | CallbackEntry): OutboxEntry | Omit<CallbackEntry, 'url'> {
  if (!('origin' in entry)) return entry;
  const { url: _url, ...shown } = entry;
  return shown;
}

/**
 * One completion callback as a human reads it on a terminal: its receiver's origin (never the URL,
 * whose query may hold a token), the run, the receiver's last status and the last error, control
 * characters shown as escapes (the error quotes what the receiver answered).
 */
export function formatCallback(entry: CallbackEntry): string {
  const when = entry.sentAt ?? entry.deadAt ?? entry.nextAttemptAt;
  const head = `${entry.acceptedAt}  ${entry.state}  ${entry.id}  callback ${entry.origin} hook=${entry.hook}` +
    ` runId=${entry.runId} attempts=${entry.attempts}${entry.status === undefined ? '' : ` status=${entry.status}`}` +
    `${when ? ` ${entry.state === 'pending' ? 'next' : 'at'}=${when}` : ''}`;
  const error = entry.lastError ? `    last error: ${escapeControls(entry.lastError, false)}\n` : '';
  return `${escapeControls(head, false)}\n${error}`;
}
