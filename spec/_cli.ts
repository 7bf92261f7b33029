// Test helpers: run the CLI as a real process (the built bin under Node, lib/cli/main.ts under Deno).
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, constants } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const IS_DENO = 'Deno' in globalThis;

/** The command line that runs `hooks-ingress ARGS` in this runtime. */
export function cliCommand(args: readonly string[]): [string, string[]] {
  return IS_DENO
    ? [process.execPath, ['run', '-A', 'lib/cli/main.ts', ...args]]
    : [process.execPath, ['bin/hooks-ingress', ...args]];
}

/** A config file for the CLI: `config.json` in a fresh directory, with the state directory beside it. */
export interface ConfigFile {
  dir: string;
  config: string;
  state: string;
  /** Writes the file again: a string as it is, anything else as JSON. */
  write(raw: unknown): Promise<void>;
}

/** Writes `raw` as `config.json` (0600, as an operator keeps a file with a secret) in a fresh directory that goes when `t` ends. */
export async function configFile(t: TestContext, raw: unknown, prefix = 'cli-spec-'): Promise<ConfigFile> {
  const dir = await tempDir(t, prefix);
  const config = join(dir, 'config.json');
  const write = (value: unknown) =>
    writeFile(config, typeof value === 'string' ? value : JSON.stringify(value, null, 2), { mode: 0o600 });
  await write(raw);
  return { dir, config, state: join(dir, 'state'), write };
}

/** Runs the CLI to completion. */
export async function runCli(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [cmd, argv] = cliCommand(args);
  const child = spawn(cmd, argv, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

/** A spawned server that has printed its `listening on URL` line. */
export interface Spawned {
  child: ChildProcess;
  url: string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Starts `hooks-ingress serve ARGS` and waits until it listens. */
export async function spawnServer(args: readonly string[], env: Record<string, string> = {}): Promise<Spawned> {
  const [cmd, argv] = cliCommand(['serve', ...args]);
  return listening(spawn(cmd, argv, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** Starts `serve` for a config file and a state directory on a free port; SIGTERMs it after the test unless it stopped. */
export async function serveState(t: TestContext, s: { config: string; state: string }): Promise<Spawned> {
  const server = await spawnServer(['--config', s.config, '--port', '0', '--state-dir', s.state]);
  stopAfter(t, server);
  return server;
}

// How long a stopped child may take to exit before it is killed: generous, it only keeps a child
// that ignores its signal from holding the test file open for ever.
const _STOP_GRACE_MS = 30_000;

/**
 * Stops `server` (a spawned process and its exit) after test `t` unless it already stopped: sends
 * `signal`, waits for the exit, and SIGKILLs a child still there after a grace period. It goes
 * through `defer`, so the child is gone before the directories registered before it are removed.
 */
export function stopAfter(
  t: TestContext,
  server: { child: ChildProcess; exited: Promise<unknown> },
  signal: NodeJS.Signals = 'SIGTERM',
): void {
  defer(t, () => stopChild(server, signal));
}

/** Sends `signal` to a child that is still running and waits for it to exit (SIGKILL after a grace period). */
export async function stopChild(
  server: { child: ChildProcess; exited: Promise<unknown> },
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  const { child } = server;
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const overdue = new Promise<void>((resolve) => (timer = setTimeout(resolve, _STOP_GRACE_MS)));
  try {
    if ((await Promise.race([server.exited.then(() => 'exited'), overdue])) === 'exited') return;
  } finally {
    clearTimeout(timer);
  }
  child.kill('SIGKILL');
  await server.exited;
}

/** Waits until a spawned server prints its `listening on URL` line; rejects when it exits first. */
export async function listening(child: ChildProcess): Promise<Spawned> {
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d;
      const match = /listening on (\S+)\n/.exec(out);
      if (match) resolve(match[1]!);
    });
    void exited.then((code) => reject(new Error(`server exited with ${code} before listening: ${stderr}`)));
  });
  return { child, url, stderr: () => stderr, exited };
}

/** Whether an executable named `tool` is on PATH (tests that need one say why they cannot run without it). */
export function onPath(tool: string): boolean {
  return (process.env['PATH'] ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, tool), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * Waits for a server sent SIGTERM and asserts it stopped cleanly: exit code 0 and its "stopped"
 * log line. Deno's child_process reports the signal it sent instead of the exit status of a
 * child that handled it, so there the log line is the evidence.
 */
export async function assertCleanStop(server: Spawned): Promise<void> {
  const code = await server.exited;
  if (!IS_DENO && code !== 0) throw new Error(`server exited with ${code}: ${server.stderr()}`);
  if (!server.stderr().includes('"msg":"stopped"')) {
    throw new Error(`server did not log a clean stop: ${server.stderr()}`);
  }
}
