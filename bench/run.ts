// `npm run bench`: what the hooks-ingress edge costs next to a bare node:http JSON echo (and to
// adnanh/webhook's rejection path when `webhook` is on PATH) under the same wrk load, in CPU time
// of the server process per request as well as in req/s; plus a 64 MiB upload that must be refused
// with 413 without the server's memory growing. `--compare DIR` runs other builds (other
// checkouts) beside this one, so a change is measured before and after in the same run.
// A script, not a test: it prints figures; `--check` turns the reference values (docs/benchmark.md) into an exit code.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request, type IncomingHttpHeaders } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { basename, delimiter, join, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { LogTap } from './_log-tap.ts';
import { cpuSeconds, filesystem, fsyncProbe } from './_proc.ts';
import { coldstart, type ColdFigures } from './coldstart.ts';
import { upload, UPLOAD_BYTES, type UploadResult } from './_upload.ts';
import { freePort } from './_port.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const UPLOAD_RSS_TARGET_MIB = 16;
// Every wake-like scenario (and the echo) carries the same body; `next-heartbeat` so that no
// scenario starts a heartbeat turn and they all measure the same durable path.
const WAKE_BODY = '{"text":"bench","mode":"next-heartbeat"}';
const AGENT_BODY = '{"message":"bench"}';

const HELP = `Usage: npm run bench -- [options]

Starts hooks-ingress (bin/hooks-ingress serve, from dist/), a bare node:http JSON echo and, when
the webhook binary (adnanh/webhook) is on PATH, that server with one token rule, all on 127.0.0.1;
drives each scenario with wrk in interleaved rounds and reports the median of each figure
(each scenario, and the upload, has a hooks-ingress process and state directory of its own):
req/s, p50/p99 latency, and the server's CPU time per request (utime + stime of its process
tree from /proc over the run, divided by the requests wrk completed), each also as a ratio to
the echo measured in the same run. Then uploads 64 MiB to /hooks/wake (413 time, RSS growth).

Scenarios (--scenarios takes a comma-separated subset):
  echo        bare node:http: read the body, JSON.parse it, answer 200 (always run)
  webhook     adnanh/webhook answering 401 to a wrong token (when on PATH)
  floor       bench/floor.mjs: the least a node:http server does to refuse a wrong token as the
              service must (hash and compare, count the failure, 401 with an id, a log line)
  401         POST /hooks/wake with a wrong token of the right length
  wake        POST /hooks/wake accepted: one durable journal write (mode next-heartbeat)
  401-off     the 401 scenario with the request ledger off (hooks.ledger.enabled false)
  wake-off    the wake scenario with the request ledger off: what the ledger costs is the
              difference, reported after the table
  replay      POST /hooks/wake with a fixed Idempotency-Key: every request is a replay
  agent       POST /hooks/agent accepted: the run is queued (the model never answers)
  template    POST /hooks/plain: a textTemplate mapping (wakeMode next-heartbeat)
  transform   POST /hooks/t: a trivial transform mapping (wakeMode next-heartbeat)
  coldstart   not under wrk: each server started --starts times (interleaved), timed from the
              start to its first 200 on POST /hooks/wake (a bare node:http server, every
              hooks-ingress build, adnanh/webhook, and each through systemd-socket-activate when
              installed), its CPU by then and its RSS after 1.5 s idle; then hooks-ingress
              --version and events against node -e 0 (bench/coldstart.ts)

Options:
  --duration S      seconds per measured wrk run (default 5)
  --rounds N        interleaved rounds of every scenario; the median is kept (default 3)
  --connections N   wrk connections (default 32)
  --threads N       wrk threads (default 1)
  --scenarios LIST  only these scenarios (the echo always runs, unless coldstart is the only one)
  --starts N        coldstart: starts of each server; the median is kept (default 5)
  --compare DIR     also run the build in DIR (a checkout with dist/ built) as "before"; given
                    more than once, each build is named after its directory and the table
                    shows each one against the one listed before it (this checkout last)
  --no-upload       skip the 64 MiB upload
  --tmp DIR         where the temporary config and state directories go (default: the OS temp dir)
  --json            print only the JSON summary on stdout (the report goes to stderr);
                    use "npm run -s bench -- --json" so npm's banner stays off stdout
  --check           exit 1 when a figure is outside the reference values (docs/benchmark.md) (invalid runs always exit 1)
  --keep            keep the temporary directory
  -h, --help        show this help
`;

const SCENARIOS = ['echo', 'webhook', 'floor', '401', '401-off', 'wake', 'wake-off', 'replay', 'agent', 'template', 'transform'] as const;
type ScenarioName = (typeof SCENARIOS)[number];

/** The request ledger's cost: CPU per request with it on at most this much over the same scenario with it off. */
const LEDGER_TARGETS: Readonly<Record<'401' | 'wake', number>> = { '401': 0.1, wake: 0.15 };

/** The reference values: CPU per request at most this many times the echo's. */
const CPU_TARGETS: Partial<Record<ScenarioName, number>> = { '401': 1.6, wake: 2.5, template: 3.2, transform: 5 };

interface Options {
  duration: number;
  rounds: number;
  connections: number;
  threads: number;
  scenarios: Set<ScenarioName>;
  /** Whether the coldstart scenario runs, and how many starts of each server it makes. */
  coldstart: boolean;
  starts: number;
  /** Other builds to run beside this one, oldest first. */
  compare: string[];
  upload: boolean;
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

interface Run extends WrkRun {
  /** Server CPU (process tree) per completed request, µs; null without /proc. */
  cpuUs: number | null;
  problems: string[];
}

/** A server under test. */
interface Target {
  name: string;
  kind: 'echo' | 'webhook' | 'floor' | 'ingress';
  url: string;
  pid: number;
  tap: LogTap | null;
  /** This checkout's build: the one the reference values are about. */
  current: boolean;
  /** A hooks-ingress process serves one scenario (or the upload) only, with its own state directory. */
  serves?: ScenarioName | 'upload';
}

/** One row of the report: a scenario against one server. */
interface Case {
  scenario: ScenarioName;
  target: Target;
  path: string;
  lua: string;
  status: number;
  runs: Run[];
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
      scenarios: { type: 'string' },
      starts: { type: 'string' },
      compare: { type: 'string', multiple: true },
      'no-upload': { type: 'boolean' },
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
  const all = [...SCENARIOS, 'coldstart'];
  const picked = (values.scenarios ?? all.join(',')).split(',').map((s) => s.trim()).filter((s) => s !== '');
  const unknown = picked.filter((s) => !all.includes(s));
  if (unknown.length > 0) throw new RangeError(`Invalid option --scenarios: unknown ${unknown.join(', ')} (known: ${all.join(', ')})`);
  const underWrk = picked.filter((s) => s !== 'coldstart') as ScenarioName[];
  const compare = (values.compare ?? []).map((dir) => resolvePath(dir));
  for (const dir of compare) {
    if (!existsSync(join(dir, 'dist', 'cli', 'main.js'))) throw new RangeError(`Invalid option --compare: ${dir} has no dist/cli/main.js (run "npm run build" there)`);
  }
  return {
    duration: whole('duration', values.duration, 5, 60),
    rounds: whole('rounds', values.rounds, 3, 15),
    connections: whole('connections', values.connections, 32, 1024),
    threads: whole('threads', values.threads, 1, 64),
    // The echo is every wrk scenario's yardstick; coldstart alone runs without wrk.
    scenarios: new Set<ScenarioName>(underWrk.length === 0 ? [] : ['echo', ...underWrk]),
    coldstart: picked.includes('coldstart'),
    starts: whole('starts', values.starts, 5, 51),
    compare,
    upload: values['no-upload'] !== true,
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

let _aptUpdated = false;

/** A command from PATH; as root on a Debian-like system, apt-get may install its package. */
function _ensureTool(command: string, pkg: string, required: boolean): string | null {
  const found = _which(command);
  if (found !== null) return found;
  const apt = _which('apt-get');
  if (process.platform === 'linux' && process.getuid?.() === 0 && apt !== null) {
    say(`${command} is not on PATH; running as root with apt-get: installing the ${pkg} package`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    // apt's chatter goes to stderr so that `--json` keeps stdout clean.
    const opts = { stdio: ['ignore', 2, 2] as ['ignore', number, number], env, timeout: 300_000 };
    if (!_aptUpdated) spawnSync(apt, ['update'], opts);
    _aptUpdated = true;
    spawnSync(apt, ['install', '-y', '--no-install-recommends', pkg], opts);
    const installed = _which(command);
    if (installed !== null) return installed;
    process.stderr.write(`bench: apt-get could not install ${pkg} (see its output above)\n`);
  }
  if (!required) {
    say(`${command} is not on PATH: its row is left out (Debian/Ubuntu: apt-get install ${pkg})`);
    return null;
  }
  process.stderr.write(`bench: this benchmark needs ${command} on PATH, and it is not there.
(Run as root on a system with apt-get, the bench installs it itself.) Install it, then run "npm run bench" again:
  Debian/Ubuntu:  sudo apt-get update && sudo apt-get install ${pkg}
  Fedora:         sudo dnf install ${pkg}
  macOS:          brew install ${pkg}
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

/** Spawns a node process and waits for its `listening on URL` line. */
function _startNode(name: string, args: string[], tap: LogTap | null): Promise<{ url: string; pid: number }> {
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
      resolve({ url: match[1]!, pid: child.pid! });
    });
  });
}

/** adnanh/webhook with one hook whose rule is the bearer token, answering 401 when it does not hold. */
async function _startWebhook(binary: string, dir: string, token: string): Promise<{ url: string; pid: number }> {
  const hooks = [
    {
      id: 'wake',
      'execute-command': '/bin/true',
      'response-message': 'ok',
      'trigger-rule-mismatch-http-response-code': 401,
      'trigger-rule': { match: { type: 'value', value: `Bearer ${token}`, parameter: { source: 'header', name: 'Authorization' } } },
    },
  ];
  const file = join(dir, 'webhook-hooks.json');
  writeFileSync(file, JSON.stringify(hooks), { mode: 0o600 });
  const port = await freePort();
  const child = _track(spawn(binary, ['-hooks', file, '-ip', '127.0.0.1', '-port', String(port)], { stdio: 'ignore' }));
  const url = `http://127.0.0.1:${port}`;
  for (let tries = 0; tries < 100; tries++) {
    if (child.exitCode !== null) break;
    const up = await _probe(`${url}/hooks/wake`, {}, '', 'GET').then(
      () => true,
      () => false,
    );
    if (up) return { url, pid: child.pid! };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`webhook did not start on ${url}`);
}

/** A model API that accepts connections and never answers: /agent runs stay queued, never executed. */
async function _silentModel(): Promise<{ url: string; close: () => void }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {}).on('close', () => sockets.delete(socket));
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
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

function _luaScript(file: string, token: string, body: string, extra: Record<string, string> = {}): string {
  const headers = { 'Content-Type': 'application/json', Authorization: `Bearer ${token}`, ...extra };
  writeFileSync(
    file,
    `wrk.method = "POST"\nwrk.body = '${body}'\n${Object.entries(headers)
      .map(([k, v]) => `wrk.headers["${k}"] = "${v}"\n`)
      .join('')}`,
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

// A run that silently measured the wrong thing (errors, lockouts, resets) must not pass as a figure.
function _problems(run: WrkRun, expected: number, statuses: Record<string, number> | null): string[] {
  const problems: string[] = [];
  if (run.requests === 0) problems.push('no requests completed');
  const { connect, read, write, timeout } = run.socketErrors;
  if (connect + read + write + timeout > 0) problems.push(`socket errors: connect ${connect}, read ${read}, write ${write}, timeout ${timeout}`);
  if (expected < 300 && run.non2xx > 0) problems.push(`${run.non2xx} non-2xx responses`);
  if (expected >= 300 && run.non2xx !== run.requests) problems.push(`${run.requests - run.non2xx} responses were 2xx/3xx, expected all ${expected}`);
  if (statuses !== null) {
    const other = Object.entries(statuses).filter(([status]) => status !== String(expected));
    if (other.length > 0) problems.push(`server logged other statuses: ${other.map(([s, n]) => `${s} x${n}`).join(', ')}`);
  }
  return problems;
}

/** One measured wrk run of a case, with the server's CPU time over it. */
async function _measure(wrk: string, c: Case, o: Options): Promise<Run> {
  c.target.tap?.take();
  const before = cpuSeconds(c.target.pid);
  const run = await _wrk(wrk, `${c.target.url}${c.path}`, c.lua, o.duration, o);
  // The answers (and log lines) of requests still in flight when wrk stopped land a moment later.
  await new Promise((resolve) => setTimeout(resolve, 100));
  const after = cpuSeconds(c.target.pid);
  const statuses = c.target.tap?.take() ?? null;
  const cpuUs = before === null || after === null || run.requests === 0 ? null : ((after - before) * 1e6) / run.requests;
  return { ...run, cpuUs, problems: _problems(run, c.status, statuses) };
}

const _n = (x: number) => Math.round(x).toLocaleString('en-US');
const _ms = (x: number) => (Number.isNaN(x) ? 'n/a' : x < 1 ? `${(x * 1000).toFixed(0)}us` : `${x.toFixed(2)}ms`);
const _pad = (cells: string[], widths: number[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');

function _median(values: number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

interface Figures {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  cpuUs: number;
  valid: boolean;
}

// The median of each figure over the valid rounds (all rounds when none is valid).
function _figures(runs: Run[]): Figures {
  const valid = runs.filter((r) => r.problems.length === 0);
  const use = valid.length > 0 ? valid : runs;
  return {
    rps: _median(use.map((r) => r.rps)),
    p50Ms: _median(use.map((r) => r.p50Ms)),
    p99Ms: _median(use.map((r) => r.p99Ms)),
    cpuUs: _median(use.map((r) => r.cpuUs ?? Number.NaN)),
    valid: valid.length === runs.length && runs.length > 0,
  };
}

/** The hooks-ingress config every build under test runs with (`ledger` false: the request ledger off). */
function _config(token: string, modelUrl: string, ledger = true): object {
  return {
    hooks: {
      enabled: true,
      token,
      ...(ledger ? {} : { ledger: { enabled: false } }),
      // So that the 401 scenario measures the auth path on every request, never the lockout (429).
      authRateLimit: { maxFailures: 1_000_000_000, windowSeconds: 1, lockoutSeconds: 1 },
      // No model reads the main session here, so every wake stays unread: the backlog bound is
      // raised so that a run measures accepted wakes, not backpressure (503).
      maxBacklogEvents: 1_000_000_000,
      maxBacklogBytes: 2 ** 40,
      // Runs pile up (the model never answers): let them, the scenario measures accepting them.
      maxQueuedRuns: 1_000_000_000,
      mappings: [
        { match: { path: 'plain' }, action: 'wake', wakeMode: 'next-heartbeat', textTemplate: '{{text}}' },
        { match: { path: 't' }, action: 'wake', wakeMode: 'next-heartbeat', transform: { module: 'trivial.js' } },
      ],
    },
    agents: { defaults: { model: 'silent/model', maxConcurrent: 1, timeoutSeconds: 3600 } },
    models: { providers: { silent: { api: 'openai-completions', baseUrl: modelUrl, apiKey: 'bench' } } },
  };
}

interface Setup {
  tmp: string;
  token: string;
  wrong: string;
  targets: Target[];
  cases: Case[];
  closeModel: () => void;
}

async function _setup(o: Options, webhook: string | null): Promise<Setup> {
  const tmp = mkdtempSync(join(o.tmp, 'hooks-ingress-bench-'));
  const token = randomBytes(32).toString('base64url');
  // Same length as the real one, so the 401 requests are byte for byte as large.
  const wrong = randomBytes(32).toString('base64url');
  const model = await _silentModel();
  writeFileSync(join(tmp, 'config.json'), JSON.stringify(_config(token, model.url)), { mode: 0o600 });
  writeFileSync(join(tmp, 'config-ledger-off.json'), JSON.stringify(_config(token, model.url, false)), { mode: 0o600 });
  const transforms = join(tmp, 'hooks', 'transforms');
  mkdirSync(transforms, { recursive: true });
  writeFileSync(join(transforms, 'trivial.js'), "export default ({ payload }) => ({ kind: 'wake', text: String(payload.text) });\n");

  const targets: Target[] = [];
  const echo = await _startNode('echo', [join(ROOT, 'bench', 'baseline.mjs')], null);
  targets.push({ name: 'echo', kind: 'echo', ...echo, tap: null, current: false });
  if (o.scenarios.has('floor')) {
    // It logs as hooks-ingress does, so its log is read (and its statuses counted) the same way.
    const tap = new LogTap();
    targets.push({ name: 'floor', kind: 'floor', ...(await _startNode('floor', [join(ROOT, 'bench', 'floor.mjs'), join(tmp, 'config.json')], tap)), tap, current: false });
  }
  if (webhook !== null && o.scenarios.has('webhook')) targets.push({ name: 'webhook', kind: 'webhook', ...(await _startWebhook(webhook, tmp, token)), tap: null, current: false });
  const builds: [string, string][] = [
    ...o.compare.map((dir): [string, string] => [o.compare.length === 1 ? 'before' : basename(dir), dir]),
    [o.compare.length === 0 ? 'hooks-ingress' : 'after', ROOT],
  ];
  // One process per scenario, each on its own state directory: no scenario pays for what another
  // left behind (the agent scenario leaves every run it accepted queued, the wakes an unread backlog).
  const purposes = [...SCENARIOS.filter((name) => o.scenarios.has(name) && name !== 'echo' && name !== 'webhook' && name !== 'floor'), ...(o.upload ? (['upload'] as const) : [])];
  for (const [name, dir] of builds) {
    for (const serves of purposes) {
      const tap = new LogTap();
      const state = join(tmp, `state-${name}-${serves}`);
      const config = join(tmp, serves.endsWith('-off') ? 'config-ledger-off.json' : 'config.json');
      const args = [join(dir, 'bin', 'hooks-ingress'), 'serve', '--config', config, '--state-dir', state, '--host', '127.0.0.1', '--port', '0'];
      const started = await _startNode(`hooks-ingress (${name}, ${serves})`, args, tap);
      targets.push({ name, kind: 'ingress', ...started, tap, current: dir === ROOT, serves });
    }
  }

  const lua = {
    good: _luaScript(join(tmp, 'good.lua'), token, WAKE_BODY),
    wrong: _luaScript(join(tmp, 'wrong.lua'), wrong, WAKE_BODY),
    replay: _luaScript(join(tmp, 'replay.lua'), token, WAKE_BODY, { 'Idempotency-Key': 'bench-replay' }),
    agent: _luaScript(join(tmp, 'agent.lua'), token, AGENT_BODY),
  };
  const shapes: Record<ScenarioName, { kind: Target['kind']; path: string; lua: string; status: number }> = {
    echo: { kind: 'echo', path: '/hooks/wake', lua: lua.good, status: 200 },
    webhook: { kind: 'webhook', path: '/hooks/wake', lua: lua.wrong, status: 401 },
    floor: { kind: 'floor', path: '/hooks/wake', lua: lua.wrong, status: 401 },
    '401': { kind: 'ingress', path: '/hooks/wake', lua: lua.wrong, status: 401 },
    '401-off': { kind: 'ingress', path: '/hooks/wake', lua: lua.wrong, status: 401 },
    wake: { kind: 'ingress', path: '/hooks/wake', lua: lua.good, status: 200 },
    'wake-off': { kind: 'ingress', path: '/hooks/wake', lua: lua.good, status: 200 },
    replay: { kind: 'ingress', path: '/hooks/wake', lua: lua.replay, status: 200 },
    agent: { kind: 'ingress', path: '/hooks/agent', lua: lua.agent, status: 202 },
    template: { kind: 'ingress', path: '/hooks/plain', lua: lua.good, status: 200 },
    transform: { kind: 'ingress', path: '/hooks/t', lua: lua.good, status: 200 },
  };
  const cases: Case[] = [];
  for (const scenario of SCENARIOS) {
    if (!o.scenarios.has(scenario)) continue;
    const shape = shapes[scenario];
    for (const target of targets) if (target.kind === shape.kind && (target.serves === undefined || target.serves === scenario)) cases.push({ scenario, target, path: shape.path, lua: shape.lua, status: shape.status, runs: [] });
  }
  return { tmp, token, wrong, targets, cases, closeModel: model.close };
}

// One request of each case first: a case that answers the wrong status stops the run here.
async function _probeAll(s: Setup): Promise<void> {
  const problems: string[] = [];
  for (const c of s.cases) {
    const good = c.scenario !== '401' && c.scenario !== '401-off' && c.scenario !== 'webhook' && c.scenario !== 'floor';
    const headers: Record<string, string> = { authorization: `Bearer ${good ? s.token : s.wrong}`, 'content-type': 'application/json' };
    if (c.scenario === 'replay') headers['idempotency-key'] = 'bench-replay';
    const reply = await _probe(`${c.target.url}${c.path}`, headers, c.scenario === 'agent' ? AGENT_BODY : WAKE_BODY).catch((error: Error) => ({ status: error.message }));
    if (reply.status !== c.status) problems.push(`${c.scenario} on ${c.target.name} answered ${reply.status}, expected ${c.status}`);
  }
  const tails = s.targets.map((t) => t.tap?.tail().trimEnd() ?? '').filter((t) => t !== '');
  if (problems.length > 0) throw new Error(`probe requests failed:\n  ${problems.join('\n  ')}\n--- server stderr ---\n${tails.join('\n')}`);
}

async function _rounds(wrk: string, s: Setup, o: Options, stopping: () => boolean): Promise<void> {
  say('warming up (1 s each)...');
  for (const c of s.cases) await _wrk(wrk, `${c.target.url}${c.path}`, c.lua, 1, o);
  for (let round = 1; round <= o.rounds && !stopping(); round++) {
    // Interleaved, so a slow patch of the machine hits every case alike; builds alternate which goes first.
    const order = round % 2 === 1 ? s.cases : [...s.cases].reverse();
    for (const c of order) {
      if (stopping()) break;
      const run = await _measure(wrk, c, o);
      c.runs.push(run);
      const cpu = run.cpuUs === null ? 'n/a' : `${run.cpuUs.toFixed(1)} us/req`;
      say(
        `  round ${round} ${c.scenario.padEnd(9)} ${c.target.name.padEnd(13)} ${_n(run.rps).padStart(8)} req/s  p50 ${_ms(run.p50Ms)}  p99 ${_ms(run.p99Ms)}  cpu ${cpu}` +
          (run.problems.length > 0 ? `  INVALID: ${run.problems.join('; ')}` : ''),
      );
    }
  }
}

interface Row {
  scenario: ScenarioName;
  server: string;
  figures: Figures;
  rpsRatio: number;
  cpuRatio: number;
  cpuTarget: number | null;
  current: boolean;
}

function _rows(s: Setup): Row[] {
  const echo = _figures(s.cases.find((c) => c.scenario === 'echo')!.runs);
  return s.cases.map((c) => {
    const figures = _figures(c.runs);
    const target = c.target.current ? (CPU_TARGETS[c.scenario] ?? null) : null;
    return { scenario: c.scenario, server: c.target.name, figures, rpsRatio: figures.rps / echo.rps, cpuRatio: figures.cpuUs / echo.cpuUs, cpuTarget: target, current: c.target.current };
  });
}

function _report(rows: Row[], o: Options): { invalid: boolean; outside: string[] } {
  const widths = [10, 13, 9, 9, 9, 11, 8, 8, 9];
  say();
  say(_pad(['scenario', 'server', 'req/s', 'p50', 'p99', 'cpu us/req', 'rps/echo', 'cpu/echo', 'cpu ref'], widths));
  const outside: string[] = [];
  let invalid = false;
  for (const r of rows) {
    const f = r.figures;
    invalid ||= !f.valid;
    const cpu = Number.isNaN(f.cpuUs) ? 'n/a' : f.cpuUs.toFixed(1);
    const reference = r.cpuTarget === null ? '' : `<=${r.cpuTarget.toFixed(1)}x`;
    if (r.cpuTarget !== null && !(r.cpuRatio <= r.cpuTarget)) outside.push(`${r.scenario}: cpu ${r.cpuRatio.toFixed(2)}x the echo (reference <= ${r.cpuTarget}x)`);
    say(_pad([r.scenario, r.server, _n(f.rps), _ms(f.p50Ms), _ms(f.p99Ms), cpu, `${r.rpsRatio.toFixed(2)}x`, Number.isNaN(r.cpuRatio) ? 'n/a' : `${r.cpuRatio.toFixed(2)}x`, reference + (f.valid ? '' : ' INVALID')], widths));
  }
  say(`(median of ${o.rounds} interleaved round(s) of ${o.duration} s each; every round is listed above)`);
  const peer = rows.find((r) => r.scenario === 'webhook');
  const unauthorized = rows.find((r) => r.scenario === '401' && r.current);
  if (peer !== undefined && unauthorized !== undefined) {
    const ratio = unauthorized.figures.rps / peer.figures.rps;
    say(`401 throughput / adnanh/webhook's rejection: ${ratio.toFixed(2)}x (reference >= 0.8x)`);
    if (!(ratio >= 0.8)) outside.push(`401: ${ratio.toFixed(2)}x adnanh/webhook's rejection rate (reference >= 0.8x)`);
  }
  const floor = rows.find((r) => r.scenario === 'floor');
  if (floor !== undefined && unauthorized !== undefined) {
    say(`401 floor (bench/floor.mjs): cpu ${floor.cpuRatio.toFixed(2)}x the echo${peer === undefined ? '' : `, ${(floor.figures.rps / peer.figures.rps).toFixed(2)}x adnanh/webhook's rate`}; hooks-ingress's 401: ${(unauthorized.figures.cpuUs / floor.figures.cpuUs).toFixed(2)}x the floor's cpu`);
  }
  const wake = rows.find((r) => r.scenario === 'wake' && r.current);
  if (wake !== undefined) {
    say(`durable wake throughput / echo: ${wake.rpsRatio.toFixed(2)}x (reference >= 0.5x)`);
    if (!(wake.rpsRatio >= 0.5)) outside.push(`wake: ${wake.rpsRatio.toFixed(2)}x the echo's throughput (reference >= 0.5x)`);
  }
  for (const scenario of ['401', 'wake'] as const) {
    for (const build of new Set(rows.filter((r) => r.scenario === scenario).map((r) => r.server))) {
      const on = rows.find((r) => r.scenario === scenario && r.server === build);
      const off = rows.find((r) => r.scenario === `${scenario}-off` && r.server === build);
      if (on === undefined || off === undefined) continue;
      const cost = on.figures.cpuUs / off.figures.cpuUs - 1;
      const limit = LEDGER_TARGETS[scenario];
      say(`request ledger on ${scenario} (${build}): ${on.figures.cpuUs.toFixed(1)} vs ${off.figures.cpuUs.toFixed(1)} us/req off, ${cost >= 0 ? '+' : ''}${(cost * 100).toFixed(1)}% cpu (reference <= ${limit * 100}%)`);
      if (on.current && !(cost <= limit)) outside.push(`${scenario}: the request ledger costs ${(cost * 100).toFixed(1)}% cpu (reference <= ${limit * 100}%)`);
    }
  }
  if (o.compare.length > 0) _compareTable(rows);
  return { invalid, outside };
}

// Each build against the one before it: CPU per request, then req/s, with the change in percent.
function _compareTable(rows: Row[]): void {
  const builds = [...new Set(rows.filter((r) => r.server !== 'echo' && r.server !== 'webhook' && r.server !== 'floor').map((r) => r.server))];
  const pct = (a: number, b: number) => `${b >= a ? '+' : ''}${(((b - a) / a) * 100).toFixed(0)}%`;
  for (const [title, figure, format] of [
    ['cpu us/req', (f: Figures) => f.cpuUs, (x: number) => x.toFixed(1)],
    ['req/s', (f: Figures) => f.rps, _n],
  ] as const) {
    say();
    const widths = [10, ...builds.map((b) => Math.max(b.length, 16))];
    say(_pad([title, ...builds], widths));
    for (const scenario of new Set(rows.map((r) => r.scenario))) {
      const cells = builds.map((build, i) => {
        const row = rows.find((r) => r.scenario === scenario && r.server === build);
        const prev = i === 0 ? undefined : rows.find((r) => r.scenario === scenario && r.server === builds[i - 1]);
        if (row === undefined) return '';
        const value = figure(row.figures);
        return prev === undefined ? format(value) : `${format(value)} (${pct(figure(prev.figures), value)})`;
      });
      if (cells.some((c) => c !== '')) say(_pad([scenario, ...cells], widths));
    }
  }
}

function _uploadReport(uploads: { server: string; result: UploadResult }[]): boolean {
  say();
  const uw = [14, 26, 7, 10, 12, 7, 11, 11];
  say(_pad(['server', '64 MiB upload', 'status', 'to answer', 'sent before', 'closed', 'RSS before', 'RSS growth'], uw));
  let ok = true;
  for (const { server, result: u } of uploads) {
    ok &&= u.status === 413 && (u.rssGrowthMiB ?? 0) < UPLOAD_RSS_TARGET_MIB;
    say(
      _pad(
        [
          server,
          u.mode === 'chunked' ? 'chunked, no Content-Length' : 'Content-Length: 64 MiB',
          String(u.status ?? u.error ?? '-'),
          u.msToAnswer === null ? '-' : _ms(u.msToAnswer),
          `${(u.bytesSentBeforeAnswer / 1024 / 1024).toFixed(2)} MiB`,
          u.connectionClosed ? 'yes' : 'no',
          u.rssBeforeMiB === null ? 'n/a' : `${u.rssBeforeMiB.toFixed(1)} MiB`,
          u.rssGrowthMiB === null ? 'n/a' : `+${u.rssGrowthMiB.toFixed(2)} MiB`,
        ],
        uw,
      ),
    );
  }
  say(`reference: 413, RSS growth < ${UPLOAD_RSS_TARGET_MIB} MiB; peak RSS: ${uploads[0]?.result.peakSource ?? 'n/a'}`);
  say('"to answer" is from the first byte sent to the status line; "sent before" counts the bytes written by then (most sit in socket buffers)');
  return ok;
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

  const wrk = o.scenarios.size === 0 ? '' : _ensureTool('wrk', 'wrk', true);
  if (wrk === null) return 1;
  const webhook = o.scenarios.has('webhook') || o.coldstart ? _ensureTool('webhook', 'webhook', false) : null;
  if (!_ensureBuild()) return 1;
  let cold: ColdFigures | null = null;
  if (o.coldstart) {
    const tmp = mkdtempSync(join(o.tmp, 'hooks-ingress-coldstart-'));
    try {
      const builds = [...o.compare.map((dir) => ({ name: o.compare.length === 1 ? 'before' : basename(dir), dir })), { name: o.compare.length === 0 ? 'hooks-ingress' : 'after', dir: ROOT }];
      cold = await coldstart({ tmp, builds, root: ROOT, starts: o.starts, webhook, socketActivate: _which('systemd-socket-activate'), say });
    } catch (error) {
      process.stderr.write(`bench: coldstart: ${(error as Error).message}\n`);
      return 1;
    } finally {
      if (!o.keep) rmSync(tmp, { recursive: true, force: true });
      else say(`kept ${tmp}`);
    }
    if (o.scenarios.size === 0) {
      if (o.json) process.stdout.write(`${JSON.stringify({ date: new Date().toISOString(), node: process.version, coldstart: cold }, null, 2)}\n`);
      return 0;
    }
    say();
  }

  let setup: Setup | null = null;
  let exitCode = 0;
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`bench: ${signal}: stopping\n`);
    void _stopChildren().then(() => {
      if (setup !== null && !o.keep) rmSync(setup.tmp, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    setup = await _setup(o, webhook);
    const fs = filesystem(setup.tmp);
    const fsync = fsyncProbe(setup.tmp);
    const cpu = cpus();
    say(`hooks-ingress benchmark: wrk -t${o.threads} -c${o.connections}, ${o.rounds} interleaved round(s) of ${o.duration} s per case, loopback 127.0.0.1`);
    say(`node ${process.version}, ${cpu.length} x ${cpu[0]?.model ?? 'unknown CPU'}, state directories on ${fs}, fdatasync p50 ${_ms(fsync.p50Ms)} p99 ${_ms(fsync.p99Ms)}`);
    say('every hooks-ingress logs one JSON line per request to stderr (a pipe read by this script, as journald would); the echo logs nothing');
    for (const t of setup.targets) say(`  ${t.name.padEnd(13)} ${(t.serves ?? '').padEnd(9)} ${t.url} (pid ${t.pid})`);
    await _probeAll(setup);
    await _rounds(wrk, setup, o, () => stopping);
    const rows = _rows(setup);
    const { invalid: badRuns, outside } = _report(rows, o);
    let invalid = badRuns;

    const uploads: { server: string; result: UploadResult }[] = [];
    if (o.upload) {
      say();
      say('uploading 64 MiB to /hooks/wake with a valid token (streamed; the client never holds it)...');
      for (const t of setup.targets.filter((x) => x.serves === 'upload')) {
        for (const mode of ['chunked', 'content-length'] as const) uploads.push({ server: t.name, result: await upload(t.url, setup.token, t.pid, mode, t.tap!) });
        const health = await _probe(`${t.url}/healthz`, {}, '', 'GET').catch(() => ({ status: 0 }));
        if (health.status !== 200) {
          invalid = true;
          say(`${t.name} did not answer /healthz after the uploads (status ${health.status})`);
        }
      }
      if (!_uploadReport(uploads)) outside.push('upload: not answered 413, or RSS grew too much');
    }
    for (const line of outside) say(`outside the reference value: ${line}`);

    const summary = {
      date: new Date().toISOString(),
      node: process.version,
      cpus: { count: cpu.length, model: cpu[0]?.model ?? null },
      wrk: { threads: o.threads, connections: o.connections, durationSeconds: o.duration, rounds: o.rounds },
      stateFilesystem: fs,
      fdatasyncMs: { p50: fsync.p50Ms, p99: fsync.p99Ms, samples: fsync.samples },
      rows: rows.map((r) => ({ ...r, runs: setup!.cases.find((c) => c.scenario === r.scenario && c.target.name === r.server)!.runs })),
      upload: { bytes: UPLOAD_BYTES, targetRssGrowthMiB: UPLOAD_RSS_TARGET_MIB, runs: uploads },
      coldstart: cold,
      outsideGoals: outside,
      valid: !invalid,
    };
    if (o.json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    if (invalid) {
      process.stderr.write('bench: some runs were INVALID (see above): their figures do not measure what they claim\n');
      exitCode = 1;
    } else if (outside.length > 0 && o.check) exitCode = 1;
  } catch (error) {
    // After SIGINT/SIGTERM the children were stopped on purpose; what that broke is no news.
    if (!stopping) process.stderr.write(`bench: ${(error as Error).message}\n`);
    exitCode = 1;
  } finally {
    await _stopChildren();
    setup?.closeModel();
    if (setup !== null && !o.keep) rmSync(setup.tmp, { recursive: true, force: true });
    else if (setup !== null) say(`kept ${setup.tmp}`);
  }
  return exitCode;
}

process.exitCode = await main(process.argv.slice(2));
