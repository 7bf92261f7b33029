// `npm run bench:instructions`: the instructions a request costs the server, counted by valgrind's
// callgrind, where `npm run bench` measures CPU time. On a shared machine CPU time per request
// swings by 10 to 40 % between runs of one build; an instruction count repeats within about 1 %,
// so a change of a few per cent can be seen, and traced to the functions that make it. The server
// runs under `node --predictable` (V8 on one thread: its compiler and collector in the count, not
// racing it) with `--perf-basic-prof`, so that `callgrind_annotate` on the kept output can name
// JavaScript functions through /tmp/perf-<pid>.map. Requests go one at a time on one connection,
// so nothing depends on how many arrive together. Slow: each server runs 20 to 50 times slower
// under valgrind, so a round of one scenario takes half a minute.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { parseArgs } from 'node:util';
import { stopChildren, track } from './_children.ts';
import { ROOT } from './_options.ts';
import { say } from './_say.ts';
import { ensureBuild, ensureTool } from './_tools.ts';

const HELP = `Usage: npm run bench:instructions -- [options]

Counts the instructions (callgrind's Ir) hooks-ingress spends per request: a server under
valgrind, WARM requests to settle V8, then REQUESTS counted, one at a time on one connection.

Scenarios (--scenarios takes a comma-separated subset; default wake,wake-off,401):
  wake      POST /hooks/wake accepted (a numbered text each: none coalesces)
  wake-off  the same with the request ledger off
  401       POST /hooks/wake with a wrong token of the right length
  401-off   the same with the request ledger off

Options:
  --compare DIR     also count the build in DIR (a checkout with dist/ built), listed first
  --rounds N        servers per build and scenario, interleaved; the median is kept (default 2)
  --warm N          requests before counting (default 5000)
  --requests N      requests counted (default 2000)
  --keep DIR        keep each callgrind output (and perf map) in DIR
  --help            this text
`;

const TOKEN = 'bench-instructions-token-0123456789abcdef';
const SCENARIOS = ['wake', 'wake-off', '401', '401-off'] as const;
type Scenario = (typeof SCENARIOS)[number];

interface Options {
  builds: { name: string; dir: string }[];
  scenarios: Scenario[];
  rounds: number;
  warm: number;
  requests: number;
  keep: string | null;
}

function _options(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      compare: { type: 'string', multiple: true },
      scenarios: { type: 'string' },
      rounds: { type: 'string' },
      warm: { type: 'string' },
      requests: { type: 'string' },
      keep: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help === true) {
    process.stdout.write(HELP);
    return null;
  }
  const count = (name: string, value: string | undefined, fallback: number) => {
    if (value === undefined) return fallback;
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`Invalid option --${name}: a whole number of 1 or more`);
    return n;
  };
  const scenarios = (values.scenarios ?? 'wake,wake-off,401').split(',').map((s) => s.trim());
  for (const s of scenarios) {
    if (!(SCENARIOS as readonly string[]).includes(s)) {
      throw new RangeError(`Invalid option --scenarios: ${s} is not one of ${SCENARIOS.join(', ')}`);
    }
  }
  const compare = (values.compare ?? []).map((dir) => resolvePath(dir));
  return {
    builds: [...compare.map((dir) => ({ name: dir, dir })), { name: 'this checkout', dir: ROOT }],
    scenarios: scenarios as Scenario[],
    rounds: count('rounds', values.rounds, 2),
    warm: count('warm', values.warm, 5000),
    requests: count('requests', values.requests, 2000),
    keep: values.keep === undefined ? null : resolvePath(values.keep),
  };
}

// A config whose bounds never refuse what the count sends; the model is an address nothing answers.
function _config(dir: string, ledger: boolean): string {
  const file = join(dir, 'config.json');
  const config = {
    hooks: {
      enabled: true,
      token: TOKEN,
      authRateLimit: { maxFailures: 1e9, windowSeconds: 1, lockoutSeconds: 1 },
      maxBacklogEvents: 1e9,
      maxBacklogBytes: 2 ** 40,
      ...(ledger ? {} : { ledger: { enabled: false } }),
    },
    agents: { defaults: { model: 'silent/model' } },
    models: { providers: { silent: { api: 'openai-completions', baseUrl: 'http://127.0.0.1:9', apiKey: 'x' } } },
  };
  writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
  return file;
}

// Sends `n` requests of the scenario, one at a time on one kept-alive connection, numbered from `from`.
async function _drive(url: string, scenario: Scenario, from: number, n: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const refused = scenario.startsWith('401');
  const token = refused ? `${TOKEN.slice(0, -1)}X` : TOKEN;
  try {
    for (let i = from; i < from + n; i++) {
      const body = JSON.stringify({ text: `counted ${i}`, mode: 'next-heartbeat' });
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(new URL('/hooks/wake', url), {
          method: 'POST',
          agent,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end(body);
      });
      if (status !== (refused ? 401 : 200)) throw new Error(`${scenario}: answered ${status}`);
    }
  } finally {
    agent.destroy();
  }
}

async function _listening(child: ChildProcess): Promise<string> {
  let out = '';
  return await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk;
      const m = /listening on (http:\S+)/.exec(out);
      if (m !== null) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the server exited (${code}) before it listened`)));
  });
}

// One server of one build under callgrind: warmed, counted, stopped. Returns instructions per request.
async function _count(o: Options, dir: string, scenario: Scenario, tag: string): Promise<number> {
  const tmp = mkdtempSync(join(tmpdir(), 'bench-ir-'));
  try {
    const config = _config(tmp, !scenario.endsWith('-off'));
    const out = join(tmp, 'callgrind.out');
    const args = [
      '--tool=callgrind',
      '--instr-atstart=no',
      '--cache-sim=no',
      '--smc-check=all-non-file',
      `--callgrind-out-file=${out}`,
      process.execPath,
      '--predictable',
      '--perf-basic-prof',
      join(dir, 'bin', 'hooks-ingress'),
      'serve',
      '--config',
      config,
      '--state-dir',
      join(tmp, 'state'),
      '--host',
      '127.0.0.1',
      '--port',
      '0',
    ];
    const child = track(spawn('valgrind', args, { cwd: tmp, stdio: ['ignore', 'pipe', 'ignore'] }));
    const url = await _listening(child);
    await _drive(url, scenario, 0, o.warm);
    spawnSync('callgrind_control', ['--instr=on', String(child.pid)], { stdio: 'ignore' });
    await _drive(url, scenario, o.warm, o.requests);
    spawnSync('callgrind_control', ['--dump', String(child.pid)], { stdio: 'ignore' });
    child.kill('SIGKILL');
    await once(child, 'exit');
    // The dump holds what was counted since instrumentation went on; the output at exit is never written.
    const dumped = readdirSync(tmp).filter((f) => f.startsWith('callgrind.out'));
    const text = dumped.map((f) => readFileSync(join(tmp, f), 'utf8')).join('\n');
    const summary = /^summary: (\d+)$/m.exec(text);
    if (summary === null) throw new Error(`callgrind wrote no summary for ${tag}`);
    if (o.keep !== null) _keep(o.keep, tmp, dumped, child.pid!, tag);
    return Number(summary[1]) / o.requests;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

function _keep(keep: string, tmp: string, dumped: string[], pid: number, tag: string): void {
  mkdirSync(keep, { recursive: true });
  for (const f of dumped) writeFileSync(join(keep, `${tag}.callgrind`), readFileSync(join(tmp, f)));
  const map = `/tmp/perf-${pid}.map`;
  try {
    writeFileSync(join(keep, `${tag}.map`), readFileSync(map));
    rmSync(map, { force: true });
  } catch {
    // No map: JavaScript frames stay addresses.
  }
}

const _median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function main(argv: string[]): Promise<number> {
  let o: Options | null;
  try {
    o = _options(argv);
  } catch (error) {
    process.stderr.write(`bench:instructions: ${(error as Error).message}\n`);
    return 2;
  }
  if (o === null) return 0;
  if (ensureTool('valgrind', 'valgrind', true) === null) return 1;
  if (!ensureBuild(ROOT)) return 1;
  say(`callgrind: ${o.warm} requests to settle, then ${o.requests} counted, one at a time; ${o.rounds} round(s)`);
  const counts = new Map<string, number[]>();
  for (let round = 1; round <= o.rounds; round++) {
    for (const scenario of o.scenarios) {
      for (const [b, build] of o.builds.entries()) {
        const ir = await _count(o, build.dir, scenario, `${scenario}-b${b}-r${round}`);
        say(
          `  round ${round} ${scenario.padEnd(9)} ${build.name}: ${
            Math.round(ir).toLocaleString('en')
          } instructions/req`,
        );
        counts.set(`${scenario} ${b}`, [...(counts.get(`${scenario} ${b}`) ?? []), ir]);
      }
    }
  }
  say();
  for (const scenario of o.scenarios) {
    const first = _median(counts.get(`${scenario} 0`)!);
    const row = o.builds.map((_, b) => {
      const m = _median(counts.get(`${scenario} ${b}`)!);
      return b === 0
        ? Math.round(m).toLocaleString('en')
        : `${Math.round(m).toLocaleString('en')} (${_percent(m / first)})`;
    });
    say(`${scenario.padEnd(9)} ${row.join('   ')}`);
  }
  return 0;
}

function _percent(ratio: number): string {
  const p = (ratio - 1) * 100;
  return `${p >= 0 ? '+' : ''}${p.toFixed(1)} %`;
}

main(process.argv.slice(2)).then(
  async (code) => {
    await stopChildren();
    process.exit(code);
  },
  async (error: unknown) => {
    await stopChildren();
    process.stderr.write(`bench:instructions: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
