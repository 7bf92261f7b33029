// The coldstart scenario of `npm run bench`: how long a first request waits for a server that is
// not running yet (boot, a restart, an upgrade), what the server holds in memory once it idles,
// and what a CLI command costs next to starting node at all. Each figure is the median of several
// interleaved starts, beside a bare node:http server started the same way and adnanh/webhook.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { rssKiB } from './_proc.ts';
import { freePort } from './_port.ts';

/** What the scenario is given: where to work, which builds, which peers are installed. */
export interface ColdOptions {
  tmp: string;
  /** hooks-ingress builds by name (a checkout with dist/ built), the current one last. */
  builds: readonly { name: string; dir: string }[];
  /** This checkout: the bare server and the commands' build. */
  root: string;
  starts: number;
  webhook: string | null;
  socketActivate: string | null;
  say: (line?: string) => void;
}

/** One start: to the first 200, the CPU spent by then, the resident set after idling. */
interface Start {
  ms: number;
  cpuMs: number | null;
  rssMiB: number | null;
}

/** One way of starting one server. */
interface Starter {
  name: string;
  how: 'listen' | 'socket';
  start(port: number): ChildProcess;
  /** Resolves when the request may go out (socket activation: once the socket is bound); else at once. */
  ready?: (child: ChildProcess) => Promise<void>;
}

/** The figures the bench reports, by row name. */
export interface ColdFigures {
  starts: Record<string, { ms: number; cpuMs: number; rssMiB: number; samples: Start[] }>;
  commands: Record<string, { ms: number; cpuMs: number; samples: { ms: number; cpuMs: number }[] }>;
}

const WAKE = '{"text":"cold","mode":"next-heartbeat"}';
const IDLE_MS = 1_500;

function _median(values: readonly number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

// CPU time of every thread of a process so far, in ms, from the scheduler's nanosecond counters
// (/proc/PID/task/*/schedstat): /proc/PID/stat counts in 10 ms ticks, too coarse for a start.
function _cpuMs(pid: number): number | null {
  try {
    let ns = 0;
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    }
    return ns / 1e6;
  } catch {
    return null;
  }
}

// One POST; resolves to the status, or rejects (refused while the server is not yet listening).
function _post(port: number, path: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers = {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(WAKE)),
    };
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST', headers, agent: false, timeout: 30_000 },
      (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.once('timeout', () => req.destroy(new Error('timed out')));
    req.once('error', reject);
    req.end(WAKE);
  });
}

// Until the first 200: a refused connection is tried again at once (the server is not listening yet).
async function _firstOk(port: number, token: string, child: ChildProcess, deadline: number): Promise<number> {
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`exited (${child.signalCode ?? child.exitCode}) before answering`);
    }
    if (performance.now() > deadline) throw new Error('no 200 within 30 s');
    try {
      const status = await _post(port, '/hooks/wake', token);
      if (status === 200) return performance.now();
      throw new Error(`answered ${status}`);
    } catch (error) {
      if (
        (error as NodeJS.ErrnoException).code !== 'ECONNREFUSED' &&
        (error as NodeJS.ErrnoException).code !== 'ECONNRESET'
      ) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }
}

async function _stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(force);
}

async function _measureStart(starter: Starter, token: string): Promise<Start> {
  const port = await freePort();
  const t0 = performance.now();
  const child = starter.start(port);
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
  try {
    let from = t0;
    if (starter.ready !== undefined) {
      // Socket activation: the clock starts when the socket is there and the request goes out.
      await starter.ready(child);
      from = performance.now();
    }
    const at = await _firstOk(port, token, child, t0 + 30_000);
    const cpuMs = _cpuMs(child.pid!);
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    const rss = rssKiB(child.pid!, 'VmRSS');
    return { ms: at - from, cpuMs, rssMiB: rss === null ? null : rss / 1024 };
  } catch (error) {
    throw new Error(
      `${starter.name} (${starter.how}): ${(error as Error).message}${
        stderr === '' ? '' : `\n--- its stderr ---\n${stderr.trimEnd()}`
      }`,
    );
  } finally {
    await _stop(child);
  }
}

// systemd-socket-activate says "Listening on ..." once its socket is bound; the command starts at the first connection.
function _socketReady(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: string) => {
      text += chunk;
      if (/Listening on /.test(text)) {
        child.stderr!.off('data', onData);
        resolve();
      }
    };
    child.stderr!.setEncoding('utf8').on('data', onData);
    child.once('exit', (code) => reject(new Error(`systemd-socket-activate exited (${code}): ${text.trim()}`)));
  });
}

// A command's wall and CPU time (its whole process tree, from getrusage through bash's `times`,
// to the microsecond where /proc would give 10 ms ticks).
function _command(argv: readonly string[], cwd: string): { ms: number; cpuMs: number } {
  const script = 'a=$EPOCHREALTIME; "$@" >/dev/null 2>&1; s=$?; b=$EPOCHREALTIME; echo "$a $b $s"; times';
  const out = spawnSync('bash', ['-c', script, 'bench', ...argv], { cwd, encoding: 'utf8' });
  const lines = out.stdout.trim().split('\n');
  const [a, b, status] = lines[0]!.split(' ');
  if (status !== '0') throw new Error(`${argv.join(' ')} exited ${status}`);
  // times: the shell's user/system, then its children's ("0m0.052s 0m0.004s").
  const seconds = [...lines[2]!.matchAll(/(\d+)m([\d.]+)s/g)].reduce(
    (sum, m) => sum + Number(m[1]) * 60 + Number(m[2]),
    0,
  );
  return { ms: (Number(b) - Number(a)) * 1000, cpuMs: seconds * 1000 };
}

/** The built files a module loads before any of its code runs: its static imports, followed. */
export function staticGraph(entry: string): Set<string> {
  const found = new Set<string>();
  const visit = (file: string) => {
    if (found.has(file)) return;
    found.add(file);
    const code = readFileSync(file, 'utf8');
    for (
      const m of code.matchAll(/^(?:import|export)\s[^'"]*?from\s*['"](\.[^'"]+)['"]|^import\s*['"](\.[^'"]+)['"]/gm)
    ) visit(resolve(dirname(file), m[1] ?? m[2]!));
  };
  visit(entry);
  return found;
}

/** The floor of loading that many ES modules on this Node: a chain of as many empty files in `dir`; returns the first. */
export function emptyModules(dir: string, count: number): string {
  mkdirSync(dir, { recursive: true });
  for (let i = 1; i <= count; i++) {
    writeFileSync(
      join(dir, `m${i}.mjs`),
      i < count ? `import './m${i + 1}.mjs';\nexport const m${i} = ${i};\n` : `export const m${i} = ${i};\n`,
    );
  }
  return join(dir, 'm1.mjs');
}

/** Runs the scenario: `starts` interleaved starts of every server, then the commands as many times. */
export async function coldstart(o: ColdOptions): Promise<ColdFigures> {
  const dir = join(o.tmp, 'coldstart');
  mkdirSync(dir, { recursive: true });
  const token = 'cold-start-bench-token-0123456789abcdef';
  // No transform, no model, no channel: the least a configured server starts with.
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ hooks: { enabled: true, token } }), { mode: 0o600 });
  const node = process.execPath;
  const quiet = { stdio: ['ignore', 'ignore', 'pipe'] as ['ignore', 'ignore', 'pipe'] };
  const bare = join(o.root, 'bench', 'baseline.mjs');
  const starters: Starter[] = [{
    name: 'bare node:http',
    how: 'listen',
    start: (port) => spawn(node, [bare], { ...quiet, env: { ...process.env, BENCH_PORT: String(port) } }),
  }];
  for (const build of o.builds) {
    const state = join(dir, `state-${build.name}`);
    const args = (
      port: number | null,
    ) => [
      join(build.dir, 'bin', 'hooks-ingress'),
      'serve',
      '--config',
      config,
      '--state-dir',
      state,
      ...(port === null ? [] : ['--host', '127.0.0.1', '--port', String(port)]),
    ];
    starters.push({ name: build.name, how: 'listen', start: (port) => spawn(node, args(port), quiet) });
  }
  if (o.webhook !== null) {
    const hooks = join(dir, 'webhook-hooks.json');
    const rule = {
      match: { type: 'value', value: `Bearer ${token}`, parameter: { source: 'header', name: 'Authorization' } },
    };
    writeFileSync(
      hooks,
      JSON.stringify([{ id: 'wake', 'execute-command': '/bin/true', 'response-message': 'ok', 'trigger-rule': rule }]),
    );
    const webhook = o.webhook;
    starters.push({
      name: 'adnanh/webhook',
      how: 'listen',
      start: (port) => spawn(webhook, ['-hooks', hooks, '-ip', '127.0.0.1', '-port', String(port)], quiet),
    });
  }
  if (o.socketActivate !== null) {
    const activate = o.socketActivate;
    const pipe = { stdio: ['ignore', 'ignore', 'pipe'] as ['ignore', 'ignore', 'pipe'] };
    starters.push({
      name: 'bare node:http',
      how: 'socket',
      start: (port) => spawn(activate, ['-l', `127.0.0.1:${port}`, node, bare], pipe),
      ready: _socketReady,
    });
    for (const build of o.builds) {
      const state = join(dir, `state-${build.name}-socket`);
      const args = [join(build.dir, 'bin', 'hooks-ingress'), 'serve', '--config', config, '--state-dir', state];
      starters.push({
        name: build.name,
        how: 'socket',
        start: (port) => spawn(activate, ['-l', `127.0.0.1:${port}`, node, ...args], pipe),
        ready: _socketReady,
      });
    }
  }

  o.say(
    `coldstart: ${o.starts} interleaved starts of each server, start to the first 200 on POST /hooks/wake, then ${
      IDLE_MS / 1000
    } s idle`,
  );
  const samples = new Map<Starter, Start[]>(starters.map((s) => [s, []]));
  for (let round = 1; round <= o.starts; round++) {
    const order = round % 2 === 1 ? starters : [...starters].reverse();
    for (const starter of order) {
      const start = await _measureStart(starter, token);
      samples.get(starter)!.push(start);
      o.say(
        `  start ${round} ${`${starter.name} (${starter.how})`.padEnd(34)} ${start.ms.toFixed(1).padStart(7)} ms  cpu ${
          start.cpuMs?.toFixed(1) ?? 'n/a'
        } ms  rss ${start.rssMiB?.toFixed(1) ?? 'n/a'} MiB`,
      );
    }
  }

  // The commands: one that reads the state directory through the config, the version, and node itself.
  const current = o.builds[o.builds.length - 1]!;
  const bin = join(current.dir, 'bin', 'hooks-ingress');
  const served = staticGraph(join(current.dir, 'dist', 'cli', 'serve.js')).size;
  const serveModule = pathToFileURL(join(current.dir, 'dist', 'cli', 'serve.js')).href;
  const commands: [string, string[]][] = [
    ['node -e 0', [node, '-e', '0']],
    [`${served} empty modules`, [node, emptyModules(join(dir, 'empty'), served)]],
    ["serve's modules, loaded", [node, '--input-type=module', '-e', `await import(${JSON.stringify(serveModule)})`]],
    ['hooks-ingress --version', [node, bin, '--version']],
    ['hooks-ingress events', [
      node,
      bin,
      'events',
      '--config',
      config,
      '--state-dir',
      join(dir, `state-${current.name}`),
    ]],
  ];
  const runs = new Map<string, { ms: number; cpuMs: number }[]>(commands.map(([name]) => [name, []]));
  for (let round = 1; round <= Math.max(o.starts, 9); round++) {
    for (const [name, argv] of round % 2 === 1 ? commands : [...commands].reverse()) {
      runs.get(name)!.push(_command(argv, o.root));
    }
  }

  const figures: ColdFigures = { starts: {}, commands: {} };
  for (const [starter, list] of samples) {
    figures.starts[`${starter.name} (${starter.how})`] = {
      ms: _median(list.map((s) => s.ms)),
      cpuMs: _median(list.map((s) => s.cpuMs ?? Number.NaN)),
      rssMiB: _median(list.map((s) => s.rssMiB ?? Number.NaN)),
      samples: list,
    };
  }
  for (const [name, list] of runs) {
    figures.commands[name] = {
      ms: _median(list.map((r) => r.ms)),
      cpuMs: _median(list.map((r) => r.cpuMs)),
      samples: list,
    };
  }
  _report(figures, o);
  return figures;
}

function _report(f: ColdFigures, o: ColdOptions): void {
  const pad = (cells: string[], widths: number[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const widths = [34, 10, 8, 10, 8, 10, 9];
  o.say();
  o.say(pad(['server (started by)', 'to 1st 200', 'x bare', 'cpu by then', 'x bare', 'idle RSS', 'vs bare'], widths));
  for (const [name, s] of Object.entries(f.starts)) {
    const how = name.endsWith('(socket)') ? 'socket' : 'listen';
    const bare = f.starts[`bare node:http (${how})`]!;
    o.say(
      pad(
        [
          name,
          `${s.ms.toFixed(1)} ms`,
          `${(s.ms / bare.ms).toFixed(2)}x`,
          `${s.cpuMs.toFixed(1)} ms`,
          `${(s.cpuMs / bare.cpuMs).toFixed(2)}x`,
          `${s.rssMiB.toFixed(1)} MiB`,
          `${s.rssMiB >= bare.rssMiB ? '+' : ''}${(s.rssMiB - bare.rssMiB).toFixed(1)} MiB`,
        ],
        widths,
      ),
    );
  }
  o.say(
    '(median of the starts; "socket": systemd-socket-activate holds the socket and starts the server at the first connection, timed from that request)',
  );
  o.say();
  const cw = [26, 10, 8, 10, 8];
  o.say(pad(['command', 'wall', 'x node', 'cpu', 'x node'], cw));
  const base = f.commands['node -e 0']!;
  for (const [name, c] of Object.entries(f.commands)) {
    o.say(
      pad([
        name,
        `${c.ms.toFixed(1)} ms`,
        `${(c.ms / base.ms).toFixed(2)}x`,
        `${c.cpuMs.toFixed(1)} ms`,
        `${(c.cpuMs / base.cpuMs).toFixed(2)}x`,
      ], cw),
    );
  }
  o.say(
    '(median of the runs; "empty modules": a chain of as many empty ES modules as serve loads before it starts, the floor of loading that many files)',
  );
}
