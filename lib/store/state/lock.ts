// Taking the state directory for one process: the pid file made atomically, a stale one (its process gone)
// taken over.

import { link, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PID_FILE } from './pid-file.ts';

/** A state directory held by this process; `release` gives it up (only if the lock file is still ours). */
export interface StateLock {
  file: string;
  release(): Promise<void>;
}

// Lock files this process holds.
const _held = new Set<string>();

/** What {@link lockStateDir} found: the lock, or the live process that holds the directory. */
export type LockOutcome = { ok: true; lock: StateLock } | { ok: false; pid: number };

/** How to tell a live holder from a stale lock; tests inject a fake. */
export interface LockProbe {
  /** Whether a process with this pid exists and could be the one that wrote the lock at `writtenMs`. */
  holds(pid: number, writtenMs: number): Promise<boolean>;
}

/**
 * Takes the state directory for this process: creates (0700) the directory and, atomically, a pid
 * file in it. Node and Deno share no advisory-lock call (Node has no flock/fcntl; Deno has
 * `FsFile.lock`), so the lock is the file's existence: made complete in a temp file, then hard-linked
 * into place, which fails with EEXIST when another process got there first. A lock whose pid is dead
 * (kill -9, power loss) is stale and taken over. Errors other than "held" (EACCES, EROFS) are thrown.
 */
export async function lockStateDir(dir: string, probe: LockProbe = processProbe): Promise<LockOutcome> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, PID_FILE);
  // Two servers in one process (tests, embedders) exclude each other too.
  if (_held.has(file)) return { ok: false, pid: process.pid };
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, `${process.pid}\n`, { mode: 0o600 });
  try {
    // A few rounds: each lost race against another starter's takeover tries again from the start.
    for (let round = 0; round < 8; round++) {
      try {
        await link(tmp, file);
        const { ino } = await stat(file);
        _held.add(file);
        return { ok: true, lock: { file, release: () => _release(file, ino) } };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = await _holder(file);
      if (holder === null) continue; // gone meanwhile: try again
      if (holder.pid !== null && (await probe.holds(holder.pid, holder.mtimeMs))) return { ok: false, pid: holder.pid };
      await _takeOver(file, holder);
    }
    throw new Error(`Cannot lock ${file}: other processes keep taking it over`);
  } finally {
    await rm(tmp, { force: true });
  }
}

// Removes a stale lock, but only the very file judged stale: it is first moved aside (atomic), and
// if what was moved turns out to be a fresh lock another starter made meanwhile, it is put back.
async function _takeOver(file: string, stale: { ino: number; text: string }): Promise<void> {
  const aside = `${file}.${process.pid}.stale`;
  try {
    await rename(file, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  const moved = await _holder(aside);
  if (moved !== null && (moved.ino !== stale.ino || moved.text !== stale.text)) await link(aside, file).catch(() => {});
  await rm(aside, { force: true });
}

async function _holder(
  file: string,
): Promise<{ pid: number | null; text: string; ino: number; mtimeMs: number } | null> {
  try {
    const [text, info] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
    const pid = Number(text.trim());
    // Garbage in the file cannot name a holder: it is treated as stale.
    return { pid: Number.isInteger(pid) && pid > 0 ? pid : null, text, ino: info.ino, mtimeMs: info.mtimeMs };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

async function _release(file: string, ino: number): Promise<void> {
  _held.delete(file);
  try {
    // Never remove a lock that is no longer ours (an operator deleted ours and another server took the
    // directory); the pid is compared too, since a freed inode number is soon given out again.
    const holder = await _holder(file);
    if (holder !== null && holder.ino === ino && holder.pid === process.pid) await rm(file, { force: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/**
 * The real probe: the pid exists (signal 0 succeeds, or EPERM: it exists under another user). On
 * Linux a pid reused after a reboot or wrap-around is told apart by its start time: a process that
 * started after the lock was written cannot be its writer. Elsewhere a reused pid reads as a holder.
 */
export const processProbe: LockProbe = {
  async holds(pid, writtenMs) {
    // Our own pid in a file this process does not hold: left by an earlier process that had the same pid.
    if (pid === process.pid) return false;
    try {
      process.kill(pid, 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
    }
    const started = await linuxStartMs(pid);
    // One second of slack: clock ticks and file times are coarse.
    return started === null || started <= writtenMs + 1_000;
  },
};

/**
 * When a process started (ms since the epoch) from /proc, or `null` where /proc cannot tell. Only
 * `/proc/<pid>/stat` is read (never `/proc/stat`, which systemd's `ProcSubset=pid` hides): the
 * boot time comes from this process's own start tick and its uptime.
 */
export async function linuxStartMs(pid: number): Promise<number | null> {
  try {
    const [theirs, ours] = await Promise.all([_startTicks(pid), _startTicks(process.pid)]);
    // USER_HZ is 100 on every Linux ABI that Node and Deno run on: a tick is 10 ms.
    const bootMs = Date.now() - process.uptime() * 1000 - ours * 10;
    return Number.isFinite(theirs) && Number.isFinite(bootMs) ? bootMs + theirs * 10 : null;
  } catch {
    return null;
  }
}

// Field 22 of /proc/<pid>/stat (starttime, clock ticks after boot), counted after the `(comm)`
// field, which may hold spaces.
async function _startTicks(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
}
