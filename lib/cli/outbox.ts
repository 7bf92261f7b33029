import { randomBytes } from 'node:crypto';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sleep } from '../retry.ts';
import { retryable, type OutboxEntry, type OutboxState } from '../store/outbox.ts';
import { readOutbox, Store } from '../store/store.ts';
import { COMMON, type Command, type Flags } from './command.ts';
import { applyRetryRequests, RETRY_PREFIX, type RetryRequest } from './forward.ts';
import { exists, FAILURE, USAGE, type Io } from './io.ts';
import { stateDirFor } from './load-config.ts';
import { unknownCommand, usageLine } from './usage.ts';
import { readPidFile } from '../store/pid-file.ts';

const STATES: readonly OutboxState[] = ['pending', 'sent', 'dead'];

/** `hooks-ingress outbox --help`. */
export const OUTBOX_HELP = `Usage: hooks-ingress outbox [options]
       hooks-ingress outbox retry ID... | --dead [options]

Forward mode's outbox: each accepted action bound for the upstream gateway, oldest
first, with its state (pending, sent, dead), attempts, last error and the upstream's
runId. Works while the server runs. Entries go upstream one at a time in the order
they were accepted. "retry" sends dead entries again, or pending ones now (with the
pending ones ahead of them, which go first); the running server is signalled, and
with no server running the next start sends them.

Options:
  -c, --config PATH     config file (for state.dir)
      --state-dir DIR   state directory
      --json            one JSON object per line (the whole entry)
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
  if ((flags.limit !== undefined && !(Number.isInteger(limit) && limit >= 0)) || (state !== undefined && !STATES.includes(state as OutboxState))) {
    io.stderr(usageLine('outbox', `--limit must be a whole number and --state one of ${STATES.join(', ')}`));
    return USAGE;
  }
  const dir = await stateDirFor(flags, io);
  if (dir === null) return FAILURE;
  const print = (entry: OutboxEntry) => io.stdout(flags.json ? `${JSON.stringify(entry)}\n` : formatEntry(entry));
  const read = async () => (await readOutbox(dir)).filter((e) => state === undefined || e.state === state);
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
  const entries = await readOutbox(dir);
  const wanted = flags.dead === true ? entries.filter((e) => e.state === 'dead') : entries.filter((e) => ids.includes(e.id));
  const notDead = ids.filter((id) => !entries.some((e) => e.id === id && retryable(e)));
  if (notDead.length > 0) {
    io.stderr(`hooks-ingress outbox retry: not a dead or pending entry: ${notDead.join(', ')}\n`);
    return FAILURE;
  }
  const request: RetryRequest = flags.dead === true ? { dead: true } : { ids };
  // Written whole under a temporary name, then renamed: the server never reads half a request.
  const name = `${RETRY_PREFIX}${Date.now()}-${randomBytes(4).toString('hex')}.json`;
  await writeFile(join(dir, `.${name}`), JSON.stringify(request), { mode: 0o600 });
  await rename(join(dir, `.${name}`), join(dir, name));
  const pid = await _livePid(dir);
  if (pid === null) {
    // No server: this process may write the journal; the next start sends the entries.
    const { store } = await Store.open(dir, { idempotencyTtlMs: 60_000 });
    try {
      await applyRetryRequests(store, dir);
    } finally {
      await store.close();
    }
    io.stdout(`${wanted.length} entr${wanted.length === 1 ? 'y' : 'ies'} pending again; sent when the server starts\n`);
    return 0;
  }
  process.kill(pid, 'SIGUSR2');
  for (let waited = 0; await exists(join(dir, name)); waited += 100) {
    if (waited >= 10_000) {
      io.stderr(`hooks-ingress outbox retry: pid ${pid} has not taken the request within 10 s (it stays in ${dir})\n`);
      return FAILURE;
    }
    await sleep(100);
  }
  io.stdout(`${wanted.length} entr${wanted.length === 1 ? 'y' : 'ies'} pending again; pid ${pid} is sending them\n`);
  return 0;
}

/** One entry as a human reads it. */
export function formatEntry(entry: OutboxEntry): string {
  const when = entry.sentAt ?? entry.deadAt ?? entry.nextAttemptAt;
  const head = `${entry.acceptedAt}  ${entry.state}  ${entry.id}  /${entry.target} hook=${entry.hook} attempts=${entry.attempts}` +
    `${entry.runId ? ` runId=${entry.runId}` : ''}${entry.upstreamRunId ? ` upstreamRunId=${entry.upstreamRunId}` : ''}${when ? ` ${entry.state === 'pending' ? 'next' : 'at'}=${when}` : ''}`;
  return `${head}\n${entry.lastError ? `    last error: ${entry.lastError}\n` : ''}`;
}

// A pid from the pid file that names a live process, else null.
async function _livePid(dir: string): Promise<number | null> {
  const { text } = await readPidFile(dir);
  const pid = Number(text);
  if (text === null || !(Number.isInteger(pid) && pid > 1)) return null;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}
