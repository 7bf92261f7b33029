// What the bench reads from the OS: a process tree's CPU time, what an fdatasync costs, the filesystem.
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  fdatasyncSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';

let _ticksPerSecond: number | null = null;

function _clockTicks(): number {
  if (_ticksPerSecond === null) {
    const out = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    const n = Number(out.stdout?.trim());
    _ticksPerSecond = Number.isInteger(n) && n > 0 ? n : 100;
  }
  return _ticksPerSecond;
}

// utime + stime (fields 14 and 15 of /proc/<pid>/stat; the name in field 2 may hold spaces).
function _ticks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

function _children(pid: number): number[] {
  const found: number[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(join('/proc', String(pid), 'task', tid, 'children'), 'utf8').trim();
      if (text !== '') { for (const child of text.split(' ')) found.push(Number(child)); }
    }
  } catch {
    // Gone, or no /proc: nothing to add.
  }
  return found;
}

/**
 * CPU seconds (user + system) used so far by a process, its threads, and its live descendants
 * (a sandboxed transform runs in a child process). `null` without /proc.
 */
export function cpuSeconds(pid: number): number | null {
  if (process.platform !== 'linux') return null;
  let ticks = 0;
  const todo = [pid];
  for (let next = todo.pop(); next !== undefined; next = todo.pop()) {
    ticks += _ticks(next);
    todo.push(..._children(next));
  }
  return ticks / _clockTicks();
}

/**
 * CPU seconds (user + system) so far of a process's main thread and of its other threads (V8's
 * helpers, which mark and sweep the heap concurrently, and libuv's pool, which reads files),
 * without its children. `null` without /proc.
 */
export function threadSeconds(pid: number): { main: number; others: number } | null {
  if (process.platform !== 'linux') return null;
  let main = 0;
  let others = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const stat = readFileSync(join('/proc', String(pid), 'task', tid, 'stat'), 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ticks = Number(fields[11]) + Number(fields[12]);
      if (tid === String(pid)) main += ticks;
      else others += ticks;
    }
  } catch {
    // Gone: what was read so far.
  }
  return { main: main / _clockTicks(), others: others / _clockTicks() };
}

/** The resident set of a process in KiB (`VmRSS`), or its peak (`VmHWM`). */
export function rssKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number | null {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? null : Number(match[1]);
  } catch {
    return null;
  }
}

/** What one fdatasync costs on the state directory's filesystem: the floor of every durable answer. */
export function fsyncProbe(dir: string): { samples: number; p50Ms: number; p99Ms: number } {
  const file = join(dir, 'fsync-probe');
  const fd = openSync(file, 'w', 0o600);
  const line = Buffer.from(`${'x'.repeat(99)}\n`);
  const times: number[] = [];
  const deadline = performance.now() + 1_500;
  try {
    for (let i = 0; i < 200 && performance.now() < deadline; i++) {
      writeSync(fd, line);
      const t = performance.now();
      fdatasyncSync(fd);
      times.push(performance.now() - t);
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? Number.NaN;
  return { samples: times.length, p50Ms: at(0.5), p99Ms: at(0.99) };
}

/** The filesystem a path lives on, from /proc/mounts (longest mount point that contains it). */
export function filesystem(path: string): string {
  try {
    const real = realpathSync(path);
    let best = { point: '', text: 'unknown' };
    for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
      const [device, point, type] = line.split(' ');
      if (device === undefined || point === undefined || type === undefined) continue;
      const inside = real === point || real.startsWith(point.endsWith('/') ? point : `${point}/`);
      if (inside && point.length >= best.point.length) best = { point, text: `${type} (${device} on ${point})` };
    }
    return best.text;
  } catch {
    return 'unknown';
  }
}
