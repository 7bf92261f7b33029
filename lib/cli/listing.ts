// The events and runs commands: the journal's last items read from the state directory, and followed with
// --follow.

import { readEvents, readNotices, readRuns } from '../store/journal/read.ts';
import type { Rejected } from '../store/journal/records.ts';
import type { NoticeRecord, RunRecord, SessionEvent } from '../model/records.ts';
import { windowClosesAt } from '../model/coalesce.ts';
import { sleep } from '../retry.ts';
import { clipLine, escapeControls } from '../text.ts';
import { type Command, COMMON, type Flags } from './command.ts';
import { formatEvent } from './event-text.ts';
import { FAILURE, type Io, messagePrefix, USAGE } from './io.ts';
import { usedStateDir } from './state-dir.ts';
import { usageLine } from './usage.ts';

// `events` and `runs` read the same journal the same way.
const LISTING = {
  ...COMMON,
  'state-dir': { type: 'string' },
  json: { type: 'boolean' },
  follow: { type: 'boolean', short: 'f' },
  limit: { type: 'string', short: 'n' },
} as const;

/** `hooks-ingress events`: the main session's events. */
export const events: Command = {
  options: { ...LISTING, raw: { type: 'boolean' } },
  help: `Usage: hooks-ingress events [options]

Print the main session's events, oldest first. Works while the server runs.
Control characters in a text are shown escaped (\\r, \\x1b, \\u2028); text that
arrived wrapped as untrusted content is shown as "[untrusted SOURCE] text".

Options:
  -c, --config PATH     config file (for state.dir)
      --state-dir DIR   state directory
      --json            one JSON object per line (time, kind, text, source, seq),
                        the text exactly as stored
      --raw             wrapped text with its security notice, as the model reads it
  -f, --follow          keep printing new events as they arrive
  -n, --limit N         only the last N events
  -h, --help            show this help
`,
  run(flags, _positionals, io) {
    const print = (event: SessionEvent) =>
      io.stdout(flags.json ? `${JSON.stringify(event)}\n` : formatEvent(event, { raw: flags.raw === true }));
    const rejected = _rejectedOnce(io);
    return _list(flags, io, (dir) => readEvents(dir, rejected), (e) => String(e.seq), print);
  },
};

/** `hooks-ingress runs`: the agent runs and notify deliveries, and their outcomes; `retry` and `redeliver`. */
export const runs: Command = {
  options: {
    ...LISTING,
    failed: { type: 'boolean' },
    hook: { type: 'string' },
    since: { type: 'string' },
    yes: { type: 'boolean', short: 'y' },
  },
  positionals: true,
  help: `Usage: hooks-ingress runs [options]
       hooks-ingress runs retry RUN_ID... [--yes]
       hooks-ingress runs retry --failed [--hook H] [--since T] [--yes]
       hooks-ingress runs redeliver RUN_ID...

List agent runs, oldest first: id, hook name, agent, session key, model, status
(pending, running, ok, error, timeout), timings, attempts, reply preview and delivery.
Deliveries of notify mappings (no model call) are listed among them as "notify"
records: id, hook, channel and recipient, status (pending, delivered, failed,
skipped), attempts and the outcome. Works while the server runs.

"retry" asks the running server to run failed or timed-out runs again as new runs,
with the same message and options, admitted by the config of now (agents, models,
session keys, channels). It first prints what it would retry and what it skips and
why, and retries only with --yes. Each run is retried once: a retry that failed too
is retried by naming it. A run whose request was replayed since, or resolved by
hand, is not retried, and a request whose run was retried is not replayed.

"redeliver" asks the running server to send a run's stored reply to its channel
again, with no model call; it is recorded on the run as one more delivery.
Neither works in forward mode, where the upstream gateway runs the runs.

Options:
  -c, --config PATH     config file (for state.dir)
      --state-dir DIR   state directory
      --json            one JSON object per line (the whole record; a notify
                        delivery's has "kind":"notify"); retry, redeliver: each result
  -f, --follow          keep printing runs as they change
  -n, --limit N         only the last N runs and deliveries
      --failed          retry: the runs that ended error or timeout, not yet retried
      --hook H          retry --failed: only runs of this hook (its name or mapping id)
      --since T         retry --failed: only runs that ended from T (an ISO time, or
                        a time back from now: 15m, 2h, 7d)
  -y, --yes             retry: go ahead with the runs the plan retries
  -h, --help            show this help
`,
  async run(flags, positionals, io) {
    const [sub, ...ids] = positionals;
    if (sub === 'retry') return (await import('./runs-retry.ts')).retryCommand(flags, ids, io);
    if (sub === 'redeliver') return (await import('./runs-redeliver.ts')).redeliverCommand(flags, ids, io);
    if (sub !== undefined) {
      io.stderr(usageLine('runs', `unknown subcommand "${sub}" (known: retry, redeliver)`));
      return USAGE;
    }
    const asked = (['failed', 'hook', 'since', 'yes'] as const).find((k) => flags[k] !== undefined);
    if (asked !== undefined) {
      io.stderr(usageLine('runs', `--${asked} is an option of runs retry`));
      return USAGE;
    }
    const print = (item: RunRecord | NoticeRecord) =>
      io.stdout(flags.json ? `${JSON.stringify(item)}\n` : 'kind' in item ? formatNotice(item) : formatRun(item));
    const rejected = _rejectedOnce(io);
    return _list(flags, io, (dir) => _runsAndNotices(dir, rejected), (r) => JSON.stringify(r), print);
  },
};

// Runs and notify deliveries in the order they were accepted (a stable sort keeps the journal's order within one time).
async function _runsAndNotices(
  dir: string,
  rejected: (rejected: Rejected) => void,
): Promise<(RunRecord | NoticeRecord)[]> {
  const [runs, notices] = await Promise.all([readRuns(dir, rejected), readNotices(dir, rejected)]);
  if (notices.length === 0) return runs;
  return [...runs, ...notices].sort((a, b) => (a.acceptedAt < b.acceptedAt ? -1 : a.acceptedAt > b.acceptedAt ? 1 : 0));
}

/**
 * Prints the last `--limit` items of a state directory's journal; with `--follow`, polls and
 * prints each item whose `identity` it has not printed yet (a new event, or a run that changed).
 */
async function _list<T>(
  flags: Flags,
  io: Io,
  read: (dir: string) => Promise<T[]>,
  identity: (item: T) => string,
  print: (item: T) => void,
): Promise<number> {
  const limit = flags.limit === undefined ? Infinity : Number(flags.limit);
  if (!(Number.isInteger(limit) && limit >= 0) && limit !== Infinity) {
    io.stderr(usageLine(io.command ?? 'events', `--limit must be a whole number, got "${flags.limit}"`));
    return USAGE;
  }
  const dir = await usedStateDir(flags, io);
  if (dir === null) return FAILURE;
  let items = await read(dir);
  const seen = new Set(items.map(identity));
  items.slice(Math.max(0, items.length - limit)).forEach(print);
  while (flags.follow && !io.signal?.aborted) {
    await sleep(250, io.signal);
    items = await read(dir);
    for (const item of items) {
      const id = identity(item);
      if (seen.has(id)) continue;
      seen.add(id);
      print(item);
    }
  }
  return 0;
}

// A journal line left out is said once on stderr, also when --follow reads the file again.
function _rejectedOnce(io: Io): (rejected: Rejected) => void {
  const said = new Set<number>();
  return ({ line, problem }) => {
    if (said.has(line)) return;
    said.add(line);
    io.stderr(`${messagePrefix(io)}: journal line ${line} skipped: ${problem}\n`);
  };
}

/** One run as a human reads it: a header line, then the reply preview and the delivery (control characters escaped, as for events). */
export function formatRun(run: RunRecord): string {
  return escapeControls(_runLines(run), true);
}

/** One notify delivery as a human reads it: a header line, then its outcome (control characters escaped). */
export function formatNotice(notice: NoticeRecord): string {
  const took = notice.finishedAt === undefined
    ? ''
    : ` ${((Date.parse(notice.finishedAt) - Date.parse(notice.acceptedAt)) / 1000).toFixed(1)}s`;
  const lines = [
    `${notice.acceptedAt}  notify ${notice.status}${took}  ${notice.deliveryId}  hook=${notice.hook} name=${
      JSON.stringify(notice.name)
    } channel=${notice.channel}` +
    `${notice.to === undefined ? '' : ` to=${notice.to}`} attempts=${notice.attempts}${
      notice.attempts > 1 ? ' (resumed)' : ''
    }`,
    `    text: ${clipLine(notice.text, 120)}`,
  ];
  if (notice.delivery !== undefined) lines.push(`    delivery: ${_delivery(notice.delivery)}`);
  return escapeControls(`${lines.join('\n')}\n`, true);
}

function _delivery(d: NonNullable<RunRecord['delivery']>): string {
  return d.status === 'delivered'
    ? `delivered to ${d.channel} ${d.to}${d.messageIds.length > 0 ? ` (${d.messageIds.join(', ')})` : ''}`
    : `${d.status}: ${d.reason}`;
}

// A coalesced run's window: how many requests it stands for, and until when it takes more.
function _window(w: NonNullable<RunRecord['coalesce']>): string {
  const closes = new Date(windowClosesAt(w)).toISOString();
  const left = w.leftOut === undefined ? '' : ` (${w.leftOut} message${w.leftOut === 1 ? '' : 's'} left out)`;
  return `coalesced: ${w.count} request${
    w.count === 1 ? '' : 's'
  }${left} from ${w.firstAt} to ${w.lastAt}, window closes ${closes}, key ${JSON.stringify(clipLine(w.key, 80))}`;
}

function _runLines(run: RunRecord): string {
  const took = run.startedAt && run.finishedAt
    ? ` ${((Date.parse(run.finishedAt) - Date.parse(run.startedAt)) / 1000).toFixed(1)}s`
    : '';
  const lines = [
    `${run.acceptedAt}  ${run.status}${took}  ${run.runId}  hook=${run.hook} name=${
      JSON.stringify(run.name)
    } agent=${run.agentId} session=${run.sessionKey}` +
    `${run.sessionMode ? ` sessionMode=${run.sessionMode}` : ''}${run.accountId ? ` account=${run.accountId}` : ''}` +
    `${run.model ? ` model=${run.model}` : ''} attempts=${run.attempts}${run.retry ? ' (resumed)' : ''}`,
  ];
  if (run.coalesce !== undefined) lines.push(`    ${_window(run.coalesce)}`);
  const text = run.reply ?? run.error;
  if (text !== undefined) lines.push(`    ${run.reply !== undefined ? 'reply' : 'error'}: ${clipLine(text, 120)}`);
  if (run.delivery !== undefined) {
    const again = run.redeliveries?.length ?? 0;
    lines.push(`    delivery: ${_delivery(run.delivery)}${again === 0 ? '' : ` (redelivered ${again}x)`}`);
  }
  if (run.retryOf !== undefined) lines.push(`    retry of: ${run.retryOf}`);
  if (run.retriedBy !== undefined) lines.push(`    retried as: ${run.retriedBy}`);
  return `${lines.join('\n')}\n`;
}
