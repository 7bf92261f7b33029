// One transform child process: its command line (Node's or Deno's permission flags), its start with
// no inherited descriptor, its resident memory, its console read at a bounded pace, and whether its
// handles hold the event loop open.

import { type ChildProcessWithoutNullStreams, spawn, type StdioOptions } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import process from 'node:process';
import { setTimeout } from 'node:timers';
import { CHILD_SOURCE } from './child-source.ts';

/** What a transform child may use: the one folder it reads, and its memory. */
export interface ChildLimits {
  /** The real path of the transforms root: the only place the child may read. */
  root: string;
  /** V8 heap cap of the child, in MiB. */
  heapMb: number;
  /** The runtime the child runs on: the server's own, or Deno for a Node server that asks for it. */
  runtime: Runtime;
}

/** The program and arguments that start a transform child on the runtime we run on. */
export interface ChildCommand {
  file: string;
  args: string[];
}

/**
 * The command line of a transform child. The parent starts the runtime it was given (its own,
 * unless a Node server is set to run transforms on Deno), with its permission system on:
 * - Deno: `deno run --no-prompt --allow-read=<root>` and nothing else (no net, env, run, write,
 *   sys, ffi), no config file, lock file, npm or remote modules (module loading would reach the
 *   network without --allow-net), the runner as a `data:` URL.
 * - Node: the permission model (`--permission`, `--experimental-permission` on Node 20) with reads
 *   of the root only, no native addons; the runner as `-e` source. Its ExperimentalWarning is
 *   turned off, so that every start does not write one to the server's log.
 */
export function childCommand(limits: ChildLimits): ChildCommand {
  const { runtime } = limits;
  if (runtime.kind === 'deno') {
    const runner = `data:text/javascript;base64,${Buffer.from(CHILD_SOURCE).toString('base64')}`;
    const args = [
      'run',
      '--no-prompt',
      '--no-config',
      '--no-lock',
      '--no-npm',
      '--no-remote',
      `--allow-read=${limits.root}`,
    ];
    return { file: runtime.execPath, args: [...args, `--v8-flags=--max-old-space-size=${limits.heapMb}`, runner] };
  }
  const flags = runtime.nodeFlags;
  const permission = flags.has('--permission') ? '--permission' : '--experimental-permission';
  const quiet = flags.has('--disable-warning') ? '--disable-warning=ExperimentalWarning' : '--no-warnings';
  const args = [
    permission,
    `--allow-fs-read=${limits.root}`,
    '--no-addons',
    quiet,
    `--max-old-space-size=${limits.heapMb}`,
  ];
  return { file: runtime.execPath, args: [...args, '--input-type=module', '-e', CHILD_SOURCE] };
}

/**
 * Why a child cannot be given exactly `root` to read, or `null`. Some Node versions read a comma in
 * `--allow-fs-read` as a separator between paths (Node 20.20 takes it literally), so `/srv/a,/etc`
 * could open `/etc` too: a root with a comma is refused on Node rather than trusted to the version.
 */
export function rootProblem(root: string, runtime: Runtime = currentRuntime()): string | null {
  if (runtime.kind === 'node' && root.includes(',')) {
    return `the transforms directory ${
      JSON.stringify(root)
    } may not contain a comma: some Node versions read a comma in --allow-fs-read as a separator between paths`;
  }
  return null;
}

/** Which runtime we are, as far as starting a child goes. */
export type Runtime = { kind: 'deno'; execPath: string } | {
  kind: 'node';
  execPath: string;
  nodeFlags: ReadonlySet<string>;
};

/** The runtime this process runs on. */
export function currentRuntime(): Runtime {
  const deno = (globalThis as { Deno?: { execPath(): string } }).Deno;
  if (deno !== undefined) return { kind: 'deno', execPath: deno.execPath() };
  return { kind: 'node', execPath: process.execPath, nodeFlags: process.allowedNodeEnvironmentFlags };
}

/**
 * Starts a transform child: an empty environment (the server's tokens and keys stay out), the
 * root as its working directory, stdin and stdout for the protocol, stderr for its console, and
 * no other open file: see inheritableFds().
 */
export function startChild(limits: ChildLimits): ChildProcessWithoutNullStreams {
  const { file, args } = childCommand(limits);
  // On Deno, node:fs hands out resource ids, not descriptors a child's stdio can name; and there the
  // children are Deno's, whose APIs reach no descriptor they did not open.
  const leaked = 'Deno' in globalThis ? [] : (_leaked ??= inheritableFds());
  if (leaked.length === 0) {
    return spawn(file, args, { env: {}, cwd: limits.root, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
  }
  // A child inherits every descriptor not marked close-on-exec, and spawn() closes none of them; the
  // permission model does not cover reading or accepting on a descriptor one already holds. What
  // the child finds at those numbers instead is /dev/null.
  const blank = openSync('/dev/null', 'r');
  try {
    const stdio: StdioOptions = ['pipe', 'pipe', 'pipe'];
    for (const fd of leaked) stdio[fd] = blank;
    for (let fd = 3; fd < stdio.length; fd++) stdio[fd] ??= 'ignore';
    return spawn(file, args, { env: {}, cwd: limits.root, stdio, windowsHide: true }) as ChildProcessWithoutNullStreams;
  } finally {
    closeSync(blank);
  }
}

const _CLOEXEC = 0o2000000;
// Looked for once: what the process inherited is there from its start, and whatever Node opens
// later is close-on-exec (a number reused since gets /dev/null in the child, which harms nothing).
let _leaked: number[] | undefined;

/**
 * The descriptors past stdio this process holds without close-on-exec, which a child would
 * inherit; empty where /proc cannot tell (not Linux). Node marks those it opens, and at start the
 * inherited ones from 3 to 15 (and on while they run on unbroken); one a launcher left open past a
 * gap (a shell's `exec 40<secret`, a supervisor's log pipe) stays open in every child.
 */
export function inheritableFds(): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc/self/fd');
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const name of names) {
    const fd = Number(name);
    if (!(fd > 2)) continue;
    try {
      const flags = /^flags:\s+([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'latin1'))?.[1];
      if (flags !== undefined && (Number.parseInt(flags, 8) & _CLOEXEC) === 0) found.push(fd);
    } catch {
      // Gone since the listing (the listing's own descriptor among them).
    }
  }
  return found;
}

/**
 * The resident memory of a process in bytes, read from /proc (Linux); `null` where there is no
 * /proc or the process is gone. A heap cap does not bound Buffers and ArrayBuffers: this does.
 * Read synchronously: /proc is made by the kernel on the spot and never waits on a disk, and a
 * read through the thread pool cost the busy server several times as much, 40 times a second.
 */
export function residentBytes(pid: number): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'latin1');
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return match === null ? null : Number(match[1]) * 1024;
  } catch {
    return null;
  }
}

/** Console output (stderr) read from one child per second; past it the pipe is not read until the second is over. */
export const OUTPUT_BYTES_PER_SECOND = 64 * 1024;

/**
 * A stderr listener that hands each chunk to `take` and reads at most OUTPUT_BYTES_PER_SECOND: a
 * child writing without pause waits on its own writes (and runs into its time limit) instead of
 * filling the log and this process's memory.
 */
export function pacedReader(
  stream: { pause(): unknown; resume(): unknown },
  take: (chunk: string) => void,
): (chunk: string) => void {
  let windowStart = Date.now();
  let spent = 0;
  let paused = false;
  return (chunk) => {
    take(chunk);
    const now = Date.now();
    if (now - windowStart >= 1000) {
      windowStart = now;
      spent = 0;
    }
    spent += chunk.length;
    if (spent < OUTPUT_BYTES_PER_SECOND || paused) return;
    paused = true;
    stream.pause();
    const timer = setTimeout(() => {
      paused = false;
      windowStart = Date.now();
      spent = 0;
      stream.resume();
    }, windowStart + 1000 - now);
    timer.unref?.();
  };
}

/** Lets a child's process and pipes hold the event loop open, or not. Each is a call into libuv for four handles: callers make it when that changes. */
export function holdChild(child: ChildProcessWithoutNullStreams, on: boolean): void {
  for (const target of [child, child.stdin, child.stdout, child.stderr] as { ref?: () => void; unref?: () => void }[]) {
    if (on) target.ref?.();
    else target.unref?.();
  }
}
