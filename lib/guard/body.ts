// The streaming body reader (byte cap, 30 s timeout), the JSON-object and form parsers.

import type { IncomingMessage } from 'node:http';
import { ErrorCode, HttpError } from '../errors.ts';
import { Deadlines } from './deadline.ts';

export interface BodyLimits {
  maxBytes: number;
  /** The whole body must have arrived within this many milliseconds. */
  timeoutMs: number;
}

/**
 * Reads a request body while counting bytes. A declared `Content-Length` over the cap is
 * refused before a byte is read; otherwise the moment the count crosses the cap the
 * request is answered 413 and nothing more is buffered.
 */
export function readBody(req: IncomingMessage, limits: BodyLimits): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limits.maxBytes) return Promise.reject(_tooLarge(limits.maxBytes));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (error: HttpError | null) => {
      deadlines.cancel(deadline);
      // After 'end' the stream emits nothing these listeners would act on: they go with the request.
      if (error === null) return resolve(Buffer.concat(chunks, size));
      req.off('data', onData).off('end', onEnd).off('error', onError).off('aborted', onAborted);
      // Stop reading: whatever else the client sends is not ours to hold.
      req.pause();
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limits.maxBytes) return finish(_tooLarge(limits.maxBytes));
      chunks.push(chunk);
    };
    const onEnd = () => finish(null);
    const onError = (cause: Error) =>
      finish(new HttpError(400, ErrorCode.InvalidPayload, 'request body could not be read', { close: true, cause }));
    const onAborted = () =>
      finish(new HttpError(400, ErrorCode.InvalidPayload, 'request body was cut short', { close: true }));
    const deadlines = _deadlines(limits.timeoutMs);
    const deadline = deadlines.set(() =>
      finish(
        new HttpError(
          408,
          ErrorCode.BodyTimeout,
          `request body did not arrive within ${Math.round(limits.timeoutMs / 1000)} s`,
          { close: true },
        ),
      )
    );
    req.on('data', onData).on('end', onEnd).on('error', onError).on('aborted', onAborted);
  });
}

// One deadline queue per body timeout (a config has one): no timer per request.
const _queues = new Map<number, Deadlines>();

function _deadlines(ms: number): Deadlines {
  let queue = _queues.get(ms);
  if (queue === undefined) _queues.set(ms, queue = new Deadlines(ms));
  return queue;
}

// One decoder for every body: a fatal decoder keeps no state between whole-buffer decode() calls.
const _UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Parses a body as a JSON object (arrays and other values are refused). */
export function parseJsonObject(body: Buffer): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(_UTF8.decode(body));
  } catch {
    throw new HttpError(400, ErrorCode.InvalidJson, 'body: must be valid JSON (UTF-8)');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new HttpError(400, ErrorCode.InvalidJson, 'body: must be a JSON object');
  }
  // Nesting deeper than MAX_DEPTH takes at least 2 (MAX_DEPTH + 1) bytes of brackets: a shorter body is not walked.
  if (body.length >= 2 * (MAX_DEPTH + 1) && !_within(value, MAX_DEPTH)) {
    throw new HttpError(
      400,
      ErrorCode.InvalidJson,
      `body: may nest objects and arrays at most ${MAX_DEPTH} levels deep`,
    );
  }
  return value as Record<string, unknown>;
}

/**
 * How deep objects and arrays may nest in a JSON body (the body itself is level 1). Bounded once
 * here, for every hook, so that nothing after it (templates, transforms, the journal) has to
 * fear a recursion that a payload 100,000 levels deep would overflow.
 */
export const MAX_DEPTH = 64;

// Iterative on purpose: the check itself must not recurse as deep as the payload.
function _within(root: object, max: number): boolean {
  const stack: [unknown, number][] = [[root, 1]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [value, depth] = next;
    if (depth > max) return false;
    for (const child of Object.values(value as object)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return true;
}

/** Parses an `application/x-www-form-urlencoded` body into an object of strings (a repeated name keeps its last value). */
export function parseForm(body: Buffer): Record<string, unknown> {
  let text: string;
  try {
    text = _UTF8.decode(body);
  } catch {
    throw new HttpError(400, ErrorCode.InvalidPayload, 'body: must be valid UTF-8');
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(text)) {
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function _tooLarge(max: number): HttpError {
  return new HttpError(413, ErrorCode.BodyTooLarge, `body: must be at most ${max} bytes (hooks.maxBodyBytes)`, {
    close: true,
  });
}
