import assert from 'node:assert/strict';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { PID_FILE } from '../lib/store/state/pid-file.ts';
import { linuxStartMs, type LockProbe, lockStateDir, processProbe } from '../lib/store/state/lock.ts';
import { fileDir } from './_dir.ts';

const tmp = await fileDir('state-lock-');

const alive: LockProbe = { holds: async () => true };
const dead: LockProbe = { holds: async () => false };

test('lockStateDir() creates the directory 0700 and a pid file holding this pid; release removes it', async () => {
  const dir = join(tmp, 'fresh', 'state');
  const outcome = await lockStateDir(dir);
  assert.ok(outcome.ok);
  assert.equal((await stat(dir)).mode & 0o777, 0o700);
  assert.equal(await readFile(join(dir, PID_FILE), 'utf8'), `${process.pid}\n`);
  await outcome.lock.release();
  await assert.rejects(stat(join(dir, PID_FILE)), { code: 'ENOENT' });
});

test('lockStateDir() refuses a directory this process already holds, and one a live process holds', async () => {
  const dir = join(tmp, 'held');
  const first = await lockStateDir(dir);
  assert.ok(first.ok);
  assert.deepEqual(await lockStateDir(dir, dead), { ok: false, pid: process.pid });
  await first.lock.release();
  await writeFile(join(dir, PID_FILE), '4242\n');
  assert.deepEqual(await lockStateDir(dir, alive), { ok: false, pid: 4242 });
  assert.equal(await readFile(join(dir, PID_FILE), 'utf8'), '4242\n');
});

test('lockStateDir() takes over a stale lock and a lock file holding garbage', async () => {
  for (const [i, content] of ['4242\n', 'garbage', ''].entries()) {
    const dir = join(tmp, `stale-${i}`);
    await mkdir(dir);
    await writeFile(join(dir, PID_FILE), content);
    const outcome = await lockStateDir(dir, dead);
    assert.ok(outcome.ok, JSON.stringify(content));
    assert.equal(await readFile(join(dir, PID_FILE), 'utf8'), `${process.pid}\n`);
    await outcome.lock.release();
  }
});

test('release() leaves a lock file that is no longer this one in place', async () => {
  const dir = join(tmp, 'replaced');
  const outcome = await lockStateDir(dir);
  assert.ok(outcome.ok);
  await rm(join(dir, PID_FILE));
  await writeFile(join(dir, PID_FILE), '4242\n');
  await outcome.lock.release();
  assert.equal(await readFile(join(dir, PID_FILE), 'utf8'), '4242\n');
  await rm(join(dir, PID_FILE));
  await outcome.lock.release(); // gone altogether: nothing to do
});

test('processProbe.holds() tells a live pid from a dead one, and (on Linux) from one that started after the lock', async () => {
  assert.equal(
    await processProbe.holds(process.pid, Date.now()),
    false,
    'this process never holds a lock it did not take',
  );
  assert.equal(await processProbe.holds(2 ** 22 + 12345, Date.now()), false);
  const parent = process.ppid;
  assert.equal(await processProbe.holds(parent, Date.now()), true);
  if (process.platform === 'linux') {
    assert.equal(await processProbe.holds(parent, 0), false);
    const started = await linuxStartMs(process.pid);
    assert.ok(started !== null && started <= Date.now() && started > Date.now() - 3_600_000);
  }
  assert.equal(await linuxStartMs(2 ** 22 + 12345), null);
});
