// The owner-only control channel: the CLI asks the running server to do something (reload, retry,
// report its status) over a unix socket in the state directory. A socket's file mode is not enough:
// a transform child on Node runs as the same user and can connect to anything that user can. So
// every request carries a secret the server writes, 0600, into the state directory at each start;
// a transform child's permission flags do not let it read the state directory.
//
// The frame: a request is one JSON line that begins `{"secret":"<the secret>",` (the client writes
// the secret's key first; clients before this rule did too). Those first bytes are compared as soon
// as they are in, so a connection without the secret is answered and closed holding at most them,
// not a mebibyte; and at most `maxConnections` connections are served at once, those that have not
// sent the secret yet giving way to a new one.

import { chmod, rename, rm, writeFile } from 'node:fs/promises';
import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { ErrorCode, HttpError } from '../errors.ts';
import { tokenDigest, tokenMatches } from '../guard/token.ts';
import type { Logger } from '../log.ts';
import { randomHex } from '../random.ts';

/** One operation of the channel: its arguments as the client sent them, its result as JSON. */
export type ControlHandler = (args: unknown) => Promise<unknown>;

/** The operations the server answers, by name ('reload', 'outbox.retry', 'status', …). */
export type ControlHandlers = Readonly<Record<string, ControlHandler>>;

/** What {@link startControl} takes. */
export interface ControlOptions {
  stateDir: string;
  handlers: ControlHandlers;
  log: Logger;
  /** Past this many bytes without a newline a request is refused (ERR_CONTROL_TOO_LARGE); 1 MiB by default. */
  maxLineBytes?: number;
  /** A connection that has not sent its whole line within this time is closed; 10 s by default. */
  idleMs?: number;
  /**
   * Connections served at once ({@link CONTROL_CONNECTIONS_MAX} by default); one more ends the
   * oldest that has not sent the secret yet, or else is itself answered ERR_CONTROL_BUSY and closed.
   */
  maxConnections?: number;
  /** The clock that spaces the refusal log lines; `Date.now` by default. */
  now?: () => number;
}

/** The listening channel; `close` stops it and removes its files. */
export interface ControlServer {
  socketPath: string;
  close(): Promise<void>;
}

/** The socket's and the secret's file names in the state directory. */
export const CONTROL_SOCKET = 'control.sock';
export const CONTROL_SECRET = 'control.secret';

/** The longest unix socket path Linux takes (sun_path is 108 bytes, with the terminating NUL). */
export const SOCKET_PATH_MAX = 107;

/** How often, at most, refused requests are logged: a flood of them must not flood the log. */
export const REFUSAL_LOG_EVERY_MS = 60_000;

/** A request line's cap by default: `try` sends a body with it. */
export const CONTROL_LINE_MAX = 1024 * 1024;

/**
 * Connections served at once by default: a command opens one, and only the server's user can
 * connect. With the secret each may hold up to a request line (32 MiB in all); without it, the
 * frame's first bytes.
 */
export const CONTROL_CONNECTIONS_MAX = 32;

/** The channel's files for a state directory. */
export function controlFiles(stateDir: string): { socket: string; secret: string } {
  return { socket: join(stateDir, CONTROL_SOCKET), secret: join(stateDir, CONTROL_SECRET) };
}

/** Why the control socket cannot live in `stateDir` (its path is too long for a unix socket), or `null`. */
export function socketPathProblem(stateDir: string): string | null {
  const { socket } = controlFiles(stateDir);
  const bytes = Buffer.byteLength(socket);
  if (bytes <= SOCKET_PATH_MAX) return null;
  return `the control socket ${socket} is ${bytes} bytes long, more than the ${SOCKET_PATH_MAX} a unix socket path may have; use a state directory with a shorter path`;
}

/**
 * Starts the channel for the server that holds `stateDir` (serve takes the directory's lock
 * first, so a socket file already there is a stale one from a server that was killed: it is
 * replaced). Writes a fresh secret (0600) before listening, so no client ever pairs the new
 * socket with an old secret. Throws when the socket path is too long or the directory unusable.
 */
export async function startControl(options: ControlOptions): Promise<ControlServer> {
  const {
    stateDir,
    handlers,
    log,
    maxLineBytes = CONTROL_LINE_MAX,
    idleMs = 10_000,
    maxConnections = CONTROL_CONNECTIONS_MAX,
    now = Date.now,
  } = options;
  const problem = socketPathProblem(stateDir);
  if (problem !== null) throw new Error(`Cannot start the control channel: ${problem}`);
  const files = controlFiles(stateDir);
  const secret = randomHex(32);
  await _writePrivate(files.secret, `${secret}\n`);
  const serving = {
    digest: tokenDigest(secret),
    head: Buffer.from(`{"secret":"${secret}",`),
    handlers,
    log,
    maxLineBytes,
    idleMs,
    refused: _refusalLog(log, now, 'control request refused: wrong secret'),
    full: `more than ${maxConnections} connections are open; try again`,
  };
  const busy = _refusalLog(log, now, 'control connection refused: too many open');
  await rm(files.socket, { force: true });

  const open = new Set<Socket>();
  const server = createServer(_admit(open, maxConnections, busy, serving));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(files.socket, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Before this chmod the socket has the umask's mode; the state directory is 0700 and the secret
  // is needed anyway, so nobody can use that moment.
  await chmod(files.socket, 0o600);
  server.on('error', (error) => log.error('control channel error', { error: String(error) }));
  return {
    socketPath: files.socket,
    close: () => _close(server, open, files),
  };
}

// Each new connection, served within `maxConnections` open at once. The connections that have not
// sent the frame's head yet are kept oldest first, each with what ends it: when every slot is taken
// the oldest of them makes room, so connections held open without the secret cannot keep the
// owner's command out; only connections that sent it fill the slots.
function _admit(
  open: Set<Socket>,
  maxConnections: number,
  busy: () => void,
  serving: Omit<Serving, 'headed'>,
): (socket: Socket) => void {
  const waiting = new Map<Socket, () => void>();
  return (socket) => {
    if (open.size >= maxConnections) {
      busy();
      const oldest = waiting.entries().next().value;
      if (oldest === undefined) {
        socket.on('error', () => {});
        socket.end(_error(ErrorCode.ControlBusy, serving.full), () => socket.destroy());
        return;
      }
      waiting.delete(oldest[0]);
      open.delete(oldest[0]);
      oldest[1]();
    }
    open.add(socket);
    socket.once('close', () => {
      open.delete(socket);
      waiting.delete(socket);
    });
    waiting.set(socket, _serve(socket, { ...serving, headed: () => waiting.delete(socket) }));
  };
}

// Stops accepting, ends the connections still open (their clients see no answer), and removes the
// files, so a client finds no server rather than a dead socket.
async function _close(server: Server, open: Set<Socket>, files: { socket: string; secret: string }): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  for (const socket of open) socket.destroy();
  await closed;
  await rm(files.socket, { force: true });
  await rm(files.secret, { force: true });
}

// Written whole under a temporary name, created 0600, then renamed over the old secret.
async function _writePrivate(path: string, text: string): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await rm(tmp, { force: true });
  await writeFile(tmp, text, { mode: 0o600, flag: 'wx' });
  await rename(tmp, path);
}

// The first refusal is logged at once, then at most one line a minute with how many came: any
// process of the server's user (a transform child on Node) can connect as often as it likes.
function _refusalLog(log: Logger, now: () => number, message: string): () => void {
  let loggedAt = -Infinity;
  let unlogged = 0;
  return () => {
    unlogged++;
    if (now() - loggedAt < REFUSAL_LOG_EVERY_MS) return;
    log.warn(message, { refused: unlogged });
    loggedAt = now();
    unlogged = 0;
  };
}

interface Serving {
  digest: Buffer;
  /** The first bytes of every request line: `{"secret":"<the secret>",`. */
  head: Buffer;
  handlers: ControlHandlers;
  log: Logger;
  maxLineBytes: number;
  idleMs: number;
  /** Notes a request refused for its secret (logged at a bounded pace). */
  refused: () => void;
  /** Called once the frame's head is judged (the connection no longer waits for it). */
  headed: () => void;
  /** The busy answer's message. */
  full: string;
}

// One connection: one line in, one line out, closed. The line's first bytes must be the frame's
// head, with the secret: compared when they are all in (or the line ends before), they are all a
// connection without the secret gets to have held. Returns what ends the connection, answered
// ERR_CONTROL_BUSY, while its head is not in yet (to make room for another).
function _serve(socket: Socket, serving: Serving): () => void {
  const connection: _Connection = { chunks: [], size: 0, done: false, head: Buffer.alloc(0) };
  // A deadline for the whole line, not an idle timer: a client that sends a byte now and then
  // would otherwise hold its connection and up to a line's worth of memory for ever.
  const deadline = setTimeout(() => socket.destroy(), serving.idleMs);
  deadline.unref();
  socket.once('close', () => clearTimeout(deadline));
  socket.on('error', () => {}); // a client that went away: nothing to answer
  const answer = (line: string) => {
    socket.end(line, () => socket.destroy());
  };
  socket.on('data', (data: Buffer) => {
    if (connection.done) return;
    const rest = connection.head === null ? data : _readHead(connection, data, serving, answer);
    if (rest === null) return;
    if (_readLine(connection, rest, serving, socket)) _answerLine(connection, serving, socket, deadline, answer);
  });
  return () => {
    if (connection.done) return;
    connection.done = true;
    connection.head = null;
    answer(_error(ErrorCode.ControlBusy, serving.full));
  };
}

/** One connection's request line as it comes in. */
interface _Connection {
  chunks: Buffer[];
  size: number;
  /** Answered, or answering: what the client sends now is dropped. */
  done: boolean;
  /** The frame's head as far as it came in; `null` once it was judged. */
  head: Buffer | null;
}

// The frame's head, gathered until all its bytes are in (or the line ends before) and compared
// then: what comes after it, or `null` while it is not all in or when it is refused (answered).
function _readHead(
  connection: _Connection,
  chunk: Buffer,
  serving: Serving,
  answer: (line: string) => void,
): Buffer | null {
  const head = connection.head ?? Buffer.alloc(0);
  const wanted = serving.head.length - head.length;
  const newline = chunk.subarray(0, wanted).indexOf(0x0a);
  const gathered = Buffer.concat([head, chunk.subarray(0, newline === -1 ? wanted : newline)]);
  connection.head = gathered;
  if (newline === -1 && gathered.length < serving.head.length) return null;
  serving.headed();
  connection.head = null;
  if (gathered.length < serving.head.length || !timingSafeEqual(gathered, serving.head)) {
    connection.done = true;
    serving.refused();
    answer(_error(ErrorCode.ControlAuth, 'not authorised'));
    return null;
  }
  connection.chunks.push(gathered);
  connection.size = gathered.length;
  return chunk.subarray(wanted);
}

// The rest of the request line: whether it ended in `chunk`. A line over the cap is answered here.
function _readLine(connection: _Connection, chunk: Buffer, serving: Serving, socket: Socket): boolean {
  const newline = chunk.indexOf(0x0a);
  const take = newline === -1 ? chunk : chunk.subarray(0, newline);
  connection.size += take.length;
  if (connection.size > serving.maxLineBytes) {
    connection.done = true;
    connection.chunks.length = 0;
    // The rest of the line is read and dropped until the client stops (or the idle time passes),
    // so a client still writing reads this answer instead of failing with EPIPE.
    socket.end(_error(ErrorCode.ControlTooLarge, `the request line is over ${serving.maxLineBytes} bytes`));
    setTimeout(() => socket.destroy(), serving.idleMs).unref();
    return false;
  }
  connection.chunks.push(take);
  return newline !== -1;
}

// A whole line in: the deadline stops here, since a handler (a reload) may take longer than a
// client takes to send, and the answer goes out unless the client has gone.
function _answerLine(
  connection: _Connection,
  serving: Serving,
  socket: Socket,
  deadline: ReturnType<typeof setTimeout>,
  answer: (line: string) => void,
): void {
  connection.done = true;
  clearTimeout(deadline);
  void _answer(Buffer.concat(connection.chunks).toString('utf8'), serving).then((line) => {
    if (!socket.destroyed) answer(line);
  });
}

// The answer line to one request line. The secret is checked before anything else is looked at,
// so a caller without it learns nothing (not even which operations exist).
async function _answer(line: string, { digest, handlers, log, refused }: Serving): Promise<string> {
  let request: unknown;
  try {
    request = JSON.parse(line);
  } catch {
    return _error(ErrorCode.ControlAuth, 'not authorised');
  }
  const fields = typeof request === 'object' && request !== null && !Array.isArray(request)
    ? (request as Record<string, unknown>)
    : {};
  const secret = fields['secret'];
  if (typeof secret !== 'string' || !tokenMatches(secret, digest)) {
    refused();
    return _error(ErrorCode.ControlAuth, 'not authorised');
  }
  const op = fields['op'];
  const handler = typeof op === 'string' && Object.hasOwn(handlers, op) ? handlers[op] : undefined;
  if (handler === undefined) {
    return _error(
      ErrorCode.ControlUnknownOp,
      `unknown operation ${JSON.stringify(String(op)).slice(0, 80)}; known: ${Object.keys(handlers).sort().join(', ')}`,
    );
  }
  try {
    const result = await handler(fields['args'] ?? null);
    return `${JSON.stringify({ ok: true, result: result ?? null })}\n`;
  } catch (error) {
    if (error instanceof HttpError) return _error(error.code, error.message);
    log.error('control operation failed', { op: op as string, error: String(error) });
    return _error(ErrorCode.Internal, 'internal error');
  }
}

function _error(code: string, message: string): string {
  return `${JSON.stringify({ ok: false, error: { code, message } })}\n`;
}
