import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { errorAnswer, sendAnswer } from '../lib/edge/answer.ts';
import { ErrorCode, HttpError } from '../lib/errors.ts';
import { type AppHarness, startApp } from './_app.ts';
import { defer } from './_cleanup.ts';
import { until } from './_until.ts';

test('errorAnswer() tells the client the status, message, stable code and headers, and whether the connection ends', () => {
  const error = new HttpError(413, ErrorCode.BodyTooLarge, 'body: must be at most 10 bytes', {
    headers: { 'retry-after': '1' },
    close: true,
  });
  assert.deepEqual(errorAnswer(error), {
    status: 413,
    body: { ok: false, error: 'body: must be at most 10 bytes', code: 'ERR_BODY_TOO_LARGE' },
    headers: { 'retry-after': '1' },
    close: true,
  });
  assert.deepEqual(errorAnswer(new HttpError(401, ErrorCode.Unauthorized, 'missing hook token')), {
    status: 401,
    body: { ok: false, error: 'missing hook token', code: 'ERR_UNAUTHORIZED' },
    headers: {},
    close: false,
  });
});

// --- the Connection header follows the decision to end the connection ------------------------

const TOKEN = 'spec-hook-token-0123456789';
const MAX = 1024;

/** A connection the spec writes by hand, and the first answer's status line and headers as the client reads them. */
interface Raw {
  socket: Socket;
  /** The first answer's status and headers (names lower-cased), once its header block is in; null if the connection ended without one. */
  answer: Promise<{ status: number; headers: Record<string, string> } | null>;
  /** Settles when the server has ended its side of the connection. */
  ended: Promise<void>;
  /** Everything read so far. */
  read(): string;
}

async function raw(t: TestContext, url: string): Promise<Raw> {
  // allowHalfOpen: the spec decides when its side ends, so the server's end is seen as its own.
  const socket = connect({ host: '127.0.0.1', port: Number(new URL(url).port), allowHalfOpen: true });
  defer(t, () => socket.destroy());
  // The server may reset a connection it ended while the spec still writes to it.
  socket.on('error', () => {});
  let text = '';
  const ended = new Promise<void>((resolve) => socket.once('end', resolve).once('close', resolve));
  const answer = new Promise<{ status: number; headers: Record<string, string> } | null>((resolve) => {
    socket.on('data', (data: Buffer) => {
      text += data.toString('latin1');
      const head = text.indexOf('\r\n\r\n');
      if (head !== -1) resolve(_head(text.slice(0, head)));
    });
    void ended.then(() => resolve(null));
  });
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  return { socket, answer, ended, read: () => text };
}

function _head(block: string): { status: number; headers: Record<string, string> } {
  const [statusLine, ...lines] = block.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine ?? '')?.[1]), headers };
}

const head = (token: string, framing: string) =>
  `POST /hooks/wake HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n${framing}\r\n`;
const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;

function app(t: TestContext): Promise<AppHarness> {
  return startApp(t, { raw: { hooks: { maxBodyBytes: MAX } }, token: TOKEN, with: () => ({ bodyTimeoutMs: 200 }) });
}

/** Asserts the answer has `status`, says `Connection: close`, and the server then ends the connection. */
async function assertClosing(c: Raw, status: number): Promise<void> {
  const answer = await c.answer;
  assert.ok(answer !== null, 'an answer came');
  assert.equal(answer.status, status, c.read());
  assert.equal(answer.headers['connection'], 'close', c.read());
  assert.equal(answer.headers['keep-alive'], undefined);
  await c.ended;
}

test('a 413 to a Content-Length above maxBodyBytes says Connection: close, and the connection ends', async (t) => {
  const c = await raw(t, (await app(t)).url);
  c.socket.write(head(TOKEN, `Content-Length: ${MAX * 100}\r\n`));
  await assertClosing(c, 413);
});

test('a 413 to a streamed body that crosses maxBodyBytes says Connection: close, and the connection ends', async (t) => {
  const c = await raw(t, (await app(t)).url);
  c.socket.write(`${head(TOKEN, 'Transfer-Encoding: chunked\r\n')}${chunk('{"text":"')}${chunk(' '.repeat(MAX * 2))}`);
  await assertClosing(c, 413);
});

test('a 408 to a body that does not arrive in time says Connection: close, and the connection ends', async (t) => {
  const c = await raw(t, (await app(t)).url);
  c.socket.write(`${head(TOKEN, 'Content-Length: 100\r\n')}{"text":"`);
  await assertClosing(c, 408);
});

test('an early answer to a large or unbounded body it did not read says Connection: close, and the connection ends', async (t) => {
  const h = await app(t);
  const large = await raw(t, h.url);
  large.socket.write(head('wrong', `Content-Length: ${MAX * 100}\r\n`));
  await assertClosing(large, 401);
  const unbounded = await raw(t, h.url);
  unbounded.socket.write(`${head('wrong', 'Transfer-Encoding: chunked\r\n')}${chunk('{"text":"')}`);
  await assertClosing(unbounded, 401);
});

test("a body cut off by the client's end gets an answer that says Connection: close, if any, and the connection ends", async (t) => {
  const c = await raw(t, (await app(t)).url);
  c.socket.end(`${head(TOKEN, 'Content-Length: 100\r\n')}{"text":"`);
  const answer = await c.answer;
  await c.ended;
  // node:http answers the malformed request itself (400); Deno's ends the connection without an answer.
  if (answer !== null) assert.deepEqual([answer.status, answer.headers['connection']], [400, 'close'], c.read());
});

test('sendAnswer() says Connection: close for an HttpError that ends the connection (a body cut short), and the connection ends', async (t) => {
  const server = createServer((req, res) => {
    req.resume();
    req.once(
      'end',
      () =>
        sendAnswer(
          req,
          res,
          errorAnswer(new HttpError(400, ErrorCode.InvalidPayload, 'request body was cut short', { close: true })),
          'id-1',
          MAX,
        ),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  defer(t, () => new Promise<void>((resolve) => server.close(() => resolve())));
  const c = await raw(t, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  c.socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}');
  await assertClosing(c, 400);
});

test('an answer after which the connection stays open says keep-alive, and a second request is answered on it', async (t) => {
  const c = await raw(t, (await app(t)).url);
  // A wrong token with a small body: node:http reads the rest, so the connection can carry on.
  c.socket.write(`${head('wrong', 'Content-Length: 12\r\n')}{"text":"x"}`);
  const first = await c.answer;
  assert.deepEqual([first?.status, first?.headers['connection']], [401, 'keep-alive'], c.read());
  c.socket.write(`${head(TOKEN, 'Content-Length: 12\r\n')}{"text":"x"}`);
  await until('the second answer', () => /HTTP\/1\.1 200 [^]*\r\n\r\n\{"ok":true/.test(c.read()));
  assert.match(c.read(), /HTTP\/1\.1 200 [^]*[Cc]onnection: keep-alive/);
});
