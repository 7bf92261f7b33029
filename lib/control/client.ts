// The CLI's side of the control channel (lib/control/server.ts): one request line with the secret
// read from the state directory (its files checked first, lib/control/files.ts), one answer
// line. Whatever listens on the socket wrote the answer: a command prints it escaped.

import { connect } from 'node:net';
import { join } from 'node:path';
import { CONTROL_LINE_MAX, CONTROL_SOCKET, socketPathProblem } from './server.ts';
import { ErrorCode } from '../errors.ts';
import { openControlFiles } from './files.ts';
import { escapeControls } from '../text.ts';

/** What the server said, or why it said nothing. */
export type ControlAnswer =
  | { kind: 'result'; result: unknown }
  | { kind: 'error'; code: string; message: string }
  | { kind: 'no-server'; why: string }
  | { kind: 'timeout' };

/** How long {@link callServer} waits for an answer unless told otherwise. */
export const CALL_TIMEOUT_MS = 10_000;

// An answer longer than this is not a control answer: the connection is dropped.
const _ANSWER_MAX = 16 * 1024 * 1024;

/**
 * Asks the server that holds `stateDir` to run `op` with `args`. Every outcome is a value: a
 * missing secret or socket, or a refused connection, is 'no-server' (a server killed with -9
 * leaves both files behind, and nothing listens on the socket); no answer within `timeoutMs` is 'timeout'.
 */
export async function callServer(
  stateDir: string,
  op: string,
  args: unknown,
  options: { timeoutMs?: number } = {},
): Promise<ControlAnswer> {
  const noServer: ControlAnswer = { kind: 'no-server', why: `no running server found for state directory ${stateDir}` };
  const problem = socketPathProblem(stateDir);
  if (problem !== null) return { kind: 'error', code: ErrorCode.ControlPath, message: problem };
  // The secret's key first: the server checks these bytes before it holds more of the line.
  const encoded = JSON.stringify({ secret: '', op, args });
  // The server would refuse it after reading a mebibyte of it: said here without sending (the secret's 64 digits counted).
  if (Buffer.byteLength(encoded) + 64 > CONTROL_LINE_MAX) {
    return { kind: 'error', code: ErrorCode.ControlTooLarge, message: `the request is over ${CONTROL_LINE_MAX} bytes` };
  }
  const files = await openControlFiles(stateDir);
  if ('kind' in files) return files.kind === 'no-server' ? noServer : files;
  const line = `${JSON.stringify({ secret: files.secret, op, args })}\n`;
  try {
    return await _exchange(
      files.connectPath,
      join(stateDir, CONTROL_SOCKET),
      line,
      options.timeoutMs ?? CALL_TIMEOUT_MS,
      noServer,
    );
  } finally {
    await files.close();
  }
}

function _exchange(
  path: string,
  shown: string,
  line: string,
  timeoutMs: number,
  noServer: ControlAnswer,
): Promise<ControlAnswer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const socket = connect({ path });
    const settle = (answer: ControlAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => settle({ kind: 'timeout' }), timeoutMs);
    socket.on('connect', () => socket.write(line));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'ECONNREFUSED') return settle(noServer);
      // EPIPE or a reset after the server answered and closed: the answer may be complete.
      if (chunks.length > 0) return settle(_parse(Buffer.concat(chunks)));
      settle({
        kind: 'error',
        code: ErrorCode.ControlConnect,
        message: `cannot talk to the server at ${shown}: ${error.code ?? error.message}`,
      });
    });
    socket.on('data', (chunk: Buffer) => {
      size += chunk.length;
      chunks.push(chunk);
      if (size > _ANSWER_MAX) {
        settle({
          kind: 'error',
          code: ErrorCode.ControlAnswer,
          message: `the server's answer is over ${_ANSWER_MAX} bytes`,
        });
      } else if (chunk.includes(0x0a)) settle(_parse(Buffer.concat(chunks)));
    });
    socket.on('end', () => settle(_parse(Buffer.concat(chunks))));
    socket.on('close', () => settle(_parse(Buffer.concat(chunks))));
  });
}

// The answer line as a value; anything else (the server stopped before answering) is an error.
function _parse(bytes: Buffer): ControlAnswer {
  const text = bytes.toString('utf8');
  const newline = text.indexOf('\n');
  if (newline === -1) {
    return {
      kind: 'error',
      code: ErrorCode.ControlClosed,
      message: 'the server closed the connection without an answer (is it stopping?)',
    };
  }
  try {
    const answer = JSON.parse(text.slice(0, newline)) as {
      ok?: unknown;
      result?: unknown;
      error?: { code?: unknown; message?: unknown };
    };
    if (answer.ok === true) return { kind: 'result', result: answer.result ?? null };
    // Escaped here, as every command prints it: whatever listens on the socket chose these texts.
    if (answer.ok === false && typeof answer.error?.code === 'string') {
      return {
        kind: 'error',
        code: escapeControls(answer.error.code, false),
        message: escapeControls(String(answer.error.message ?? ''), false),
      };
    }
  } catch {
    // not JSON: below
  }
  return {
    kind: 'error',
    code: ErrorCode.ControlAnswer,
    message: 'the server sent an answer that is not a control answer',
  };
}
