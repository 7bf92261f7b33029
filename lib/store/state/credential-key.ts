// The key the request ledger's credential fingerprints are made under (guard/fingerprint.ts): 32
// random bytes, hex, in a file of the state directory's own. The server makes it the first time it
// starts on a directory and keeps it for good: a new key makes every fingerprint kept so far
// unreadable. Whoever holds it can test guesses of a token against the ledger's fingerprints, so it
// is checked as the control secret is: a regular file, not reached through a link, owned by the
// directory's owner, closed to group and others.

import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { type FileHandle, link, open, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The key file's name in the state directory. */
export const CREDENTIAL_KEY = 'credential.key';

/** What {@link openCredentialKey} found: the key (made now, or its mode tightened from `tightened`), or why there is none to use. */
export type KeyOutcome =
  | { ok: true; key: Buffer; file: string; made: boolean; tightened: number | null }
  | { ok: false; file: string; missing: boolean; problem: string };

const _KEY = /^[0-9a-f]{64}$/;
// The key is 64 hex digits and a newline; a file much longer is not the key and is not read whole.
const _READ = 256;

/**
 * Reads the state directory's credential key. `make` (the server): one that is missing is made
 * (written whole under a temporary name, 0600, then linked into place, so two starters agree on one
 * key), and one that group or others can reach is made 0600. Without `make` (a command reading
 * the directory), a missing or open key is reported and nothing is changed.
 */
export async function openCredentialKey(stateDir: string, options: { make: boolean }): Promise<KeyOutcome> {
  const file = join(stateDir, CREDENTIAL_KEY);
  let made = false;
  let handle = await _open(file);
  if (handle === 'missing' && options.make) {
    made = await _make(file);
    handle = await _open(file);
  }
  if (typeof handle === 'string') {
    const problem = handle === 'missing' ? 'it does not exist (the server makes it when it starts)' : handle;
    return { ok: false, file, missing: handle === 'missing', problem };
  }
  try {
    return await _read(handle, file, stateDir, options.make, made);
  } finally {
    await handle.close();
  }
}

async function _read(
  handle: FileHandle,
  file: string,
  stateDir: string,
  make: boolean,
  made: boolean,
): Promise<KeyOutcome> {
  const fail = (problem: string): KeyOutcome => ({ ok: false, file, missing: false, problem });
  const info = await handle.stat();
  if (!info.isFile()) return fail('it is not a regular file');
  const owner = (await stat(stateDir)).uid;
  if (info.uid !== owner) {
    return fail(`it is owned by uid ${info.uid}, not by the state directory's owner (uid ${owner})`);
  }
  const mode = info.mode & 0o777;
  let tightened: number | null = null;
  if ((mode & 0o077) !== 0) {
    if (!make) return fail(`it has mode 0${mode.toString(8)}: group or others can reach it; the server makes it 0600`);
    await handle.chmod(0o600);
    tightened = mode;
  }
  const buffer = Buffer.alloc(_READ + 1);
  const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
  const text = buffer.subarray(0, bytesRead).toString('latin1').trim();
  if (!_KEY.test(text)) return fail('it does not hold a credential key (64 hex digits, as the server writes)');
  return { ok: true, key: Buffer.from(text, 'hex'), file, made, tightened };
}

// The key file held open, never through a link, never waiting on a FIFO; or why not.
async function _open(file: string): Promise<FileHandle | string> {
  try {
    return await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'missing';
    if (code === 'ELOOP' || code === 'EMLINK') return 'it is a symbolic link; the server writes a regular file there';
    return `it cannot be read: ${code ?? String(error)}`;
  }
}

// Made whole under a name of this process's own, then linked into place: a key another starter
// linked first wins, and nobody ever reads half a key.
async function _make(file: string): Promise<boolean> {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    await link(tmp, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return false;
  } finally {
    await rm(tmp, { force: true });
  }
}
