/**
 * @module The control channel's files as the CLI finds them, checked before anything is sent.
 *
 * An admin runs `sudo hooks-ingress status --state-dir DIR` on a directory that the service's user
 * owns, so whatever runs as that user (a compromised server, an agent steered by a webhook) decides
 * what is in it. What the client trusts is only what that user could have made itself: the secret
 * a regular file and the socket a socket, both owned by the directory's owner and closed to group
 * and others, neither reached through a symbolic link. Nothing is read through a link (the secret
 * opened O_NOFOLLOW), nothing blocks on a FIFO (O_NONBLOCK), and no connection is made before the
 * checks pass.
 */
import { constants } from 'node:fs';
import { type FileHandle, lstat, open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode } from '../errors.ts';
import { CONTROL_SECRET, CONTROL_SOCKET } from './server.ts';

/** The checked files: the secret read, the path to connect to, and `close` for what they hold open. */
export interface ControlFiles {
  secret: string;
  connectPath: string;
  close(): Promise<void>;
}

/** Why the files cannot be used: no server, or a refusal to use what is there. */
export type ControlFilesProblem = { kind: 'no-server' } | { kind: 'error'; code: string; message: string };

// Linux's O_PATH (absent from fs.constants): a handle on the inode itself, for fstat and for
// /proc/self/fd/N, which connect() follows to that very inode.
const _O_PATH = 0o10000000;
// The server writes 64 hex digits; a file much longer is not its secret and is not read whole.
const _SECRET_READ = 256;
const _SECRET = /^[0-9a-f]{32,128}$/;

/**
 * Opens `stateDir`'s control files for one call: `no-server` when the socket or the secret is
 * missing (or nothing but a plain file is at the socket's place), an `ERR_CONTROL_UNSAFE` error
 * when either is not what the server makes.
 *
 * On Linux the directory, the socket and the secret are each held by a file descriptor from the
 * first look to the connect: the socket checked is the socket connected to (through
 * /proc/self/fd), whatever is renamed meanwhile. Elsewhere the socket is checked by lstat and then
 * connected to by path: its owner can swap a symbolic link in between, so a client run by another
 * user may still connect to a socket the link names (it sends nothing it read through the link).
 */
export async function openControlFiles(stateDir: string): Promise<ControlFiles | ControlFilesProblem> {
  const held: FileHandle[] = [];
  const close = async () => {
    await Promise.all(held.map((h) => h.close().catch(() => {})));
  };
  try {
    const found = await _open(stateDir, held);
    if ('kind' in found) await close();
    return 'kind' in found ? found : { ...found, close };
  } catch (error) {
    await close();
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'no-server' };
    const path = (error as NodeJS.ErrnoException).path ?? stateDir;
    return {
      kind: 'error',
      code: ErrorCode.ControlAccess,
      message: `cannot read ${_shown(path, stateDir)}: ${
        code ?? String(error)
      } (run this as the user the server runs as, or as root)`,
    };
  }
}

async function _open(stateDir: string, held: FileHandle[]): Promise<Omit<ControlFiles, 'close'> | ControlFilesProblem> {
  const pinned = process.platform === 'linux' && (await _procFds());
  let base = stateDir;
  let owner: number;
  if (pinned) {
    const dir = await open(stateDir, _O_PATH | constants.O_DIRECTORY);
    held.push(dir);
    owner = (await dir.stat()).uid;
    base = `/proc/self/fd/${dir.fd}`;
  } else {
    owner = (await stat(stateDir)).uid;
  }
  const socketPath = join(stateDir, CONTROL_SOCKET);
  const secretPath = join(stateDir, CONTROL_SECRET);

  // The socket first: with none there no server runs, whatever a stale secret says.
  let socketInfo;
  let connectPath = socketPath;
  if (pinned) {
    const socket = await open(join(base, CONTROL_SOCKET), _O_PATH | constants.O_NOFOLLOW);
    held.push(socket);
    socketInfo = await socket.stat();
    connectPath = `/proc/self/fd/${socket.fd}`;
  } else {
    socketInfo = await lstat(socketPath);
  }
  if (socketInfo.isSymbolicLink()) return _unsafe(`${socketPath} is a symbolic link; the server makes a socket there`);
  if (!socketInfo.isSocket()) return { kind: 'no-server' };
  const socketProblem = _ownProblem(socketPath, socketInfo, owner);
  if (socketProblem !== null) return _unsafe(socketProblem);

  let secretFile: FileHandle;
  try {
    // O_NONBLOCK: a FIFO put there opens at once (and is refused below) instead of waiting for a writer.
    secretFile = await open(
      join(base, CONTROL_SECRET),
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    );
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'EMLINK') {
      return _unsafe(`${secretPath} is a symbolic link; the server writes a regular file there`);
    }
    throw Object.assign(error as NodeJS.ErrnoException, { path: secretPath });
  }
  held.push(secretFile);
  const secretInfo = await secretFile.stat();
  if (!secretInfo.isFile()) return _unsafe(`${secretPath} is not a regular file; the server writes one there`);
  const secretProblem = _ownProblem(secretPath, secretInfo, owner);
  if (secretProblem !== null) return _unsafe(secretProblem);
  const buffer = Buffer.alloc(_SECRET_READ + 1);
  const { bytesRead } = await secretFile.read(buffer, 0, buffer.length, 0);
  const secret = buffer.subarray(0, bytesRead).toString('latin1').trim();
  if (!_SECRET.test(secret)) {
    return _unsafe(`${secretPath} does not hold a control secret (hex digits, as the server writes)`);
  }
  return { secret, connectPath };
}

// What the server makes: owned by the state directory's owner (the server's user) and 0600.
function _ownProblem(path: string, info: { uid: number; mode: number }, owner: number): string | null {
  if (info.uid !== owner) {
    return `${path} is owned by uid ${info.uid}, not by the state directory's owner (uid ${owner})`;
  }
  const mode = info.mode & 0o777;
  if ((mode & 0o077) !== 0) {
    return `${path} has mode 0${mode.toString(8)}: group or others can reach it; the server makes it 0600`;
  }
  return null;
}

function _unsafe(why: string): ControlFilesProblem {
  return { kind: 'error', code: ErrorCode.ControlUnsafe, message: `refusing to use the control channel: ${why}` };
}

// A path under /proc/self/fd/D is shown as the state directory's own.
function _shown(path: string, stateDir: string): string {
  return path.replace(/^\/proc\/self\/fd\/\d+/, stateDir);
}

let _procChecked: Promise<boolean> | undefined;
function _procFds(): Promise<boolean> {
  _procChecked ??= stat('/proc/self/fd').then(
    (info) => info.isDirectory(),
    () => false,
  );
  return _procChecked;
}
