// `node --import tsx bench/log-loss.ts [--compare DIR]... [--kills N]`: what the request log loses
// when the server is killed with SIGKILL under load (the one death no JavaScript runs after).
// Each kill: 32 keep-alive clients send 401s (no disk involved) for a random 0.5-1.5 s, then the
// server gets SIGKILL; a response the clients received whose log line never reached stderr is lost.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { compare: { type: 'string', multiple: true }, kills: { type: 'string' } } });
const kills = Number(values.kills ?? 10);
const builds = [...(values.compare ?? []).map((d) => resolve(d)), ROOT];

interface Outcome {
  answered: number;
  logged: number;
}

async function killOnce(dir: string, tmp: string): Promise<Outcome> {
  const state = mkdtempSync(join(tmp, 'state-'));
  const child = spawn(process.execPath, [
    join(dir, 'bin', 'hooks-ingress'),
    'serve',
    '--config',
    join(tmp, 'config.json'),
    '--state-dir',
    state,
    '--host',
    '127.0.0.1',
    '--port',
    '0',
  ], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const m = /listening on (\S+)\n/.exec(out);
      if (m !== null) ok(m[1]!);
    });
    child.once('exit', () => fail(new Error(`server exited: ${stderr}`)));
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  let answered = 0;
  let running = true;
  const client = async () => {
    while (running) {
      const ok = await new Promise<boolean>((done) => {
        const req = request(`${url}/hooks/wake`, {
          method: 'POST',
          agent,
          headers: { authorization: 'Bearer wrong', 'content-type': 'application/json' },
        }, (res) => {
          res.resume();
          res.once('end', () => done(res.statusCode === 401));
          res.once('error', () => done(false));
        });
        req.once('error', () => done(false));
        req.end('{"text":"x"}');
      });
      if (ok) answered++;
      else return;
    }
  };
  const clients = Array.from({ length: 32 }, client);
  await new Promise((r) => setTimeout(r, 500 + Math.random() * 1000));
  const exited = new Promise((r) => child.once('close', r));
  child.kill('SIGKILL');
  running = false;
  await Promise.all(clients);
  await exited;
  agent.destroy();
  rmSync(state, { recursive: true, force: true });
  return { answered, logged: stderr.split('\n').filter((l) => l.includes('"msg":"request"')).length };
}

const tmp = mkdtempSync(join(tmpdir(), 'hooks-ingress-log-loss-'));
try {
  writeFileSync(
    join(tmp, 'config.json'),
    JSON.stringify({
      hooks: {
        enabled: true,
        token: randomBytes(32).toString('base64url'),
        authRateLimit: { maxFailures: 1_000_000_000 },
      },
    }),
    { mode: 0o600 },
  );
  for (const dir of builds) {
    const lost: number[] = [];
    let answered = 0;
    for (let i = 0; i < kills; i++) {
      const o = await killOnce(dir, tmp);
      lost.push(Math.max(0, o.answered - o.logged));
      answered += o.answered;
    }
    const name = dir === ROOT ? 'this checkout' : basename(dir);
    console.log(
      `${name}: ${kills} SIGKILLs under load (${answered} answered 401s): lines lost per kill ${lost.join(', ')}; max ${
        Math.max(...lost)
      }`,
    );
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
