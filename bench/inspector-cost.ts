// What an open inspector page costs the hooks listener: two hooks-ingress servers with the
// inspector on, one with a page subscribed (polling the list as the page does, every 1.5 s) and
// one without, each under the same wrk load of accepted wakes, in interleaved rounds. Reports the
// server's CPU time per request (user + system from /proc, ÷ requests) for both, and the ratio.
//
//   npm run build && node --import tsx bench/inspector-cost.ts [--rounds N] [--duration S]
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuSeconds } from './_proc.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin', 'hooks-ingress');
const WAKE_BODY = '{"text":"bench","mode":"next-heartbeat"}';
const POLL_MS = 1500;

const { values } = parseArgs({
  options: { rounds: { type: 'string' }, duration: { type: 'string' }, connections: { type: 'string' } },
});
const rounds = Number(values.rounds ?? 5);
const duration = Number(values.duration ?? 5);
const connections = Number(values.connections ?? 32);

interface Server {
  name: string;
  url: string;
  pid: number;
  state: string;
  stop(): Promise<void>;
}

async function start(name: string, dir: string, token: string): Promise<Server> {
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
  const child = spawn(process.execPath, [BIN, 'serve', '-c', config, '--port', '0', '--state-dir', state], {
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
    stop: async () => {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

// Logs in as the page would and polls the list until stopped; answers how many polls it made.
async function subscribe(server: Server): Promise<{ stop(): Promise<{ polls: number; failed: number }> }> {
  const inspect = spawnSync(process.execPath, [BIN, 'inspect', '--state-dir', server.state], { encoding: 'utf8' });
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
  const loop = (async () => {
    while (running) {
      // As the page does: a poll that fails (a kept-alive connection closed under load) is tried
      // again at the next tick; a refusal is a broken bench.
      try {
        const res = await fetch(`${base}/inspector/api/requests?limit=200`, {
          headers: { cookie, 'x-inspector-key': key },
        });
        if (res.status !== 200) throw new RangeError(`the page's poll answered ${res.status}`);
        await res.arrayBuffer();
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
const plain = await start('without-page', dir, token);
const watched = await start('with-page', dir, token);
const page = await subscribe(watched);
const cpu: Record<string, number[]> = { [plain.name]: [], [watched.name]: [] };
try {
  for (let round = 1; round <= rounds; round++) {
    for (const server of round % 2 === 1 ? [plain, watched] : [watched, plain]) {
      const before = cpuSeconds(server.pid)!;
      const run = await wrk(`${server.url}/hooks/wake`, script);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const us = ((cpuSeconds(server.pid)! - before) * 1e6) / run.requests;
      if (run.non2xx > 0) throw new Error(`${server.name}: ${run.non2xx} non-2xx answers`);
      cpu[server.name]!.push(us);
      process.stdout.write(
        `round ${round} ${server.name.padEnd(12)} ${run.requests} requests  ${us.toFixed(1)} CPU µs/req\n`,
      );
    }
  }
} finally {
  const { polls, failed } = await page.stop();
  await plain.stop();
  await watched.stop();
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`the page polled ${polls} times (${failed} polls failed and were tried again)\n`);
}
const without = median(cpu[plain.name]!);
const withPage = median(cpu[watched.name]!);
process.stdout.write(
  `\nwake CPU µs/req, median of ${rounds}: without a page ${without.toFixed(1)}, with a page ${withPage.toFixed(1)} (${
    (withPage / without).toFixed(3)
  }×)\n`,
);
