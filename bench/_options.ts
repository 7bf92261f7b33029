// The bench's command line: its help text, the scenarios it knows, and the options parsed and
// checked into one value (the builds to run included, this checkout last).
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** This checkout: its build is the one the reference values are about. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));

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

/** The scenarios run under wrk, in the order of the report. */
export const SCENARIOS = [
  'echo',
  'webhook',
  'floor',
  '401',
  '401-off',
  'wake',
  'wake-off',
  'replay',
  'agent',
  'template',
  'transform',
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

/** A hooks-ingress build under test: a checkout with dist/ built, and the name the report gives it. */
export interface Build {
  name: string;
  dir: string;
}

export interface Options {
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
  /** The --compare builds, then this checkout's. */
  builds: Build[];
  upload: boolean;
  tmp: string;
  json: boolean;
  check: boolean;
  keep: boolean;
}

/** The options from the command line; `null` once --help has been printed. Throws a RangeError naming a bad option. */
export function parseOptions(argv: string[]): Options | null {
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
    if (!Number.isInteger(n) || n < 1 || n > max) {
      throw new RangeError(`Invalid option --${name}: expected a whole number from 1 to ${max}`);
    }
    return n;
  };
  const all = [...SCENARIOS, 'coldstart'];
  const picked = (values.scenarios ?? all.join(',')).split(',').map((s) => s.trim()).filter((s) => s !== '');
  const unknown = picked.filter((s) => !all.includes(s));
  if (unknown.length > 0) {
    throw new RangeError(`Invalid option --scenarios: unknown ${unknown.join(', ')} (known: ${all.join(', ')})`);
  }
  const underWrk = picked.filter((s) => s !== 'coldstart') as ScenarioName[];
  const compare = (values.compare ?? []).map((dir) => resolvePath(dir));
  for (const dir of compare) {
    if (!existsSync(join(dir, 'dist', 'cli', 'main.js'))) {
      throw new RangeError(`Invalid option --compare: ${dir} has no dist/cli/main.js (run "npm run build" there)`);
    }
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
    // One build compared is "before" and this one "after"; several are named after their directories.
    builds: [...compare.map((dir) => ({ name: compare.length === 1 ? 'before' : basename(dir), dir })), {
      name: compare.length === 0 ? 'hooks-ingress' : 'after',
      dir: ROOT,
    }],
    upload: values['no-upload'] !== true,
    tmp: values.tmp ?? tmpdir(),
    json: values.json === true,
    check: values.check === true,
    keep: values.keep === true,
  };
}
