// `npm run bench`: hooks-ingress against a bare node:http baseline under the same wrk load, plus
// a 64 MiB upload that must be refused with 413 without the server's memory growing, and the
// latency a trivial mapping transform adds over a template-only mapping (issue 3).
// A script, not a test: it prints figures and checks them against the targets of issue 2.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  fdatasyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { request, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MiB = 1024 * 1024;
const UPLOAD_BYTES = 64 * MiB;
const UPLOAD_CHUNK = 64 * 1024;
const TARGETS = { acceptedRatio: 0.7, unauthorizedRatio: 0.9, uploadRssGrowthMiB: 16 } as const;
const BODY = '{"text":"bench"}';

const HELP = `Usage: npm run bench -- [options]

Starts hooks-ingress (bin/hooks-ingress serve, from dist/) and a bare node:http baseline on
127.0.0.1, drives both with the same wrk load, and uploads 64 MiB to /hooks/wake. Two mapped
hooks, both durable wakes, show what a trivial transform (run in the worker pool) adds: /hooks/plain
(a textTemplate) and /hooks/t (hooks/transforms/trivial.js).

Options:
  --duration S      seconds per measured wrk run (default 5)
  --rounds N        measured rounds of every scenario; best of N is kept (default 2)
  --connections N   wrk connections (default 32)
  --threads N       wrk threads (default 1)
  --tmp DIR         where the temporary config and state directory go (default: the OS temp dir);
                    the state directory's filesystem decides what an fsync costs
  --json            print only the JSON summary on stdout (the report goes to stderr);
                    use "npm run -s bench -- --json" so npm's banner stays off stdout
  --check           exit 1 when a target is missed (invalid runs always exit 1)
  --keep            keep the temporary directory
  -h, --help        show this help
`;

interface Options {
  duration: number;
  rounds: number;
  connections: number;
  threads: number;
  tmp: string;
  json: boolean;
  check: boolean;
  keep: boolean;
}

interface WrkRun {
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  socketErrors: { connect: number; read: number; write: number; timeout: number };
}

interface ScenarioRun extends WrkRun {
  /** Statuses the server logged during the run (from its request log); null for the baseline. */
  serverStatuses: Record<string, number> | null;
  problems: string[];
}

interface UploadResult {
  mode: 'chunked' | 'content-length';
  status: number | null;
  error: string | null;
  msToAnswer: number | null;
  bytesSentBeforeAnswer: number;
  connectionClosed: boolean;
  /** Statuses the server logged during the upload, and how long it took to answer 413 by its own clock. */
  serverLogged: Record<string, number>;
  serverMsTo413: number | null;
  rssBeforeMiB: number | null;
  rssPeakMiB: number | null;
  rssGrowthMiB: number | null;
  peakSource: string;
}

// Everything the report says goes through `say`, so `--json` can move it to stderr.
let say: (line?: string) => void = (line = '') => process.stdout.write(`${line}\n`);

const children = new Set<ChildProcess>();

function _track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

// Last resort: whatever path leads out of this process, no child outlives it.
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

async function _stopChildren(): Promise<void> {
  await Promise.all(
    [...children].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
          child.once('exit', () => {
            clearTimeout(force);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
}

function _parseOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: 'string' },
      rounds: { type: 'string' },
      connections: { type: 'string' },
      threads: { type: 'string' },
      tmp: { type: 'string' },
      json: { type: 'boolean' },
      check: { type: 'boolean' },
      keep: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) {
    process.stdout.write(HELP);
    return null;
  }
  const whole = (name: string, raw: string | undefined, fallback: number, max: number) => {
    const n = raw === undefined ? fallback : Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new RangeError(`Invalid option --${name}: expected a whole number from 1 to ${max}`);
    return n;
  };
  return {
    duration: whole('duration', values.duration, 5, 60),
    rounds: whole('rounds', values.rounds, 2, 10),
    connections: whole('connections', values.connections, 32, 1024),
    threads: whole('threads', values.threads, 1, 64),
    tmp: values.tmp ?? tmpdir(),
    json: values.json === true,
    check: values.check === true,
    keep: values.keep === true,
  };
}

function _which(command: string): string | null {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // Not here; try the next directory.
    }
  }
  return null;
}

/** wrk from PATH; as root on a Debian-like system, apt-get may install it. */
function _ensureWrk(): string | null {
  const found = _which('wrk');
  if (found !== null) return found;
  const apt = _which('apt-get');
  if (process.platform === 'linux' && process.getuid?.() === 0 && apt !== null) {
    say('wrk is not on PATH; running as root with apt-get: installing it (apt-get update && apt-get install -y wrk)');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    // apt's chatter goes to stderr so that `--json` keeps stdout clean.
    const opts = { stdio: ['ignore', 2, 2] as ['ignore', number, number], env, timeout: 300_000 };
    spawnSync(apt, ['update'], opts);
    spawnSync(apt, ['install', '-y', '--no-install-recommends', 'wrk'], opts);
    const installed = _which('wrk');
    if (installed !== null) return installed;
    process.stderr.write('bench: apt-get could not install wrk (see its output above)\n');
  }
  process.stderr.write(`bench: this benchmark needs wrk (https://github.com/wg/wrk) on PATH, and it is not there.
(Run as root on a system with apt-get, the bench installs it itself.) Install it, then run "npm run bench" again:
  Debian/Ubuntu:  sudo apt-get update && sudo apt-get install wrk
  Fedora:         sudo dnf install wrk
  Arch:           sudo pacman -S wrk
  macOS:          brew install wrk
  from source:    git clone https://github.com/wg/wrk && make -C wrk && cp wrk/wrk ~/.local/bin/
`);
  return null;
}

/** Builds dist/ when it is missing; warns when lib/ has changed since the last build. */
function _ensureBuild(): boolean {
  const cli = join(ROOT, 'dist', 'cli', 'main.js');
  if (!existsSync(cli)) {
    say('dist/cli/main.js is missing: running npm run build');
    const built = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 2, 2], timeout: 300_000 });
    if (built.status !== 0 || !existsSync(cli)) {
      process.stderr.write('bench: npm run build failed; fix the build and try again\n');
      return false;
    }
    return true;
  }
  const newer = _newerThan(join(ROOT, 'lib'), statSync(cli).mtimeMs);
  if (newer.length > 0) say(`warning: dist/ is older than ${newer.slice(0, 3).join(', ')}${newer.length > 3 ? ', ...' : ''}: run "npm run build" to bench them`);
  return true;
}

function _newerThan(dir: string, ms: number): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(..._newerThan(path, ms));
    else if (statSync(path).mtimeMs > ms) found.push(path.slice(ROOT.length));
  }
  return found;
}

/** Counts the statuses of the server's JSON request log (stderr) and keeps its tail for error reports. */
class LogTap {
  #rest = '';
  #tail = '';
  #statuses = new Map<string, number>();
  #durations = new Map<string, number>();

  feed(chunk: string): void {
    const text = this.#rest + chunk;
    const end = text.lastIndexOf('\n') + 1;
    this.#rest = text.slice(end);
    const lines = text.slice(0, end);
    for (const match of lines.matchAll(/"status":(\d{3})(?:,"duration":([\d.]+))?/g)) {
      const status = match[1]!;
      this.#statuses.set(status, (this.#statuses.get(status) ?? 0) + 1);
      if (match[2] !== undefined) this.#durations.set(status, Number(match[2]));
    }
    this.#tail = (this.#tail + lines).slice(-4096);
  }

  /** The `duration` (ms) of the last request logged with this status. */
  lastDuration(status: string): number | null {
    return this.#durations.get(status) ?? null;
  }

  /** Statuses logged since the last call. */
  take(): Record<string, number> {
    const counts = Object.fromEntries(this.#statuses);
    this.#statuses.clear();
    return counts;
  }

  tail(): string {
    return this.#tail + this.#rest;
  }
}

interface Started {
  child: ChildProcess;
  url: string;
  pid: number;
}

/** Spawns a node process and waits for its `listening on URL` line. */
function _start(name: string, args: string[], tap: LogTap | null): Promise<Started> {
  const child = _track(spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
  const stderrTail: string[] = [];
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    if (tap !== null) tap.feed(chunk);
    else stderrTail.push(chunk);
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const fail = (why: string) => {
      clearTimeout(timer);
      const tail = tap?.tail() ?? stderrTail.join('');
      reject(new Error(`${name} did not start: ${why}${tail === '' ? '' : `\n--- its stderr ---\n${tail.trimEnd()}`}`));
    };
    const timer = setTimeout(() => fail('no "listening on" line within 15 s'), 15_000);
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => fail(`exited (${signal ?? code})`);
    child.once('error', (error) => fail(error.message));
    child.once('exit', onExit);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const match = /^listening on (http:\/\/\S+)$/m.exec(out);
      if (match === null) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      resolve({ child, url: match[1]!, pid: child.pid! });
    });
  });
}

interface Probe {
  status: number;
  headers: IncomingHttpHeaders;
}

function _probe(url: string, headers: Record<string, string>, body: string, method = 'POST'): Promise<Probe> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, agent: false, timeout: 5_000 }, (res) => {
      res.resume();
      res.once('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.once('timeout', () => req.destroy(new Error('probe timed out')));
    req.once('error', reject);
    req.end(body);
  });
}

function _luaScript(file: string, token: string): string {
  // The same request shape for every scenario: only the token differs (and has the same length).
  writeFileSync(
    file,
    `wrk.method = "POST"
wrk.body = '${BODY}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer ${token}"
`,
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

function _wrk(wrk: string, url: string, script: string, seconds: number, o: Options): Promise<WrkRun> {
  const args = [`-t${o.threads}`, `-c${o.connections}`, `-d${seconds}s`, '--latency', '--timeout', '5s', '-s', script, url];
  return new Promise((resolve, reject) => {
    const child = _track(spawn(wrk, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
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

type Expect = { kind: 'baseline' } | { kind: 'server'; status: 200 | 401 };

// A run that silently measured the wrong thing (errors, lockouts, resets) must not pass as a figure.
function _problems(run: WrkRun, expect: Expect, statuses: Record<string, number> | null): string[] {
  const problems: string[] = [];
  if (run.requests === 0) problems.push('no requests completed');
  const { connect, read, write, timeout } = run.socketErrors;
  if (connect + read + write + timeout > 0) problems.push(`socket errors: connect ${connect}, read ${read}, write ${write}, timeout ${timeout}`);
  const expected = expect.kind === 'baseline' ? 200 : expect.status;
  if (expected === 200 && run.non2xx > 0) problems.push(`${run.non2xx} non-2xx responses`);
  if (expected !== 200 && run.non2xx !== run.requests) problems.push(`${run.requests - run.non2xx} responses were 2xx/3xx, expected all ${expected}`);
  if (statuses !== null) {
    const other = Object.entries(statuses).filter(([status]) => status !== String(expected));
    if (other.length > 0) problems.push(`server logged other statuses: ${other.map(([s, n]) => `${s} x${n}`).join(', ')}`);
  }
  return problems;
}

function _rssKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number | null {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? null : Number(match[1]);
  } catch {
    return null;
  }
}

function* _uploadBody(total: number, chunked: boolean): Generator<Buffer> {
  // Valid JSON from end to end, so only the size can be the reason for a refusal.
  const head = Buffer.from('{"text":"');
  const tail = Buffer.from('"}');
  const frame = (data: Buffer) => (chunked ? Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')]) : data);
  // One framed filler chunk, reused: the client holds 64 KiB, never the whole body.
  const filler = frame(Buffer.alloc(UPLOAD_CHUNK, 'a'));
  let left = total - head.length - tail.length;
  yield frame(head);
  while (left > 0) {
    const n = Math.min(left, UPLOAD_CHUNK);
    yield n === UPLOAD_CHUNK ? filler : frame(Buffer.alloc(n, 'a'));
    left -= n;
  }
  yield frame(tail);
  if (chunked) yield Buffer.from('0\r\n\r\n');
}

type _Outcome = Pick<UploadResult, 'status' | 'error' | 'msToAnswer' | 'bytesSentBeforeAnswer' | 'connectionClosed'>;

// A raw socket rather than node:http's client: that one gives up on EPIPE/ECONNRESET while still
// sending and never reads the answer that had arrived. Like curl, this reads while it sends.
function _send64MiB(url: string, token: string, mode: UploadResult['mode']): Promise<_Outcome> {
  const { hostname, port } = new URL(url);
  const chunked = mode === 'chunked';
  const head =
    `POST /hooks/wake HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
    (chunked ? 'Transfer-Encoding: chunked\r\n\r\n' : `Content-Length: ${UPLOAD_BYTES}\r\n\r\n`);
  return new Promise((resolve) => {
    const started = performance.now();
    let sent = 0;
    let received = '';
    let answer: { status: number; ms: number; sent: number } | null = null;
    let error: string | null = null;
    let closed = false;
    let done = false;
    let wake: (() => void) | null = null;
    const socket = connect({ host: hostname, port: Number(port) });
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      wake?.();
      socket.destroy();
      resolve({
        status: answer?.status ?? null,
        msToAnswer: answer?.ms ?? null,
        bytesSentBeforeAnswer: answer?.sent ?? sent,
        error: answer === null ? (error ?? 'no answer') : null,
        connectionClosed: closed,
      });
    };
    const timer = setTimeout(() => {
      error ??= 'no answer within 30 s';
      finish();
    }, 30_000);
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      if (answer !== null) return;
      received = (received + chunk).slice(0, 4096);
      const match = /^HTTP\/1\.[01] (\d{3}) /.exec(received);
      if (match !== null) {
        answer = { status: Number(match[1]), ms: performance.now() - started, sent };
        // The server should now drop the connection (the rest of the body is not read): give it a second.
        setTimeout(finish, 1_000);
      } else if (received.length >= 4096) {
        error = 'answer is not HTTP';
        finish();
      }
    });
    socket.on('error', (cause: NodeJS.ErrnoException) => {
      error ??= `${cause.code ?? cause.message} before any answer`;
      wake?.();
    });
    socket.on('close', () => {
      closed = true;
      wake?.();
      // Data already received has been emitted by now; a little grace for the parser above.
      setTimeout(finish, answer === null ? 50 : 0);
    });
    socket.once('connect', () => {
      void (async () => {
        socket.write(head);
        for (const piece of _uploadBody(UPLOAD_BYTES, chunked)) {
          if (answer !== null || closed || done) return;
          sent += piece.length;
          const flowing = socket.write(piece);
          // Yield every chunk so an early answer is read before the next write can fail.
          await new Promise<void>((resume) => {
            wake = resume;
            if (flowing) setImmediate(resume);
            else socket.once('drain', resume);
          });
          wake = null;
        }
      })();
    });
  });
}

/** Streams 64 MiB to /hooks/wake and times the answer while sampling the server's RSS. */
async function _upload(url: string, token: string, pid: number, mode: UploadResult['mode'], tap: LogTap): Promise<UploadResult> {
  tap.take();
  const before = _rssKiB(pid, 'VmRSS');
  let peak = before ?? 0;
  // Writing 5 to clear_refs resets the peak (VmHWM), so it then covers this upload only.
  let hwmReset = false;
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    hwmReset = true;
  } catch {
    // Not Linux or not allowed: the sampled peak has to do.
  }
  const sampler = setInterval(() => (peak = Math.max(peak, _rssKiB(pid, 'VmRSS') ?? 0)), 2);
  const outcome = await _send64MiB(url, token, mode);
  // Give a late allocation a moment to show up in RSS, and the log line a moment to arrive.
  await new Promise((resolve) => setTimeout(resolve, 200));
  clearInterval(sampler);
  peak = Math.max(peak, _rssKiB(pid, 'VmRSS') ?? 0);
  let peakSource = 'VmRSS sampled every 2 ms';
  const hwm = hwmReset ? _rssKiB(pid, 'VmHWM') : null;
  if (hwm !== null && hwm > peak) {
    peak = hwm;
    peakSource = 'VmHWM, reset before each upload';
  } else if (hwm !== null) {
    peakSource = 'VmRSS sampled every 2 ms; VmHWM, reset before each upload, agrees';
  }
  const mib = (kib: number | null) => (kib === null ? null : kib / 1024);
  const logged = tap.take();
  return {
    mode,
    ...outcome,
    serverLogged: logged,
    serverMsTo413: tap.lastDuration('413'),
    rssBeforeMiB: mib(before),
    rssPeakMiB: before === null ? null : mib(peak),
    rssGrowthMiB: before === null ? null : mib(Math.max(0, peak - before)),
    peakSource: before === null ? 'unavailable (no /proc)' : peakSource,
  };
}

/** What one fdatasync costs on the state directory's filesystem: the floor of every durable answer. */
function _fsyncProbe(dir: string): { samples: number; p50Ms: number; p99Ms: number } {
  const file = join(dir, 'fsync-probe');
  const fd = openSync(file, 'w', 0o600);
  const line = Buffer.from(`${'x'.repeat(99)}\n`);
  const times: number[] = [];
  const deadline = performance.now() + 1_500;
  try {
    for (let i = 0; i < 200 && performance.now() < deadline; i++) {
      writeSync(fd, line);
      const t = performance.now();
      fdatasyncSync(fd);
      times.push(performance.now() - t);
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? Number.NaN;
  return { samples: times.length, p50Ms: at(0.5), p99Ms: at(0.99) };
}

/** The filesystem a path lives on, from /proc/mounts (longest mount point that contains it). */
function _filesystem(path: string): string {
  try {
    const real = realpathSync(path);
    let best = { point: '', text: 'unknown' };
    for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
      const [device, point, type] = line.split(' ');
      if (device === undefined || point === undefined || type === undefined) continue;
      const inside = real === point || real.startsWith(point.endsWith('/') ? point : `${point}/`);
      if (inside && point.length >= best.point.length) best = { point, text: `${type} (${device} on ${point})` };
    }
    return best.text;
  } catch {
    return 'unknown';
  }
}

const _n = (x: number) => Math.round(x).toLocaleString('en-US');
const _ms = (x: number) => (Number.isNaN(x) ? 'n/a' : x < 1 ? `${(x * 1000).toFixed(0)}us` : `${x.toFixed(2)}ms`);
const _pad = (cells: string[], widths: number[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');

function _best(runs: ScenarioRun[]): ScenarioRun {
  // Noise on a shared machine only ever slows a run down, so the best valid round is the figure.
  const valid = runs.filter((r) => r.problems.length === 0);
  return (valid.length > 0 ? valid : runs).reduce((a, b) => (b.rps > a.rps ? b : a));
}

async function main(argv: string[]): Promise<number> {
  let o: Options | null;
  try {
    o = _parseOptions(argv);
  } catch (error) {
    process.stderr.write(`bench: ${(error as Error).message}\nRun "npm run bench -- --help" for the options.\n`);
    return 2;
  }
  if (o === null) return 0;
  if (o.json) say = (line = '') => process.stderr.write(`${line}\n`);

  const wrk = _ensureWrk();
  if (wrk === null) return 1;
  if (!_ensureBuild()) return 1;

  const tmp = mkdtempSync(join(o.tmp, 'hooks-ingress-bench-'));
  const token = randomBytes(32).toString('base64url');
  // Same length as the real one, so the 401 requests are byte for byte as large.
  const wrong = randomBytes(32).toString('base64url');
  const config = {
    hooks: {
      enabled: true,
      token,
      // So that the 401 scenario measures the auth path on every request, never the lockout (429).
      authRateLimit: { maxFailures: 1_000_000_000, windowSeconds: 1, lockoutSeconds: 1 },
      // The same durable wake twice: once from a template, once from a trivial transform.
      mappings: [
        { match: { path: 'plain' }, action: 'wake', textTemplate: '{{text}}' },
        { match: { path: 't' }, action: 'wake', transform: { module: 'trivial.js' } },
      ],
    },
  };
  writeFileSync(join(tmp, 'config.json'), JSON.stringify(config), { mode: 0o600 });
  const transforms = join(tmp, 'hooks', 'transforms');
  mkdirSync(transforms, { recursive: true });
  writeFileSync(join(transforms, 'trivial.js'), "export default ({ payload }) => ({ kind: 'wake', text: String(payload.text) });\n");
  const stateDir = join(tmp, 'state');
  const fs = _filesystem(tmp);

  let exitCode = 0;
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`bench: ${signal}: stopping\n`);
    void _stopChildren().then(() => {
      if (!o.keep) rmSync(tmp, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    say(`hooks-ingress benchmark: wrk -t${o.threads} -c${o.connections}, ${o.rounds} round(s) of ${o.duration}s per scenario, loopback 127.0.0.1`);
    say(`node ${process.version}, ${wrk}, state directory on ${fs}`);
    const fsync = _fsyncProbe(tmp);
    say(`fdatasync on that filesystem: p50 ${_ms(fsync.p50Ms)}, p99 ${_ms(fsync.p99Ms)} (${fsync.samples} samples)`);
    say('401 scenario: hooks.authRateLimit.maxFailures is 1e9 so every wrong token takes the auth path (401), never the lockout (429)');
    say('the server logs one JSON line per request to stderr (a pipe read by this script, as journald would), the baseline logs nothing');

    const tap = new LogTap();
    const server = await _start(
      'hooks-ingress',
      [join(ROOT, 'bin', 'hooks-ingress'), 'serve', '--config', join(tmp, 'config.json'), '--state-dir', stateDir, '--host', '127.0.0.1', '--port', '0'],
      tap,
    );
    const baseline = await _start('baseline', [join(ROOT, 'bench', 'baseline.mjs')], null);
    say(`hooks-ingress at ${server.url} (pid ${server.pid}), baseline at ${baseline.url} (pid ${baseline.pid})`);

    const goodLua = _luaScript(join(tmp, 'post-valid-token.lua'), token);
    const badLua = _luaScript(join(tmp, 'post-wrong-token.lua'), wrong);
    const headers = (t: string) => ({ authorization: `Bearer ${t}`, 'content-type': 'application/json' });
    const wakeUrl = `${server.url}/hooks/wake`;
    const plainUrl = `${server.url}/hooks/plain`;
    const transformUrl = `${server.url}/hooks/t`;
    const baseUrl = `${baseline.url}/hooks/wake`;

    // One request of each kind first: a scenario that answers the wrong status stops the run here.
    const probes = {
      baseline: await _probe(baseUrl, headers(token), BODY),
      accepted: await _probe(wakeUrl, headers(token), BODY),
      unauthorized: await _probe(wakeUrl, headers(wrong), BODY),
      plain: await _probe(plainUrl, headers(token), BODY),
      transform: await _probe(transformUrl, headers(token), BODY),
    };
    const probeProblems: string[] = [];
    if (probes.baseline.status !== 200) probeProblems.push(`baseline answered ${probes.baseline.status}, expected 200`);
    if (probes.accepted.status !== 200) probeProblems.push(`valid-token wake answered ${probes.accepted.status}, expected 200`);
    if (probes.unauthorized.status !== 401) probeProblems.push(`wrong-token wake answered ${probes.unauthorized.status}, expected 401`);
    if (probes.plain.status !== 200) probeProblems.push(`template-mapped wake answered ${probes.plain.status}, expected 200`);
    if (probes.transform.status !== 200) probeProblems.push(`transform-mapped wake answered ${probes.transform.status}, expected 200`);
    if (probeProblems.length > 0) throw new Error(`probe requests failed:\n  ${probeProblems.join('\n  ')}\n--- server stderr ---\n${tap.tail().trimEnd()}`);
    tap.take();

    const scenarios = {
      baseline: { url: baseUrl, lua: goodLua, expect: { kind: 'baseline' } as Expect },
      accepted: { url: wakeUrl, lua: goodLua, expect: { kind: 'server', status: 200 } as Expect },
      unauthorized: { url: wakeUrl, lua: badLua, expect: { kind: 'server', status: 401 } as Expect },
      plain: { url: plainUrl, lua: goodLua, expect: { kind: 'server', status: 200 } as Expect },
      transform: { url: transformUrl, lua: goodLua, expect: { kind: 'server', status: 200 } as Expect },
    };
    type Name = keyof typeof scenarios;
    const names = Object.keys(scenarios) as Name[];

    say('warming up (1 s each)...');
    for (const name of names) await _wrk(wrk, scenarios[name].url, scenarios[name].lua, 1, o);
    // The answers to requests still in flight when wrk stopped are logged a moment later.
    await new Promise((resolve) => setTimeout(resolve, 200));
    tap.take();

    const runs: Record<Name, ScenarioRun[]> = { baseline: [], accepted: [], unauthorized: [], plain: [], transform: [] };
    for (let round = 1; round <= o.rounds && !stopping; round++) {
      // Interleaved, so a slow patch of the machine hits every scenario alike.
      for (const name of names) {
        if (stopping) break;
        const { url, lua, expect } = scenarios[name];
        const run = await _wrk(wrk, url, lua, o.duration, o);
        // Let the last log lines of the run arrive before counting them.
        await new Promise((resolve) => setTimeout(resolve, 100));
        const statuses = expect.kind === 'server' ? tap.take() : null;
        const scenarioRun = { ...run, serverStatuses: statuses, problems: _problems(run, expect, statuses) };
        runs[name].push(scenarioRun);
        say(`  round ${round} ${name.padEnd(12)} ${_n(run.rps).padStart(8)} req/s  p50 ${_ms(run.p50Ms)}  p99 ${_ms(run.p99Ms)}${scenarioRun.problems.length > 0 ? `  INVALID: ${scenarioRun.problems.join('; ')}` : ''}`);
      }
    }

    say('uploading 64 MiB to /hooks/wake with a valid token (streamed; the client never holds it)...');
    const uploads = [await _upload(server.url, token, server.pid, 'chunked', tap), await _upload(server.url, token, server.pid, 'content-length', tap)];
    const health = await _probe(`${server.url}/healthz`, {}, '', 'GET').catch((error: Error) => ({ status: 0, headers: {}, error }));

    // The report.
    const best = Object.fromEntries(names.map((name) => [name, _best(runs[name])])) as Record<Name, ScenarioRun>;
    const ratio = (name: Name) => (best.baseline.rps > 0 ? best[name].rps / best.baseline.rps : 0);
    const targets: Partial<Record<Name, number>> = { accepted: TARGETS.acceptedRatio, unauthorized: TARGETS.unauthorizedRatio };
    const labels: Record<Name, string> = {
      baseline: 'baseline node:http 200',
      accepted: '(a) wake accepted 200',
      unauthorized: '(b) wake 401 wrong token',
      plain: '(d) mapped wake, template',
      transform: '(e) mapped wake, transform',
    };
    const widths = [26, 9, 9, 9, 7, 8, 13];
    say();
    say(_pad(['scenario', 'req/s', 'p50', 'p99', 'ratio', 'target', 'verdict'], widths));
    let invalid = false;
    let missed = false;
    for (const name of names) {
      const run = best[name];
      const bad = run.problems.length > 0;
      invalid ||= bad;
      const target = targets[name] ?? null;
      const meets = target === null || ratio(name) >= target;
      if (!meets) missed = true;
      const verdict = bad ? 'INVALID' : target === null ? '' : meets ? 'ok' : 'below target';
      say(_pad([labels[name], _n(run.rps), _ms(run.p50Ms), _ms(run.p99Ms), `${ratio(name).toFixed(2)}x`, target === null ? '' : `>=${target.toFixed(1)}x`, verdict], widths));
    }
    say(`(best of ${o.rounds} round(s) each; every round is listed above)`);
    const added = { p50Ms: best.transform.p50Ms - best.plain.p50Ms, p99Ms: best.transform.p99Ms - best.plain.p99Ms };
    say(
      `trivial transform vs template mapping, same load: ${_n(best.transform.rps)} vs ${_n(best.plain.rps)} req/s ` +
        `(${best.plain.rps > 0 ? (best.transform.rps / best.plain.rps).toFixed(2) : 'n/a'}x); added latency p50 ${_ms(added.p50Ms)}, p99 ${_ms(added.p99Ms)}`,
    );
    if (ratio('accepted') < TARGETS.acceptedRatio) {
      say(`hint: each accepted wake waits for a group commit (write + fdatasync, p50 ${_ms(fsync.p50Ms)} here); "--tmp /dev/shm" shows the same path without disk flushes`);
    }
    say();
    const uw = [26, 7, 10, 11, 12, 7, 11, 11, 8];
    say(_pad(['(c) 64 MiB upload', 'status', 'to answer', 'server log', 'sent before', 'closed', 'RSS before', 'RSS growth', 'verdict'], uw));
    const verdicts: string[] = [];
    for (const u of uploads) {
      const growthOk = u.rssGrowthMiB === null || u.rssGrowthMiB < TARGETS.uploadRssGrowthMiB;
      const ok = u.status === 413 && growthOk;
      if (!ok) missed = true;
      if (u.status !== 413) verdicts.push(`${u.mode}: the client got ${u.status ?? u.error}${u.serverMsTo413 === null ? '' : ` although the server logged 413 after ${_ms(u.serverMsTo413)}`}`);
      say(
        _pad(
          [
            u.mode === 'chunked' ? 'chunked, no Content-Length' : 'Content-Length: 64 MiB',
            String(u.status ?? '-'),
            u.msToAnswer === null ? '-' : _ms(u.msToAnswer),
            Object.keys(u.serverLogged).join(',') || '-',
            `${(u.bytesSentBeforeAnswer / MiB).toFixed(2)} MiB`,
            u.connectionClosed ? 'yes' : 'no',
            u.rssBeforeMiB === null ? 'n/a' : `${u.rssBeforeMiB.toFixed(1)} MiB`,
            u.rssGrowthMiB === null ? 'n/a' : `+${u.rssGrowthMiB.toFixed(2)} MiB`,
            ok ? 'ok' : u.status !== 413 ? 'no 413' : 'RSS high',
          ],
          uw,
        ),
      );
    }
    for (const line of verdicts) say(`  ${line}`);
    say(`targets: answered 413, RSS growth < ${TARGETS.uploadRssGrowthMiB} MiB. Peak RSS: ${uploads[0]!.peakSource}.`);
    say('"to answer" is from the first byte sent to the status line; "sent before" counts the bytes written by then (most sit in socket buffers)');
    if (health.status !== 200) {
      invalid = true;
      say(`the server did not answer /healthz after the uploads (status ${health.status})`);
    }

    const summary = {
      date: new Date().toISOString(),
      node: process.version,
      wrk: { threads: o.threads, connections: o.connections, durationSeconds: o.duration, rounds: o.rounds },
      stateFilesystem: fs,
      fdatasyncMs: { p50: fsync.p50Ms, p99: fsync.p99Ms, samples: fsync.samples },
      scenarios: Object.fromEntries(
        names.map((name) => [
          name,
          {
            rps: best[name].rps,
            p50Ms: best[name].p50Ms,
            p99Ms: best[name].p99Ms,
            ratio: ratio(name),
            target: targets[name] ?? null,
            meetsTarget: targets[name] === undefined ? null : ratio(name) >= targets[name],
            valid: best[name].problems.length === 0,
            rounds: runs[name],
          },
        ]),
      ),
      transformAddedLatencyMs: added,
      upload: {
        bytes: UPLOAD_BYTES,
        targetRssGrowthMiB: TARGETS.uploadRssGrowthMiB,
        runs: uploads.map((u) => ({ ...u, meetsTarget: u.status === 413 && u.error === null && (u.rssGrowthMiB ?? 0) < TARGETS.uploadRssGrowthMiB })),
      },
      valid: !invalid,
      meetsTargets: !invalid && !missed,
    };
    if (o.json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    else {
      say();
      say('JSON summary:');
      say(JSON.stringify(summary));
    }
    if (invalid) {
      process.stderr.write('bench: some runs were INVALID (see above): their figures do not measure what they claim\n');
      exitCode = 1;
    } else if (missed && o.check) exitCode = 1;
  } catch (error) {
    // After SIGINT/SIGTERM the children were stopped on purpose; what that broke is no news.
    if (!stopping) process.stderr.write(`bench: ${(error as Error).message}\n`);
    exitCode = 1;
  } finally {
    await _stopChildren();
    if (!o.keep) rmSync(tmp, { recursive: true, force: true });
    else say(`kept ${tmp}`);
  }
  return exitCode;
}

process.exitCode = await main(process.argv.slice(2));
