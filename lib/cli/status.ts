// The status command: whether a server runs on the state directory, and how it is doing.

import { type Command, COMMON } from './command.ts';
import { callServer } from '../control/client.ts';
import { escapeControls, jsonLine } from '../text.ts';
import { FAILURE, printResult } from './io.ts';
import { stateDirFor } from './state-dir.ts';
import type { ServerStatus } from '../control/operations.ts';
import { changeLines } from './reload.ts';
import { hookLines } from './hooks-text.ts';

/** How long `status` waits for the server's answer. */
const STATUS_TIMEOUT_MS = 5_000;

/** `hooks-ingress status`: whether a server runs on the state directory, and how it is doing. */
export const status: Command = {
  options: { ...COMMON, 'state-dir': { type: 'string' }, json: { type: 'boolean' } },
  help: `Usage: hooks-ingress status [options]

Ask the server running on the state directory, over its control channel, how it is
doing: pid, uptime, listening address, state directory, backlog of unread events,
outbox (forward mode), completion callbacks, request ledger size, the last
reload's verdict, each hook's work (runs executing and queued, and the
controls it sets), and each hook's rate limit and budget (limited today,
budget used).
Exits 0 when a server answers, 1 when none runs or it does not answer.

Options:
  -c, --config PATH     config file (for state.dir)
      --state-dir DIR   state directory
      --json            the status as one JSON object (null where unknown)
  -h, --help            show this help
`,
  async run(flags, _positionals, io) {
    const dir = await stateDirFor(flags, io);
    if (dir === null) return FAILURE;
    const answer = await callServer(dir, 'status', null, { timeoutMs: STATUS_TIMEOUT_MS });
    if (answer.kind === 'result') {
      return printResult(io, 'hooks-ingress status', () => {
        const s = answer.result as ServerStatus;
        if (typeof s !== 'object' || s === null || typeof s.pid !== 'number') {
          throw new TypeError('Cannot read the answer: not a status');
        }
        // `running` first, as in the answer printed when no server runs: one field tells the two apart.
        io.stdout(flags.json ? jsonLine({ running: true, ...s }) : formatStatus(s));
        return 0;
      });
    }
    const why = answer.kind === 'no-server'
      ? answer.why
      : answer.kind === 'timeout'
      ? `the server at ${dir} did not answer within ${STATUS_TIMEOUT_MS / 1000} s`
      : answer.message;
    if (flags.json) io.stdout(jsonLine({ running: false, stateDir: dir, why }));
    io.stderr(`hooks-ingress status: ${why}\n`);
    return FAILURE;
  },
};

/** A status as a person reads it, one `name: value` line each; every value escaped (whatever listens on the socket wrote it). */
export function formatStatus(s: ServerStatus): string {
  const outbox = s.outbox === null
    ? 'off (not in forward mode)'
    : `${s.outbox.pending} pending, ${s.outbox.sent} sent, ${s.outbox.dead} dead`;
  const ledger = s.ledger === null ? 'none' : `${s.ledger.entries} entries, ${s.ledger.bytes} bytes`;
  const rows: [string, string][] = [
    ['running', `pid ${s.pid}, up ${_duration(s.uptimeSeconds)} (since ${s.startedAt})`],
    ['listening', s.url ?? 'unknown'],
    ['state', s.stateDir],
    [
      'backlog',
      `${s.backlog.events} event${
        s.backlog.events === 1 ? '' : 's'
      } not yet read by a heartbeat, ${s.backlog.bytes} bytes`,
    ],
    ['outbox', outbox],
    ['callbacks', _callbacks(s)],
    ['journal', `${s.journalBytes} bytes`],
    ['ledger', ledger],
    ['last reload', _lastReload(s)],
    ..._hooks(s),
    // A server from before limits sends none; whatever listens on the socket may send anything.
    ...(Array.isArray(s.limits) ? s.limits : []).map((l): [string, string] => ['limits', _limits(l)]),
  ];
  // A row with no name goes on from the one above it.
  return rows.map(([name, value]) => `${(name === '' ? '' : `${name}:`).padEnd(13)}${escapeControls(value, false)}\n`)
    .join('');
}

// A server from before completion callbacks does not say: unknown, not a crash.
function _callbacks(s: ServerStatus): string {
  const c = s.callbacks as ServerStatus['callbacks'] | undefined | null;
  return c === undefined || c === null ? 'unknown' : `${c.pending} pending, ${c.sent} sent, ${c.dead} dead`;
}

// One row per line of the hooks' work, the first named `hooks`; a server that does not say is `unknown`.
function _hooks(s: ServerStatus): [string, string][] {
  if (!Array.isArray(s.hooks)) return [['hooks', 'unknown']];
  const lines = hookLines(s.hooks);
  return lines.length === 0 ? [['hooks', 'none']] : lines.map((line, i) => [i === 0 ? 'hooks' : '', line]);
}

// One hook's line: what its rate limit and budget turned away or held today, and its budget's day.
function _limits(l: NonNullable<ServerStatus['limits']>[number]): string {
  const parts = [`${l.hook}: ${l.limitedToday} limited today`];
  if (typeof l.budget === 'object' && l.budget !== null) {
    const b = l.budget;
    parts.push(
      `budget ${b.used}/${b.runsPerDay} used for ${b.day} (${b.timeZone})` +
        (b.waiting > 0 ? `, ${b.waiting} waiting for the next day` : '') +
        (l.overBudgetToday > 0 ? `, ${l.overBudgetToday} over it today` : ''),
    );
  }
  return parts.join(', ');
}

function _lastReload(s: ServerStatus): string {
  const now = s.reloading.running ? ` (one running now${s.reloading.pending ? ', another waiting' : ''})` : '';
  return `${_verdict(s)}${now}`;
}

function _verdict(s: ServerStatus): string {
  const last = s.lastReload;
  if (last === null) return 'none since the start';
  if (last.outcome === 'applied') {
    const lines = changeLines(last.changes);
    const restart = last.needsRestart === undefined || last.needsRestart.length === 0
      ? ''
      : `; not applied until the next start: ${last.needsRestart.join(', ')}`;
    return `applied at ${last.at}${
      lines.length === 0 ? ' (no hook, mapping or secret changed)' : `: ${lines.join('; ')}`
    }${restart}`;
  }
  return `${last.outcome} at ${last.at}: ${last.problems.join('; ')}`;
}

// 3d 4h, 2h 5m, 4m 10s, 12s.
function _duration(seconds: number): string {
  const d = Math.floor(seconds / 86_400);
  const h = Math.floor((seconds % 86_400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const sec = seconds % 60;
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${sec}s`;
  return `${sec}s`;
}
