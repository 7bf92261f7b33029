import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import type { ClientRequest, IncomingMessage, OutgoingHttpHeaders, Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { MAX_DEPTH, parseForm, parseJsonObject, readBody } from '../lib/guard/body.ts';
import type { BodyLimits } from '../lib/guard/body.ts';
import { HttpError } from '../lib/errors.ts';
import { sendAnswer } from '../lib/edge/answer.ts';

const CAP = 4_096;

interface _Answer {
  status: number;
  code?: string;
  body?: unknown;
}

// A server whose handler reads and parses the body, then answers through the edge's own sendAnswer:
// the parsed object with 200, or the HttpError's status (ending the connection when the error asks
// for it, after the answer is out, as the server does: a reset at once could wipe the answer from a
// client still sending).
// `answered` resolves with each answer as the handler gives it, for requests whose client is gone.
async function withServer(
  limits: BodyLimits,
  fn: (port: number, answered: () => Promise<_Answer>) => Promise<void>,
): Promise<void> {
  const waiting: ((answer: _Answer) => void)[] = [];
  const given: _Answer[] = [];
  const record = (answer: _Answer) => {
    const next = waiting.shift();
    if (next === undefined) given.push(answer);
    else next(answer);
  };
  const server: Server = createServer((req, res) => {
    readBody(req, limits)
      .then(parseJsonObject)
      .then(
        (body) => ({ status: 200, body }),
        (error: unknown) => {
          if (!(error instanceof HttpError)) return { status: 500, code: String(error) };
          return { status: error.status, code: error.code, close: error.close };
        },
      )
      .then(({ close, ...answer }: _Answer & { close?: boolean }) => {
        record(answer);
        sendAnswer(
          req,
          res,
          { status: answer.status, body: answer, ...(close === true ? { close } : {}) },
          'spec',
          limits.maxBytes,
        );
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const answered = () => {
    const first = given.shift();
    return first !== undefined ? Promise.resolve(first) : new Promise<_Answer>((resolve) => waiting.push(resolve));
  };
  try {
    await fn((server.address() as AddressInfo).port, answered);
  } finally {
    server.closeAllConnections?.();
    await new Promise((resolve) => server.close(resolve));
  }
}

// Opens a POST whose body the caller writes; the returned promise settles with the response.
function open(port: number, headers: OutgoingHttpHeaders = {}): { req: ClientRequest; response: Promise<_Answer> } {
  const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/hooks/wake', headers });
  // The server may close while the client still writes; only the response matters.
  req.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') throw error;
  });
  const response = new Promise<_Answer>((resolve, reject) => {
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as _Answer));
      res.on('error', reject);
    });
  });
  return { req, response };
}

async function post(port: number, body: string | Buffer): Promise<_Answer> {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const { req, response } = open(port, { 'content-length': String(bytes.length) });
  req.end(bytes);
  return response;
}

const limits: BodyLimits = { maxBytes: CAP, timeoutMs: 10_000 };

test('readBody() answers 413 for a Content-Length above the cap without reading the body', async () => {
  await withServer(limits, async (port) => {
    const { req, response } = open(port, { 'content-length': String(64 * 1024 * 1024) });
    // Only the headers go out: the answer cannot depend on the body.
    req.flushHeaders();
    assert.deepEqual(await response, { status: 413, code: 'ERR_BODY_TOO_LARGE' });
    req.destroy();
  });
});

test('readBody() answers 413 as soon as a streamed body crosses the cap', async () => {
  await withServer(limits, async (port) => {
    // A raw socket reads while it writes, as curl does; an HTTP client may hold the answer until its body is sent.
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    let reply = '';
    socket.on('data', (d: Buffer) => (reply += d.toString('latin1')));
    socket.on('error', () => {}); // the server may reset the connection once it has answered
    socket.write('POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n');
    let sent = 0;
    const chunk = `400\r\n${' '.repeat(1_024)}\r\n`;
    // Keep sending, never ending the body: the 413 must come while the client is still writing.
    while (!reply.includes('\r\n\r\n') && !socket.destroyed && sent < 64 * 1024 * 1024) {
      socket.write(chunk);
      sent += 1_024;
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    assert.match(reply, /^HTTP\/1\.1 413 /);
    assert.ok(sent > CAP, 'the cap was crossed');
    assert.ok(sent < 1024 * 1024, `the answer came while the client was still sending (${sent} bytes sent)`);
    socket.destroy();
  });
});

test('readBody() answers 408 when the body stalls past timeoutMs', async () => {
  await withServer({ maxBytes: CAP, timeoutMs: 200 }, async (port) => {
    const { req, response } = open(port, { 'content-length': '100' });
    req.write('{"text":');
    assert.deepEqual(await response, { status: 408, code: 'ERR_BODY_TIMEOUT' });
    req.destroy();
  });
});

test('readBody() rejects with 400 when the client goes away mid-body', async () => {
  await withServer(limits, async (port, answered) => {
    const { req } = open(port, { 'content-length': '100' });
    // Once the bytes are on the wire the connection goes; TCP delivers them before the close.
    req.write('{"text":', () => req.destroy());
    assert.deepEqual(await answered(), { status: 400, code: 'ERR_INVALID_PAYLOAD' });
  });
});

test('readBody() rejects with 400 when the request stream fails', async () => {
  // A socket error surfaces as a stream error; a bare stream stands in for the request here.
  const req = Object.assign(new PassThrough(), { headers: {} }) as unknown as IncomingMessage;
  const reading = readBody(req, limits);
  req.emit('error', new Error('read ECONNRESET'));
  await assert.rejects(reading, { name: 'HttpError', status: 400, code: 'ERR_INVALID_PAYLOAD', close: true });
});

test('readBody() accepts a body of exactly the cap', async () => {
  await withServer(limits, async (port) => {
    const prefix = '{"text":"';
    const body = `${prefix}${'a'.repeat(CAP - prefix.length - 2)}"}`;
    assert.equal(Buffer.byteLength(body), CAP);
    const answer = await post(port, body);
    assert.equal(answer.status, 200);
    assert.equal((answer.body as { text: string }).text.length, CAP - prefix.length - 2);
  });
});

test('readBody() reads a chunked body under the cap', async () => {
  await withServer(limits, async (port) => {
    const { req, response } = open(port, { 'transfer-encoding': 'chunked' });
    req.write('{"text":');
    req.end('"hi"}');
    assert.deepEqual(await response, { status: 200, body: { text: 'hi' } });
  });
});

test('parseJsonObject() answers 400 for invalid JSON, invalid UTF-8, an empty body and non-objects', async () => {
  await withServer(limits, async (port) => {
    const cases: [string, string | Buffer][] = [
      ['invalid JSON', '{"text":'],
      ['invalid UTF-8', Buffer.concat([Buffer.from('{"text":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')])],
      ['empty body', ''],
      ['array', '[1,2]'],
      ['string', '"text"'],
      ['number', '42'],
      ['null', 'null'],
    ];
    for (const [name, body] of cases) {
      assert.deepEqual(await post(port, body), { status: 400, code: 'ERR_INVALID_JSON' }, name);
    }
  });
});

test('parseJsonObject() returns the object of a valid UTF-8 JSON body', () => {
  assert.deepEqual(parseJsonObject(Buffer.from('{"text":"héllo ✓","n":[1]}')), { text: 'héllo ✓', n: [1] });
});

test('parseJsonObject() names the rule in its message', () => {
  assert.throws(() => parseJsonObject(Buffer.from('[]')), {
    name: 'HttpError',
    status: 400,
    message: 'body: must be a JSON object',
  });
  assert.throws(() => parseJsonObject(Buffer.from('{')), {
    name: 'HttpError',
    status: 400,
    message: 'body: must be valid JSON (UTF-8)',
  });
});

test('parseJsonObject() accepts nesting up to MAX_DEPTH and answers 400 naming the limit past it', () => {
  const nest = (levels: number) => '{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1);
  assert.equal(MAX_DEPTH, 64);
  assert.doesNotThrow(() => parseJsonObject(Buffer.from(nest(MAX_DEPTH))));
  const refused = {
    name: 'HttpError',
    status: 400,
    message: 'body: may nest objects and arrays at most 64 levels deep',
  };
  assert.throws(() => parseJsonObject(Buffer.from(nest(MAX_DEPTH + 1))), refused);
  assert.throws(() => parseJsonObject(Buffer.from(`{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`)), refused);
  // The tightest body one level too deep (short bodies are not walked, so this pins the bound).
  const tightest = `{"":${'['.repeat(MAX_DEPTH)}${']'.repeat(MAX_DEPTH)}}`;
  assert.equal(tightest.length, 2 * (MAX_DEPTH + 1) + 3);
  assert.throws(() => parseJsonObject(Buffer.from(tightest)), refused);
  assert.doesNotThrow(() =>
    parseJsonObject(Buffer.from(`{"":${'['.repeat(MAX_DEPTH - 1)}${']'.repeat(MAX_DEPTH - 1)}}`))
  );
});

test('parseJsonObject() and parseForm() decode each body on its own: a body cut inside a character does not spill into the next', () => {
  const cut = Buffer.from('{"a":"€"}').subarray(0, 8);
  assert.throws(() => parseJsonObject(cut), { status: 400 });
  assert.deepEqual(parseJsonObject(Buffer.from('{"a":"€"}')), { a: '€' });
  assert.throws(() => parseForm(Buffer.from('a=€').subarray(0, 3)), { status: 400 });
  assert.deepEqual(parseForm(Buffer.from('a=€')), { a: '€' });
});
