import assert from 'node:assert/strict';
import { request, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';

/** A response as a spec sees it; `body` is the parsed JSON object, or `{}` when the text is not one. */
export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  body: Record<string, unknown>;
}

/** A request to send: an object body is sent as JSON. */
export interface SendOptions {
  method?: string;
  headers?: OutgoingHttpHeaders;
  body?: string | Buffer | object;
}

/** Sends one request on a fresh connection (no keep-alive, so specs never share a socket) and reads the whole answer. */
export function send(url: string, path: string, options: SendOptions = {}): Promise<Reply> {
  const { method = 'GET', headers = {}, body } = options;
  const payload = body === undefined || typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const all: OutgoingHttpHeaders = { ...(typeof body === 'object' && !Buffer.isBuffer(body) ? { 'content-type': 'application/json' } : {}), ...headers };
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, url), { method, headers: all, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: _object(text) });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** Sends a POST; see {@link send}. */
export function post(url: string, path: string, options: Omit<SendOptions, 'method'> = {}): Promise<Reply> {
  return send(url, path, { ...options, method: 'POST' });
}

function _object(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The content type of every JSON answer. */
export const JSON_TYPE = 'application/json; charset=utf-8';

/** Asserts the one error shape: `status`, JSON, `ok: false` and an `error` text (matching `pattern`, when given). */
export function assertError(reply: Reply, status: number, pattern?: RegExp): void {
  assert.equal(reply.status, status, reply.text);
  assert.equal(reply.headers['content-type'], JSON_TYPE);
  assert.equal(reply.body['ok'], false);
  assert.equal(typeof reply.body['error'], 'string');
  if (pattern !== undefined) assert.match(String(reply.body['error']), pattern);
}
