// Driving wrk: the Lua script of a scenario's request, one wrk run and its report read back, and
// one measured run of a case (the server's CPU time over it, and what makes the run invalid).
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { track } from './_children.ts';
import type { LogTap } from './_log-tap.ts';
import { cpuSeconds } from './_proc.ts';

/** What wrk reports of one run. */
export interface WrkRun {
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  socketErrors: { connect: number; read: number; write: number; timeout: number };
}

/** One measured run of a case. */
export interface Run extends WrkRun {
  /** Server CPU (process tree) per completed request, µs; null without /proc. */
  cpuUs: number | null;
  problems: string[];
}

/** How wrk loads the server, and for how long a measured run lasts. */
export interface Load {
  threads: number;
  connections: number;
  duration: number;
}

/** What a measured run needs of a case: the server, the request, the status every answer must have. */
export interface Measured {
  target: { url: string; pid: number; tap: LogTap | null };
  path: string;
  lua: string;
  status: number;
}

/**
 * Writes a wrk script that POSTs `body` with the bearer `token` (and `extra` headers); returns its path.
 * With `numbered`, each request's body has a number of its own after the first `"text":"…` value's
 * text: a wake equal to the session's latest pending one is coalesced (nothing journaled), so
 * identical wakes would measure that shortcut instead of a durable wake.
 */
export function luaScript(
  file: string,
  token: string,
  body: string,
  extra: Record<string, string> = {},
  numbered = false,
): string {
  const headers = { 'Content-Type': 'application/json', Authorization: `Bearer ${token}`, ...extra };
  const at = body.indexOf('","');
  const send = numbered && at !== -1
    ? `local n = 0\nrequest = function()\n  n = n + 1\n  return wrk.format(nil, nil, nil, '${
      body.slice(0, at)
    } ' .. n .. '${body.slice(at)}')\nend\n`
    : `wrk.body = '${body}'\n`;
  writeFileSync(
    file,
    `wrk.method = "POST"\n${send}${
      Object.entries(headers)
        .map(([k, v]) => `wrk.headers["${k}"] = "${v}"\n`)
        .join('')
    }`,
  );
  return file;
}

const _UNITS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Reads wrk's report: Requests/sec, the 50%/99% latency lines, errors and non-2xx responses. */
function _parseWrk(text: string): WrkRun {
  const latency = (pct: string) => {
    const match = new RegExp(`^\\s*${pct}%\\s+([\\d.]+)(us|ms|s|m|h)\\s*$`, 'm').exec(text);
    return match === null ? Number.NaN : Number(match[1]) * _UNITS[match[2]!]!;
  };
  const total = /(\d+) requests in ([\d.]+)(us|ms|s|m|h)/.exec(text);
  const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(text);
  const sockets = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(text);
  return {
    requests: total === null ? 0 : Number(total[1]),
    seconds: total === null ? 0 : (Number(total[2]) * _UNITS[total[3]!]!) / 1000,
    rps: rps === null ? 0 : Number(rps[1]),
    p50Ms: latency('50'),
    p99Ms: latency('99'),
    non2xx: non2xx === null ? 0 : Number(non2xx[1]),
    socketErrors: {
      connect: Number(sockets?.[1] ?? 0),
      read: Number(sockets?.[2] ?? 0),
      write: Number(sockets?.[3] ?? 0),
      timeout: Number(sockets?.[4] ?? 0),
    },
  };
}

/** One wrk run of `seconds` against `url` with `script`. */
export function wrkRun(wrk: string, url: string, script: string, seconds: number, load: Load): Promise<WrkRun> {
  const args = [
    `-t${load.threads}`,
    `-c${load.connections}`,
    `-d${seconds}s`,
    '--latency',
    '--timeout',
    '5s',
    '-s',
    script,
    url,
  ];
  return new Promise((resolve, reject) => {
    const child = track(spawn(wrk, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 20) * 1000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`wrk failed (${signal ?? code}): ${(err || out).trim()}`));
      resolve(_parseWrk(out));
    });
  });
}

// A run that silently measured the wrong thing (errors, lockouts, resets) must not pass as a figure.
function _problems(run: WrkRun, expected: number, statuses: Record<string, number> | null): string[] {
  const problems: string[] = [];
  if (run.requests === 0) problems.push('no requests completed');
  const { connect, read, write, timeout } = run.socketErrors;
  if (connect + read + write + timeout > 0) {
    problems.push(`socket errors: connect ${connect}, read ${read}, write ${write}, timeout ${timeout}`);
  }
  if (expected < 300 && run.non2xx > 0) problems.push(`${run.non2xx} non-2xx responses`);
  if (expected >= 300 && run.non2xx !== run.requests) {
    problems.push(`${run.requests - run.non2xx} responses were 2xx/3xx, expected all ${expected}`);
  }
  if (statuses !== null) {
    const other = Object.entries(statuses).filter(([status]) => status !== String(expected));
    if (other.length > 0) {
      problems.push(`server logged other statuses: ${other.map(([s, n]) => `${s} x${n}`).join(', ')}`);
    }
  }
  return problems;
}

/** One measured wrk run of a case, with the server's CPU time over it. */
export async function measure(wrk: string, c: Measured, load: Load): Promise<Run> {
  c.target.tap?.take();
  const before = cpuSeconds(c.target.pid);
  const run = await wrkRun(wrk, `${c.target.url}${c.path}`, c.lua, load.duration, load);
  // The answers (and log lines) of requests still in flight when wrk stopped land a moment later.
  await new Promise((resolve) => setTimeout(resolve, 100));
  const after = cpuSeconds(c.target.pid);
  const statuses = c.target.tap?.take() ?? null;
  const cpuUs = before === null || after === null || run.requests === 0
    ? null
    : ((after - before) * 1e6) / run.requests;
  return { ...run, cpuUs, problems: _problems(run, c.status, statuses) };
}
