// What an open inspector page costs the hooks listener: two hooks-ingress servers with the
// inspector on, one with a page subscribed (polling the list as the page does, every 1.5 s) and
// one without, each under the same wrk load of accepted wakes, in interleaved rounds. Reports the
// server's CPU time per request (user + system from /proc, ÷ requests) for both, and the ratio.
// `--compare DIR` (repeatable) runs the same pair from another built checkout in the same rounds,
// so that a change is measured against the code before it under the same load; `--cpu-prof DIR`
// writes each server's CPU profile there and reports the share of each server's busy time spent
// answering the page (under the inspector's and the ledger reader's frames) and in GC: a ratio
// within one process, which a machine busy elsewhere moves far less than CPU time per request.
//
//   npm run build && node --import tsx bench/inspector-cost.ts [--rounds N] [--duration S] [--compare DIR]...
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuSeconds, rssKiB, threadSeconds } from './_proc.ts';
import { profileOf, profileShares } from './_cpu-profile.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WAKE_BODY = '{"text":"bench","mode":"next-heartbeat"}';
const POLL_MS = 1500;

const { values } = parseArgs({
  options: {
    rounds: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    compare: { type: 'string', multiple: true },
    'cpu-prof': { type: 'string' },
  },
});
const rounds = Number(values.rounds ?? 5);
const duration = Number(values.duration ?? 5);
const connections = Number(values.connections ?? 32);
const builds = [ROOT, ...(values.compare ?? []).map((d) => resolve(d))];
const profiles = values['cpu-prof'] === undefined ? null : resolve(values['cpu-prof']);
const profile = profiles === null ? [] : ['--cpu-prof', '--cpu-prof-dir', profiles];
// The frames that answer the page: its listener and source, and the ledger's reader and lookup.
const PAGE_FRAMES = /\/inspector\/|\/store\/ledger\/(read|find)\.[jt]s$/;

interface Server {
  name: string;
  url: string;
  pid: number;
  state: string;
  bin: string;
  stop(): Promise<void>;
}

async function start(name: string, build: string, dir: string, token: string): Promise<Server> {
  const bin = join(build, 'bin', 'hooks-ingress');
  const config = join(dir, `${name}.json`);
  const state = join(dir, `${name}-state`);
  writeFileSync(
    config,
    JSON.stringify({
      hooks: { enabled: true, token, maxBacklogEvents: 1e9, maxBacklogBytes: 2 ** 40 },
      inspector: { port: 0 },
    }),
    { mode: 0o600 },
  );
  const child = spawn(process.execPath, [...profile, bin, 'serve', '-c', config, '--port', '0', '--state-dir', state], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const match = /listening on (\S+)\n/.exec(out);
      if (match !== null) resolve(match[1]!);
    });
    child.once('exit', () => reject(new Error(`${name} did not start`)));
  });
  return {
    name,
    url,
    pid: child.pid!,
    state,
    bin,
    stop: async () => {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

// Logs in as the page would and polls the list until stopped; answers how many polls it made.
async function subscribe(server: Server): Promise<{ stop(): Promise<{ polls: number; failed: number }> }> {
  const inspect = spawnSync(process.execPath, [server.bin, 'inspect', '--state-dir', server.state], {
    encoding: 'utf8',
  });
  const link = /^(http\S+)$/m.exec(inspect.stdout)?.[1];
  if (link === undefined) throw new Error(`inspect printed no link: ${inspect.stderr}`);
  const login = await fetch(link, { redirect: 'manual' });
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
  // The tab's key rides in the redirect's fragment; every API call sends it beside the cookie.
  const key = /#login=([\w-]+)$/.exec(login.headers.get('location') ?? '')?.[1];
  if (key === undefined) throw new Error('the login redirect carried no key');
  const base = new URL(link).origin;
  let polls = 0;
  let failed = 0;
  let running = true;
  // As the page does, each poll sends the version of the list it has (a server that does not know
  // the parameter ignores it).
  let version = '';
  const loop = (async () => {
    while (running) {
      // As the page does: a poll that fails (a kept-alive connection closed under load) is tried
      // again at the next tick; a refusal is a broken bench.
      try {
        const since = version === '' ? '' : `&since=${encodeURIComponent(version)}`;
        const res = await fetch(`${base}/inspector/api/requests?limit=200${since}`, {
          headers: { cookie, 'x-inspector-key': key },
        });
        if (res.status !== 200) throw new RangeError(`the page's poll answered ${res.status}`);
        version = ((await res.json()) as { version?: string }).version ?? '';
        polls++;
      } catch (error) {
        if (error instanceof RangeError) throw error;
        failed++;
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return { polls, failed };
    },
  };
}

// Spawned, not run synchronously: the page's polls run in this process while wrk does.
async function wrk(url: string, script: string): Promise<{ requests: number; non2xx: number }> {
  const child = spawn('wrk', ['-t1', `-c${connections}`, `-d${duration}s`, '-s', script, url], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`wrk failed: ${err}`);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  return { requests, non2xx };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

if (spawnSync('wrk', ['--version']).error !== undefined) {
  process.stderr.write('inspector-cost: wrk is not on PATH (apt-get install -y wrk)\n');
  process.exit(1);
}
const dir = mkdtempSync(join(tmpdir(), 'hooks-ingress-inspector-bench-'));
const token = randomBytes(32).toString('base64url');
const script = join(dir, 'wake.lua');
writeFileSync(
  script,
  `wrk.method = "POST"\nwrk.body = '${WAKE_BODY}'\nwrk.headers["Content-Type"] = "application/json"\nwrk.headers["Authorization"] = "Bearer ${token}"\n`,
);
// Per build, a server without a page and one with; every server gets one wrk run a round, in an
// order that turns each round so that none is always first after the bench's own pauses.
const pairs: { label: string; plain: Server; watched: Server }[] = [];
const pages: { stop(): Promise<{ polls: number; failed: number }> }[] = [];
const cpu = new Map<Server, number[]>();
// The same per request, split: the main thread, and the others (V8's GC helpers, libuv's pool).
const threads = new Map<Server, { main: number; others: number }[]>();
// Each server's resident set once the rounds are over.
const rss = new Map<Server, number | null>();
try {
  for (const [i, build] of builds.entries()) {
    const label = i === 0 ? 'this' : basename(build);
    const plain = await start(`${label}-without`, build, dir, token);
    const watched = await start(`${label}-with`, build, dir, token);
    pairs.push({ label, plain, watched });
    pages.push(await subscribe(watched));
    cpu.set(plain, []).set(watched, []);
    threads.set(plain, []).set(watched, []);
  }
  const width = Math.max(...[...cpu.keys()].map((s) => s.name.length)) + 1;
  for (let round = 1; round <= rounds; round++) {
    // Each build's pair back to back, so that a round's ratio compares runs close in time; which
    // build and which of the pair goes first alternates.
    const builds = round % 2 === 1 ? pairs : [...pairs].reverse();
    const order = builds.flatMap((pair, i) =>
      (round + i) % 2 === 1 ? [pair.plain, pair.watched] : [pair.watched, pair.plain]
    );
    for (const server of order) {
      const before = cpuSeconds(server.pid)!;
      const threadsBefore = threadSeconds(server.pid)!;
      const run = await wrk(`${server.url}/hooks/wake`, script);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const us = ((cpuSeconds(server.pid)! - before) * 1e6) / run.requests;
      const threadsAfter = threadSeconds(server.pid)!;
      threads.get(server)!.push({
        main: ((threadsAfter.main - threadsBefore.main) * 1e6) / run.requests,
        others: ((threadsAfter.others - threadsBefore.others) * 1e6) / run.requests,
      });
      if (run.non2xx > 0) throw new Error(`${server.name}: ${run.non2xx} non-2xx answers`);
      cpu.get(server)!.push(us);
      process.stdout.write(
        `round ${round} ${server.name.padEnd(width)} ${run.requests} requests  ${us.toFixed(1)} CPU µs/req\n`,
      );
    }
  }
} finally {
  for (const [i, page] of pages.entries()) {
    const { polls, failed } = await page.stop();
    process.stdout.write(
      `${pairs[i]!.label}: the page polled ${polls} times (${failed} failed and were tried again)\n`,
    );
  }
  for (const server of cpu.keys()) rss.set(server, rssKiB(server.pid, 'VmRSS'));
  for (const server of cpu.keys()) await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(
  `\nwake CPU µs/req, median of ${rounds} (range); the ratio of medians, and the median of each round's ratio:\n`,
);
const range = (xs: number[], digits: number) => `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;
for (const { label, plain, watched } of pairs) {
  const without = cpu.get(plain)!;
  const withPage = cpu.get(watched)!;
  const perRound = withPage.map((us, i) => us / without[i]!);
  process.stdout.write(
    `${label}: without a page ${median(without).toFixed(1)} (${range(without, 1)}), with a page ${
      median(withPage).toFixed(1)
    } (${range(withPage, 1)}), ${(median(withPage) / median(without)).toFixed(3)}×; by round ${
      median(perRound).toFixed(3)
    }× (${range(perRound, 2)})\n`,
  );
}
process.stdout.write(`\nCPU µs/req by thread, median of ${rounds}, and the resident set at the end:\n`);
for (const [server, split] of threads) {
  process.stdout.write(
    `${server.name}: main thread ${median(split.map((s) => s.main)).toFixed(1)}, other threads ${
      median(split.map((s) => s.others)).toFixed(1)
    }, ${Math.round((rss.get(server) ?? 0) / 1024)} MiB\n`,
  );
}
if (profiles !== null) {
  process.stdout.write(`\nshare of each server's busy CPU (from its profile): answering the page, and GC\n`);
  for (const server of cpu.keys()) {
    const file = profileOf(profiles, server.pid);
    if (file === null) continue;
    const { busyMs, under, gc } = profileShares(file, PAGE_FRAMES);
    process.stdout.write(
      `${server.name}: busy ${(busyMs / 1000).toFixed(1)} s, page ${(under * 100).toFixed(2)} %, GC ${
        (gc * 100).toFixed(2)
      } %\n`,
    );
  }
}
