import type { HttpError } from '../errors.ts';
import type { StoredAnswer } from '../store/records.ts';

/** An answer on its way out: status, JSON body and extra headers. */
export interface Answer extends StoredAnswer {
  headers?: Record<string, string>;
  /** A body that is not JSON (the metrics page), with its content type. */
  text?: string;
  contentType?: string;
  /** End the connection once the answer is out (the request body was not read to its end). */
  close?: boolean;
}

/**
 * The one place an HttpError becomes what the client is told: its status, its message and stable
 * code, its headers. Handlers return it for the refusals they expect (a wrong token), and the
 * server uses it for every HttpError thrown on the way.
 */
export function errorAnswer(error: HttpError): Answer {
  return { status: error.status, body: { ok: false, error: error.message, code: error.code }, headers: error.headers, close: error.close };
}
