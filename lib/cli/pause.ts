// `hooks-ingress pause`, `resume` and `drop`: a hook's work held and let go, or discarded, by the
// running server over its control channel (lib/server/pauses.ts); `pause` alone lists what is paused.

import { callServer, type ControlAnswer } from '../control/client.ts';
import { DROP_OP, PAUSE_OP, RESUME_OP, type ServerStatus } from '../control/operations.ts';
import type { DropOutcome, PausedHook } from '../server/pauses.ts';
import { MAX_PAUSE_SECONDS } from '../server/pauses.ts';
import type { Pause } from '../store/journal/pauses.ts';
import { escapeControls, jsonLine } from '../text.ts';
import { type Command, COMMON, type Flags } from './command.ts';
import { FAILURE, type Io, printResult, USAGE } from './io.ts';
import { stateDirFor } from './state-dir.ts';
import { usageLine } from './usage.ts';
import { holds, pausedLine } from './pause-text.ts';

const OPTIONS = { ...COMMON, 'state-dir': { type: 'string' }, json: { type: 'boolean' } } as const;
const STATE = `  -c, --config PATH     config file (for state.dir)
      --state-dir DIR   state directory
      --json            the answer as one JSON object
  -h, --help            show this help
`;

/** `hooks-ingress pause [HOOK [--for DURATION]]`. */
export const pause: Command = {
  options: { ...OPTIONS, for: { type: 'string' } },
  positionals: true,
  help: `Usage: hooks-ingress pause HOOK [--for DURATION] [options]
       hooks-ingress pause [options]

Pause a hook on the running server: a mapping's id, agent (POST /hooks/agent) or
wake (POST /hooks/wake). Its requests are still verified, acknowledged and recorded;
its runs wait in the queue, its wakes are held out of their session and its outbox
entries (forward mode) wait, in the order they came, until "hooks-ingress resume
HOOK", or until DURATION has passed (30s, 10m, 2h, 1d, 1h30m; at most 366d). The
pause is in the journal: it holds across a restart. Pausing a paused hook sets its
end anew (without --for: no end). Without HOOK, list the paused hooks with what
each holds and since when its oldest item waits.

Options:
      --for DURATION    end the pause by itself after DURATION
${STATE}`,
  run: (flags, positionals, io) =>
    positionals.length === 0 ? _list(flags, io) : _pause(flags as Flags & { for?: string }, positionals, io),
};

/** `hooks-ingress resume HOOK | --all`. */
export const resume: Command = {
  options: { ...OPTIONS, all: { type: 'boolean' } },
  positionals: true,
  help: `Usage: hooks-ingress resume HOOK | --all [options]

End a hook's pause (or every hook's, with --all): its runs start, its held wakes join
their session and its outbox entries go, in the order they came. Exits 1 when the
hook is not paused (ERR_NOT_PAUSED).

Options:
      --all             every paused hook
${STATE}`,
  async run(flags, positionals, io) {
    if ((flags.all === true) === (positionals.length === 1) || positionals.length > 1) {
      io.stderr(usageLine('resume', 'name one hook, or --all'));
      return USAGE;
    }
    const args = flags.all === true ? { all: true } : { hook: positionals[0] };
    return _ask(flags, io, 'resume', RESUME_OP, args, (result) => {
      const { resumed } = result as { resumed: PausedHook[] };
      if (!Array.isArray(resumed)) throw new TypeError('Cannot read the answer: resumed is not a list');
      if (flags.json) return jsonLine(result);
      if (resumed.length === 0) return 'no hook was paused\n';
      return resumed.map((p) => `resumed ${p.hook}: ${holds(p)} let go\n`).join('');
    });
  },
};

/** `hooks-ingress drop HOOK [--yes]`. */
export const drop: Command = {
  options: { ...OPTIONS, yes: { type: 'boolean' } },
  positionals: true,
  help: `Usage: hooks-ingress drop HOOK [--yes] [options]

Discard what a paused hook holds: its waiting runs (recorded as dropped, never run),
its held wakes and its waiting outbox entries. Each request whose work is dropped is
marked so in the journal, which "requests" and the inspector show. Without --yes,
print what would be dropped and drop nothing. The hook stays paused. Exits 1 when
the hook is not paused (ERR_NOT_PAUSED).

Options:
      --yes             drop it (without it, only the plan is printed)
${STATE}`,
  async run(flags, positionals, io) {
    if (positionals.length !== 1) {
      io.stderr(usageLine('drop', 'name one paused hook'));
      return USAGE;
    }
    const args = { hook: positionals[0], dryRun: flags.yes !== true };
    return _ask(flags, io, 'drop', DROP_OP, args, (result) => {
      const d = result as DropOutcome;
      if (!Array.isArray(d.runs) || !Array.isArray(d.requests)) throw new TypeError('Cannot read the answer');
      if (flags.json) return jsonLine(result);
      const what = `${_count(d.runs.length, 'run')}, ${_count(d.wakes, 'held wake')}, ${
        _count(d.outbox.length, 'outbox entry', 'outbox entries')
      } of ${_count(d.requests.length, 'request')}`;
      return d.dryRun
        ? `would drop from ${d.hook}: ${what}; run again with --yes to drop them\n`
        : `dropped from ${d.hook}: ${what} (the hook stays paused)\n`;
    });
  },
};

async function _pause(flags: Flags & { for?: string }, positionals: string[], io: Io): Promise<number> {
  if (positionals.length > 1) {
    io.stderr(usageLine('pause', 'name one hook'));
    return USAGE;
  }
  const seconds = flags.for === undefined ? undefined : parseDuration(flags.for);
  if (seconds === null || (seconds !== undefined && seconds > MAX_PAUSE_SECONDS)) {
    io.stderr(
      usageLine('pause', `--for must be a duration such as 30s, 10m, 2h or 1d, at most 366d, got "${flags.for}"`),
    );
    return USAGE;
  }
  const args = { hook: positionals[0], ...(seconds === undefined ? {} : { forSeconds: seconds }) };
  return _ask(flags, io, 'pause', PAUSE_OP, args, (result) => {
    const p = result as Pause & { again: boolean };
    if (typeof p.hook !== 'string') throw new TypeError('Cannot read the answer: no hook');
    if (flags.json) return jsonLine(result);
    return `${p.again ? 'still paused' : 'paused'} ${p.hook} since ${p.since}${
      p.until === undefined ? ', until resumed' : `, until ${p.until}`
    }\n`;
  });
}

async function _list(flags: Flags, io: Io): Promise<number> {
  return _ask(flags, io, 'pause', 'status', null, (result) => {
    const { hooks } = result as ServerStatus;
    if (hooks === undefined || (hooks !== null && !Array.isArray(hooks))) throw new TypeError('Cannot read');
    // Each paused hook with what it holds: its queued runs, held wakes and waiting outbox entries.
    const paused = (hooks ?? []).flatMap((h): PausedHook[] =>
      h.paused === undefined ? [] : [{ hook: h.hook, ...h.paused, runs: h.queued }]
    );
    if (flags.json) return jsonLine({ paused });
    if (paused.length === 0) return 'no hook is paused\n';
    return paused.map((p) => `${pausedLine(p, Date.now())}\n`).join('');
  });
}

/**
 * A duration in whole seconds: `90` (seconds), or parts such as `30s`, `10m`, `2h`, `1d`, `1h30m`;
 * `null` when it is none.
 */
export function parseDuration(text: string): number | null {
  if (/^\d{1,9}$/.test(text)) return Number(text) > 0 ? Number(text) : null;
  if (!/^(\d{1,9}[smhd])+$/.test(text)) return null;
  const unit: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
  let seconds = 0;
  for (const [, n, u] of text.matchAll(/(\d+)([smhd])/g)) seconds += Number(n) * unit[u!]!;
  return seconds > 0 ? seconds : null;
}

function _count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

// One call to the server: its result printed (escaped: whatever listens on the socket wrote it), or why there is none.
async function _ask(
  flags: Flags,
  io: Io,
  command: string,
  op: string,
  args: unknown,
  format: (result: unknown) => string,
): Promise<number> {
  const dir = await stateDirFor(flags, io);
  if (dir === null) return FAILURE;
  const answer: ControlAnswer = await callServer(dir, op, args);
  const prefix = `hooks-ingress ${command}`;
  switch (answer.kind) {
    case 'result':
      return printResult(io, prefix, () => {
        io.stdout(escapeControls(format(answer.result), true));
        return 0;
      });
    case 'no-server':
      io.stderr(`${prefix}: ${answer.why}; pauses are kept by the running server (start it first)\n`);
      return FAILURE;
    case 'timeout':
      io.stderr(`${prefix}: the server did not answer in time\n`);
      return FAILURE;
    case 'error':
      if (flags.json) io.stdout(jsonLine({ ok: false, code: answer.code, error: answer.message }));
      io.stderr(`${prefix}: ${escapeControls(answer.message, false)} (${escapeControls(answer.code, false)})\n`);
      return FAILURE;
  }
}
