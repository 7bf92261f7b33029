// Starting the servers the bench measures and asking them one request: a node process that says
// where it listens, adnanh/webhook with one token rule, and a model API that never answers.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { type IncomingHttpHeaders, request } from 'node:http';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { track } from './_children.ts';
import type { LogTap } from './_log-tap.ts';
import { freePort } from './_port.ts';

/** Spawns a node process in `cwd` and waits for its `listening on URL` line; its stderr goes to `tap`. */
export function startNode(
  name: string,
  args: string[],
  tap: LogTap | null,
  cwd: string,
): Promise<{ url: string; pid: number }> {
  const child = track(spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] }));
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
export async function startWebhook(binary: string, dir: string, token: string): Promise<{ url: string; pid: number }> {
  const hooks = [
    {
      id: 'wake',
      'execute-command': '/bin/true',
      'response-message': 'ok',
      'trigger-rule-mismatch-http-response-code': 401,
      'trigger-rule': {
        match: { type: 'value', value: `Bearer ${token}`, parameter: { source: 'header', name: 'Authorization' } },
      },
    },
  ];
  const file = join(dir, 'webhook-hooks.json');
  writeFileSync(file, JSON.stringify(hooks), { mode: 0o600 });
  const port = await freePort();
  const child = track(spawn(binary, ['-hooks', file, '-ip', '127.0.0.1', '-port', String(port)], { stdio: 'ignore' }));
  const url = `http://127.0.0.1:${port}`;
  for (let tries = 0; tries < 100; tries++) {
    if (child.exitCode !== null) break;
    const up = await probe(`${url}/hooks/wake`, {}, '', 'GET').then(
      () => true,
      () => false,
    );
    if (up) return { url, pid: child.pid! };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`webhook did not start on ${url}`);
}

/** A model API that accepts connections and never answers: /agent runs stay queued, never executed. */
export async function silentModel(): Promise<{ url: string; close: () => void }> {
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

/** One request on a connection of its own; rejects on a network error or after 5 s. */
export function probe(url: string, headers: Record<string, string>, body: string, method = 'POST'): Promise<Probe> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method,
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      agent: false,
      timeout: 5_000,
    }, (res) => {
      res.resume();
      res.once('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.once('timeout', () => req.destroy(new Error('probe timed out')));
    req.once('error', reject);
    req.end(body);
  });
}
