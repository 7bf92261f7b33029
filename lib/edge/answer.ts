// An answer on its way out: the one step from an HttpError to what the client is told, and writing
// an answer with its headers, ending its connection when the request body was left unread.

import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ErrorCode, HttpError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { StoredAnswer } from '../model/records.ts';
import type { Trace } from './trace.ts';

/** An answer on its way out: status, JSON body and extra headers. */
export interface Answer extends StoredAnswer {
  headers?: Record<string, string>;
  /** A body that is not JSON (the metrics page), with its content type. */
  text?: string;
  contentType?: string;
  /** End the connection once the answer is out (the request body was not read to its end). */
  close?: boolean;
  /** What was decided about a request to the hooks path, and why (the ledger records it). */
  trace?: Trace;
}

/**
 * The one place an HttpError becomes what the client is told: its status, its message and stable
 * code, its headers. Handlers return it for the refusals they expect (a wrong token), and the
 * server uses it for every HttpError thrown on the way.
 */
export function errorAnswer(error: HttpError): Answer {
  return {
    status: error.status,
    body: { ok: false, error: error.message, code: error.code },
    headers: error.headers,
    close: error.close,
  };
}

/** A refusal's answer carrying `trace` (which holds the refusal): one object, as a flood of refusals makes one each. */
export function refusedAnswer(error: HttpError, trace: Trace): Answer {
  return {
    status: error.status,
    body: { ok: false, error: error.message, code: error.code },
    headers: error.headers,
    close: error.close,
    trace,
  };
}

/**
 * `answer` carrying `trace`, built key by key: every answer of the hooks path keeps one hidden
 * class (a spread that adds `trace` would give each a class of its own: object.ts's `extend`).
 */
export function withTrace(answer: Answer, trace: Trace): Answer {
  const out: Answer = { status: answer.status, body: answer.body, trace };
  if (answer.headers !== undefined) out.headers = answer.headers;
  if (answer.text !== undefined) out.text = answer.text;
  if (answer.contentType !== undefined) out.contentType = answer.contentType;
  if (answer.close !== undefined) out.close = answer.close;
  if (answer.waitFor !== undefined) out.waitFor = answer.waitFor;
  if (answer.requestId !== undefined) out.requestId = answer.requestId;
  return out;
}

/**
 * Where every error thrown on a request's way becomes an answer. Known errors say what went wrong
 * (errorAnswer); anything else is logged with the request id and answered with a bare 500 that
 * tells the client nothing.
 */
export function answerError(error: unknown, id: string, log: Pick<Logger, 'error'>): Answer {
  if (error instanceof HttpError) return errorAnswer(error);
  log.error('unexpected error', { id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  return { status: 500, body: { ok: false, error: 'internal error', code: ErrorCode.Internal } };
}

/**
 * Writes an answer with its headers (content type and length, no-store, the request id). A request
 * whose body was not read to its end (a large or unbounded one) gets its connection ended once the
 * answer is out; this is where that is decided, and the answer's `Connection` header follows it.
 */
export function sendAnswer(
  req: IncomingMessage,
  res: ServerResponse,
  answer: Answer,
  id: string,
  maxBodyBytes: number,
): void {
  if (res.headersSent || res.destroyed) return;
  const text = answer.status === 204 ? '' : (answer.text ?? JSON.stringify(answer.body));
  // A small unread body (an early 401, 404, ...) is drained by node:http and the connection kept;
  // one that is large or of unknown length is not worth reading, so the connection goes.
  const declared = Number(req.headers['content-length']);
  const close = answer.close === true || (!req.complete && !(declared <= maxBodyBytes));
  // Built key by key (the answer's own headers first): no spread copies per response.
  const headers: OutgoingHttpHeaders = {};
  if (answer.headers !== undefined) {
    for (const name of Object.keys(answer.headers)) headers[name] = answer.headers[name];
  }
  if (answer.status !== 204) {
    headers['content-type'] = answer.contentType ?? 'application/json; charset=utf-8';
    headers['content-length'] = Buffer.byteLength(text);
  }
  headers['cache-control'] = 'no-store';
  headers['x-request-id'] = id;
  if (close) headers['connection'] = 'close';
  res.writeHead(answer.status, headers);
  // node:http marks a `Connection: close` answer as the connection's last (`_last`) and destroys the
  // socket once it is written, which resets the connection while the client may still be sending.
  // Cleared, the header only tells the client, and _linger ends the connection as below.
  if (close) (res as { _last?: boolean })._last = false;
  res.end(req.method === 'HEAD' ? undefined : text);
  // The rest of an unread body is not ours to receive: end the connection once the answer is out.
  if (close) {
    _ending.add(req.socket);
    res.once('finish', () => _linger(req));
  }
}

/** Connections ended after an answer: whatever the client still sends on them is dropped, requests included. */
const _ending = new WeakSet<Socket>();

/** Whether `socket` was ended after an answer: a request still arriving on it is dropped unread. */
export function endedConnection(socket: Socket): boolean {
  return _ending.has(socket);
}

/** How long a connection ended after a 413 or 408 may still deliver bytes we throw away. */
const LINGER_MS = 2_000;

// Half-close after the answer and discard (never buffer) what the client still sends, for a moment.
// Closing at once would reset the connection while the client is still sending, and a reset can
// wipe the answer from the client's receive buffer before it reads it. The request flows again
// with nothing listening, so what arrives is read and dropped: a client that cannot send the rest
// cannot finish, and would only see the connection reset when the moment is over.
function _linger(req: IncomingMessage): void {
  const socket: Socket = req.socket;
  req.resume();
  socket.end();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref?.();
  socket.once('close', () => clearTimeout(timer));
}
