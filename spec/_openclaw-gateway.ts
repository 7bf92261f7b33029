// Test helper: one released OpenClaw gateway per case, on loopback, with a fresh HOME and a config
// that keeps it off every network but this machine's loopback: no Tailscale, mDNS, update check,
// remote model catalog or channels, and its one model the local stand-in (spec/_standin-model.ts).
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { send } from './_http.ts';
import { installGateway } from './_openclaw-install.ts';
import { type StandinModel, startStandinModel } from './_standin-model.ts';
import { until } from './_until.ts';

type Raw = Record<string, unknown>;

/** What a case asks of its gateway: the stand-in model's base URL and config merged over the harness's. */
export interface GatewayOptions {
  /** The stand-in model's OpenAI base URL (`http://127.0.0.1:N/v1`). */
  modelUrl: string;
  /** Sections merged (one level deep) into the config: `hooks`, `agents`, `gateway`, ... */
  config?: Raw;
}

/** A gateway prepared for a case: its port is chosen and its folder written; `start()` runs it. */
export interface Gateway {
  /** `http://127.0.0.1:P`. */
  origin: string;
  /** `http://127.0.0.1:P/hooks`, what hooks-ingress forwards to. */
  hooksUrl: string;
  /** The gateway's hook token (`hooks.token`). */
  hookToken: string;
  port: number;
  /** The case folder: HOME, the config, the gateway's log file and its output. */
  dir: string;
  /** Starts the gateway and resolves once `GET /readyz` answers 200 (never a wake: wakes count against its queue). */
  start(): Promise<void>;
  /** SIGKILLs it (after a short grace for SIGTERM) with every process it started. */
  stop(): Promise<void>;
  /** Its resident memory now, in MiB (0 when it is not running). */
  rssMiB(): number;
  /** The end of its output, for failure messages. */
  output(): string;
}

/** A stand-in model for `t` and a gateway (not started) that calls it, with `config` merged in. */
export async function gatewayCase(
  t: TestContext,
  config: Raw = {},
): Promise<{ model: StandinModel; gateway: Gateway }> {
  const model = await startStandinModel(t);
  const gateway = await prepareGateway(t, { modelUrl: model.baseUrl, config });
  return { model, gateway };
}

/** The hook token every gateway of the specs uses. */
export const GATEWAY_HOOK_TOKEN = 'spec-openclaw-gateway-hook-token-0123456789';
const AUTH_TOKEN = 'spec-openclaw-gateway-auth-token-0123456789';
const GRACE_MS = 1_000;

/** Prepares a gateway for `t`: stopped when `t` ends. */
export async function prepareGateway(t: TestContext, options: GatewayOptions): Promise<Gateway> {
  const install = await installGateway();
  const dir = await tempDir(t, 'openclaw-gateway-');
  const port = await gatewayPort();
  const home = join(dir, 'home');
  await mkdir(join(home, '.openclaw'), { recursive: true });
  await writeFile(join(home, '.openclaw', 'openclaw.json'), JSON.stringify(_config(port, dir, options), null, 2), {
    mode: 0o600,
  });

  const env: Record<string, string> = {
    PATH: `${join(install.node, '..')}:/usr/bin:/bin`,
    HOME: home,
    OPENCLAW_HOME: home,
    TMPDIR: dir,
    TZ: 'UTC',
    LANG: 'C.UTF-8',
    OPENCLAW_DISABLE_BONJOUR: '1',
    OPENCLAW_NO_RESPAWN: '1',
    OPENCLAW_SKIP_CHANNELS: '1',
    OPENCLAW_NO_AUTO_UPDATE: '1',
    OPENCLAW_EXEC_SHELL_SNAPSHOT: '0',
  };
  const outFile = join(dir, 'gateway.out');
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const output = () => {
    try {
      return readFileSync(outFile, 'utf8').split('\n').slice(-40).join('\n');
    } catch {
      return '';
    }
  };
  const running = () => child !== undefined && child.exitCode === null && child.signalCode === null;
  const stop = async () => {
    if (child === undefined || !running()) return;
    const pid = child.pid!;
    _signal(pid, 'SIGTERM');
    // Its drain budget is 315 s; nothing of a case's outcome depends on a clean drain.
    const timer = setTimeout(() => _signal(pid, 'SIGKILL'), GRACE_MS);
    await exited;
    clearTimeout(timer);
    _signal(pid, 'SIGKILL'); // what it started (its spawn broker, its sqlite workers) goes too
    _live.delete(pid);
  };
  const origin = `http://127.0.0.1:${port}`;
  const gateway: Gateway = {
    origin,
    hooksUrl: `${origin}/hooks`,
    hookToken: GATEWAY_HOOK_TOKEN,
    port,
    dir,
    output,
    stop,
    rssMiB: () => (running() ? _rssMiB(child!.pid!) : 0),
    start: async () => {
      if (running()) throw new Error('the gateway is already running');
      const started = Date.now();
      const out = openSync(outFile, 'a');
      // Its own process group, so stop() ends everything it started and nothing else.
      child = spawn(install.node, [install.entry, 'gateway', '--port', String(port)], {
        cwd: dir,
        env,
        detached: true,
        stdio: ['ignore', out, out],
      });
      closeSync(out);
      _live.add(child.pid!);
      const current = child;
      exited = new Promise((resolve) => current.once('close', () => resolve()));
      await until(
        `the OpenClaw gateway on port ${port} to be ready (GET /readyz)`,
        async () => {
          if (!running()) {
            throw new Error(
              `the OpenClaw gateway exited (${
                current.exitCode ?? current.signalCode
              }) before it was ready:\n${output()}`,
            );
          }
          const ready = await send(origin, '/readyz').then((reply) => reply.status === 200, () => false);
          if (!ready) await new Promise((resolve) => setTimeout(resolve, 250));
          return ready;
        },
        // 7-15 s on an idle machine; a loaded one is far slower (108 s was seen at a load average of 31 on 2 cores).
        { timeoutMs: 240_000, detail: output },
      );
      t.diagnostic(
        `gateway on port ${port} ready in ${((Date.now() - started) / 1000).toFixed(1)} s, ${
          _cpuSeconds(current.pid!).toFixed(1)
        } s of CPU (load ${loadavg()[0]!.toFixed(1)})`,
      );
    },
  };
  defer(t, stop);
  return gateway;
}

function _config(port: number, dir: string, options: GatewayOptions): Raw {
  const extra = options.config ?? {};
  const base: Raw = {
    gateway: {
      mode: 'local',
      port,
      bind: 'custom',
      customBindHost: '127.0.0.1',
      auth: { mode: 'token', token: AUTH_TOKEN },
      tailscale: { mode: 'off' },
    },
    update: { checkOnStart: false },
    discovery: { mdns: { mode: 'off' } },
    logging: { file: join(dir, 'gateway.log') },
    hooks: { enabled: true, token: GATEWAY_HOOK_TOKEN, path: '/hooks' },
    agents: { defaults: { model: { primary: 'standin/echo' } } },
    models: {
      mode: 'replace',
      // The remote model catalog would be fetched from off this machine.
      catalogRefresh: { enabled: false },
      providers: {
        standin: {
          baseUrl: options.modelUrl,
          apiKey: 'spec-standin-model-key',
          api: 'openai-completions',
          models: [{
            id: 'echo',
            name: 'Stand-in',
            reasoning: false,
            input: ['text'],
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
            contextWindow: 128_000,
            maxTokens: 4_096,
          }],
        },
      },
    },
  };
  for (const [key, value] of Object.entries(extra)) {
    const current = base[key];
    base[key] = typeof current === 'object' && current !== null && typeof value === 'object' && value !== null &&
        !Array.isArray(value)
      ? { ...current, ...(value as Raw) }
      : value;
  }
  return base;
}

/**
 * A port P for a gateway: it binds P on 127.0.0.1 and [::1] and uses P+1 and P+2, so all three
 * must be free on both. Chosen below the kernel's ephemeral range, where outgoing connections
 * take their ports.
 */
export async function gatewayPort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    let free = true;
    for (const offset of [0, 1, 2]) {
      for (const host of ['127.0.0.1', '::1']) if (free) free = await _free(port + offset, host);
    }
    if (free) return port;
  }
  throw new Error('No port P with P, P+1 and P+2 free on 127.0.0.1 and [::1] in 200 tries');
}

function _free(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once(
      'error',
      (error: NodeJS.ErrnoException) => resolve(error.code === 'EADDRNOTAVAIL' || error.code === 'EAFNOSUPPORT'),
    );
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

function _rssMiB(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? 0 : Math.round(Number(match[1]) / 1024);
  } catch {
    return 0;
  }
}

// The CPU time a process has used (user and system), from /proc; 0 when it cannot be read.
function _cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

function _signal(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

// Gateways still running when the test process exits (a failed hook, a cancelled run) go with it.
const _live = new Set<number>();
process.once('exit', () => {
  for (const pid of _live) _signal(pid, 'SIGKILL');
});
