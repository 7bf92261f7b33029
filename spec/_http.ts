import assert from 'node:assert/strict';
import { type IncomingHttpHeaders, type OutgoingHttpHeaders, request } from 'node:http';
import { connect } from 'node:net';

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
  const all: OutgoingHttpHeaders = {
    ...(typeof body === 'object' && !Buffer.isBuffer(body) ? { 'content-type': 'application/json' } : {}),
    ...headers,
  };
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
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
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

/**
 * Sends `count` requests (`request(i)`, raw HTTP/1.1 text) over `sockets` connections, each with
 * up to `depth` pipelined at once (a server may refuse deeper pipelines: Deno's resets them): what
 * a flood looks like, and many times faster than a client that waits for each answer. Resolves
 * with the answers' statuses tallied, once every request is answered.
 */
export async function flood(
  url: string,
  count: number,
  request: (i: number) => string,
  sockets = 8,
  depth = 32,
): Promise<Map<number, number>> {
  const { port } = new URL(url);
  const statuses = new Map<number, number>();
  await Promise.all(
    Array.from({ length: sockets }, (_, s) => {
      const mine: string[] = [];
      for (let i = s; i < count; i += sockets) mine.push(request(i));
      return new Promise<void>((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.1');
        let carry = '';
        let got = 0;
        let sent = Math.min(depth, mine.length);
        socket.setEncoding('latin1');
        socket.on('data', (chunk: string) => {
          const text = carry + chunk;
          for (const match of text.matchAll(/HTTP\/1\.1 (\d{3}) /g)) {
            const status = Number(match[1]);
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
            got++;
          }
          // A status line cut by the chunk's end is found whole next time; one within the carry was counted already.
          carry = text.slice(-12);
          // Every answer is in: nothing more to read or say (an end() can meet a reset under Deno).
          if (got === mine.length) return void socket.destroy();
          const more = Math.min(got + depth, mine.length);
          if (more > sent) socket.write(mine.slice(sent, more).join(''));
          sent = Math.max(sent, more);
        });
        socket.on(
          'error',
          (
            error,
          ) => (got === mine.length
            ? resolve()
            : reject(new Error(`socket ${s}: ${got} of ${mine.length} answered: ${String(error)}`))),
        );
        socket.on(
          'close',
          () => (got === mine.length ? resolve() : reject(new Error(`socket ${s}: ${got} of ${mine.length} answered`))),
        );
        socket.write(mine.slice(0, sent).join(''));
      });
    }),
  );
  assert.equal([...statuses.values()].reduce((a, b) => a + b, 0), count);
  return statuses;
}
