import assert from 'node:assert/strict';
import { test } from 'node:test';
import { closedUrl, fake, json } from './_fake-server.ts';
import { until } from './_until.ts';
import {
  checkUrl,
  failure,
  httpBase,
  invalidOption,
  MAX_ANSWER_BYTES,
  parseJson,
  post,
  postJson,
  retryAfterMs,
  scrub,
} from '../lib/delivery/http-call.ts';

const NOW = Date.parse('2026-11-22T10:00:00Z');

test('post() sends the body as given and answers status, headers, text and parsed JSON', async (t) => {
  const server = await fake(t, (_req, res) => json(res, 201, { id: 'm1' }, { 'x-request-id': 'r1' }));
  const reply = await post(`${server.url}/send`, 'a=1', {
    fetch,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.equal(reply.ok, true);
  if (!reply.ok) return;
  assert.equal(reply.status, 201);
  assert.equal(reply.statusText, 'Created');
  assert.equal(reply.headers.get('x-request-id'), 'r1');
  assert.equal(reply.text, '{"id":"m1"}');
  assert.deepEqual(reply.json, { id: 'm1' });
  assert.equal(server.seen[0]?.method, 'POST');
  assert.equal(server.seen[0]?.url, '/send');
  assert.equal(server.seen[0]?.body, 'a=1');
  assert.equal(server.seen[0]?.headers['content-type'], 'application/x-www-form-urlencoded');
});

test('post() answers any status as an answer, and json undefined for a body that is not JSON', async (t) => {
  const server = await fake(
    t,
    (_req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<html>Bad gateway</html>'),
  );
  const reply = await post(server.url, '', { fetch });
  assert.equal(reply.ok && reply.status, 502);
  assert.equal(reply.ok && reply.text, '<html>Bad gateway</html>');
  assert.equal(reply.ok ? reply.json : 'no answer', undefined);
});

test('postJson() sends JSON with its content type, which a caller header replaces, as a plain header object', async (t) => {
  const server = await fake(t, (_req, res) => json(res, 200, {}));
  await postJson(server.url, { text: 'hi' }, { fetch, headers: { authorization: 'Bearer k' } });
  await postJson(server.url, { text: 'hi' }, { fetch, headers: { 'content-type': 'application/json; charset=utf-8' } });
  assert.equal(server.seen[0]?.body, '{"text":"hi"}');
  assert.equal(server.seen[0]?.headers['content-type'], 'application/json');
  assert.equal(server.seen[0]?.headers.authorization, 'Bearer k');
  assert.equal(server.seen[1]?.headers['content-type'], 'application/json; charset=utf-8');
  let init: RequestInit | undefined;
  await postJson('http://127.0.0.1:9', 1, { fetch: async (_url, given) => ((init = given), Response.json({})) });
  assert.deepEqual(init?.headers, { 'content-type': 'application/json' });
  assert.equal(init?.signal, undefined);
});

test('post() never follows a redirect: the 3xx is the answer, and the address it names gets nothing', async (t) => {
  const elsewhere = await fake(t, (_req, res) => json(res, 200, { ok: true }));
  const server = await fake(t, (_req, res) => res.writeHead(307, { location: `${elsewhere.url}/moved` }).end());
  const reply = await post(`${server.url}/send`, 'secret message', { fetch, headers: { authorization: 'Bearer k' } });
  assert.equal(reply.ok && reply.status, 307);
  assert.equal(reply.ok && reply.headers.get('location'), `${elsewhere.url}/moved`);
  assert.deepEqual(elsewhere.seen, []);
});

// A fetch whose answers count the bytes their reader took from the connection.
function counting(): { fetch: typeof fetch; read: () => number } {
  let read = 0;
  const counted: typeof fetch = async (url, init) => {
    const response = await fetch(url, init);
    const body = response.body?.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform: (chunk, out) => ((read += chunk.byteLength), out.enqueue(chunk)),
      }),
    );
    return new Response(body, { status: response.status, headers: response.headers });
  };
  return { fetch: counted, read: () => read };
}

// An answer of `total` bytes, sent as fast as the client takes it, with or without a Content-Length.
function flood(total: number, declared: boolean): { handler: Parameters<typeof fake>[1]; sent: () => number } {
  let sent = 0;
  const chunk = Buffer.alloc(64 * 1024, 'x');
  const handler: Parameters<typeof fake>[1] = (_req, res) => {
    res.writeHead(200, declared ? { 'content-length': String(total) } : {});
    const more = () => {
      while (sent < total && !res.destroyed) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      res.end();
    };
    res.on('error', () => {});
    more();
  };
  return { handler, sent: () => sent };
}

test('post() reads an answer up to the cap and no further: a 64 MiB answer fails as too large after about 8 MiB', async (t) => {
  for (const declared of [false, true]) {
    const sender = flood(64 * 1024 * 1024, declared);
    const server = await fake(t, sender.handler);
    const reader = counting();
    const reply = await post(server.url, '', { fetch: reader.fetch });
    assert.deepEqual(reply, {
      ok: false,
      kind: 'too-large',
      message: `the answer (HTTP 200) is larger than ${MAX_ANSWER_BYTES} bytes; it was not read past them`,
    });
    // One chunk past the cap at most; a declared length past it is refused before any of it is read.
    assert.ok(reader.read() <= MAX_ANSWER_BYTES + 1024 * 1024, `read ${reader.read()} bytes`);
    if (declared) assert.equal(reader.read(), 0);
    assert.ok(sender.sent() < 64 * 1024 * 1024, `the sender got to send ${sender.sent()} bytes`);
  }
});

test('post() takes a smaller cap from its caller, and reads an answer of exactly the cap whole', async (t) => {
  const server = await fake(t, (_req, res) => res.writeHead(200).end('x'.repeat(100)));
  const whole = await post(server.url, '', { fetch, maxAnswerBytes: 100 });
  assert.equal(whole.ok && whole.text.length, 100);
  const over = await post(server.url, '', { fetch, maxAnswerBytes: 99 });
  assert.equal(!over.ok && over.kind, 'too-large');
});

test('post() answers a refused connection as a network failure that says why', async () => {
  const reply = await post(await closedUrl(), '', { fetch });
  assert.equal(reply.ok, false);
  assert.equal(!reply.ok && reply.kind, 'network');
  assert.ok(!reply.ok && reply.message !== '');
});

test('post() words a thrown error with its cause, and a thrown value or a bare Error as they print', async () => {
  const thrown = (value: unknown) => post('http://127.0.0.1:9', '', { fetch: () => Promise.reject(value) });
  const refused = new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:9') });
  assert.deepEqual(await thrown(refused), {
    ok: false,
    kind: 'network',
    message: 'fetch failed: connect ECONNREFUSED 127.0.0.1:9',
  });
  assert.deepEqual(await thrown(new Error('socket hang up', { cause: 'not an Error' })), {
    ok: false,
    kind: 'network',
    message: 'socket hang up',
  });
  assert.deepEqual(await thrown('boom'), { ok: false, kind: 'network', message: 'boom' });
  assert.deepEqual(await thrown(new Error('')), { ok: false, kind: 'network', message: 'Error' });
  // Node's fetch quotes the URL it refuses; the user:password in it is not repeated.
  const quoted = new TypeError(
    'Request cannot be constructed from a URL that includes credentials: https://bob:pw@h.test/x',
  );
  assert.deepEqual(await thrown(quoted), {
    ok: false,
    kind: 'network',
    message: 'Request cannot be constructed from a URL that includes credentials: https://[redacted]@h.test/x',
  });
});

test('post() answers aborted when the signal has fired, and passes the signal on', async (t) => {
  const server = await fake(t, () => {});
  const controller = new AbortController();
  const pending = post(server.url, '', { fetch, signal: controller.signal });
  await until('the fake to read the request', () => server.seen.length > 0);
  controller.abort();
  const reply = await pending;
  assert.equal(!reply.ok && reply.kind, 'aborted');
  assert.equal((await post(server.url, '', { fetch, signal: AbortSignal.abort() })).ok, false);
  assert.equal(server.seen.length, 1);
});

test('parseJson() parses JSON and answers undefined for anything else', () => {
  assert.deepEqual(parseJson('{"a":[1]}'), { a: [1] });
  assert.equal(parseJson('null'), null);
  assert.equal(parseJson(''), undefined);
  assert.equal(parseJson('<html>'), undefined);
});

test('retryAfterMs() prefers seconds from the body, rounded up, over any header', () => {
  const headers = new Headers({ 'retry-after-ms': '100', 'retry-after': '9' });
  assert.equal(retryAfterMs(headers, NOW, 1.2345), 1235);
  assert.equal(retryAfterMs(headers, NOW, 0), 0);
});

test('retryAfterMs() ignores a body hint that is not a finite non-negative number', () => {
  const headers = new Headers({ 'retry-after': '9' });
  for (const hint of [-1, Number.POSITIVE_INFINITY, Number.NaN, '5', null, undefined]) {
    assert.equal(retryAfterMs(headers, NOW, hint), 9000, String(hint));
  }
});

test('retryAfterMs() reads retry-after-ms before Retry-After, and skips one it cannot use', () => {
  assert.equal(retryAfterMs(new Headers({ 'retry-after-ms': '250', 'retry-after': '9' }), NOW), 250);
  assert.equal(retryAfterMs(new Headers({ 'retry-after-ms': '-5', 'retry-after': '9' }), NOW), 9000);
  assert.equal(retryAfterMs(new Headers({ 'retry-after-ms': 'soon', 'retry-after': '9' }), NOW), 9000);
});

test('retryAfterMs() reads Retry-After as seconds or as an HTTP date against now, and answers undefined without one', () => {
  assert.equal(retryAfterMs(new Headers({ 'retry-after': '3' }), NOW), 3000);
  assert.equal(retryAfterMs(new Headers({ 'retry-after': new Date(NOW + 4000).toUTCString() }), NOW), 4000);
  assert.equal(retryAfterMs(new Headers(), NOW), undefined);
});

test('failure() leaves retryAfterMs out when there is none', () => {
  assert.deepEqual(failure('HTTP 400', false), { ok: false, retryable: false, message: 'HTTP 400' });
  assert.deepEqual(failure('HTTP 429', true, undefined), { ok: false, retryable: true, message: 'HTTP 429' });
  assert.ok(!('retryAfterMs' in failure('HTTP 429', true)));
  assert.deepEqual(failure('HTTP 429', true, 0), { ok: false, retryable: true, message: 'HTTP 429', retryAfterMs: 0 });
});

test('scrub() masks each secret as it is, URL-encoded and form-encoded', () => {
  const secret = 'p@ss word/+';
  const text = `raw ${secret} path ${encodeURIComponent(secret)} query ?password=${
    new URLSearchParams({ p: secret }).toString().slice(2)
  }`;
  assert.equal(scrub(text, [secret]), 'raw [redacted] path [redacted] query ?password=[redacted]');
});

test('scrub() masks every secret given, skips empty or missing ones, and takes another mask', () => {
  assert.equal(scrub('a-key and b-key', ['a-key', undefined, '', 'b-key']), '[redacted] and [redacted]');
  assert.equal(scrub('/bot123:abc/send', ['123:abc'], '<token>'), '/bot<token>/send');
  assert.equal(scrub('nothing to hide', []), 'nothing to hide');
});

test('httpBase() answers an http(s) URL without trailing slashes', () => {
  assert.deepEqual(httpBase('https://api.example.test/v1//'), { ok: true, base: 'https://api.example.test/v1' });
  assert.deepEqual(httpBase('http://127.0.0.1:8080'), { ok: true, base: 'http://127.0.0.1:8080' });
});

test('httpBase() says why anything else is not a base', () => {
  assert.deepEqual(httpBase('not a url'), { ok: false, reason: '"not a url" is not a URL' });
  assert.deepEqual(httpBase(42), { ok: false, reason: '42 is not a URL' });
  assert.deepEqual(httpBase('ftp://example.test'), { ok: false, reason: 'ftp: is not http: or https:' });
});

test('checkUrl() answers the base, or throws the option TypeError with its rule and the value', () => {
  assert.equal(checkUrl('apiBase', 'https://slack.com/api/'), 'https://slack.com/api');
  assert.throws(() => checkUrl('apiBase', 'slack.com/api'), {
    name: 'TypeError',
    message: 'Invalid option apiBase: must be an http(s) URL, got "slack.com/api"',
  });
  assert.throws(() => checkUrl('url', 'file:///tmp/sock', 'must be the http(s) URL of the daemon'), {
    name: 'TypeError',
    message: 'Invalid option url: must be the http(s) URL of the daemon, got "file:///tmp/sock"',
  });
});

test('invalidOption() names the option and its rule', () => {
  const error = invalidOption('fetch', 'must be a function');
  assert.ok(error instanceof TypeError);
  assert.equal(error.message, 'Invalid option fetch: must be a function');
});

test('scrub() masks a secret in base64 (at any byte offset, base64url too) and hex in either case', () => {
  const secret = 'sk-live-0123456789abcdef';
  const basic = Buffer.from(`user:${secret}`).toString('base64');
  for (const skip of ['', 'a', 'ab']) {
    const text = `got ${Buffer.from(skip + secret).toString('base64')} and ${
      Buffer.from(skip + secret).toString('base64url')
    }`;
    const masked = scrub(text, [secret]);
    assert.match(masked, /\[redacted\]/);
    assert.equal(
      masked.includes(Buffer.from(skip + secret).toString('base64').slice(4, 20)),
      false,
      `base64 behind ${skip.length} bytes`,
    );
  }
  assert.equal(scrub(`Basic ${basic}`, [secret]).includes(basic.slice(8, 24)), false);
  const hex = Buffer.from(secret).toString('hex');
  assert.equal(scrub(`lower ${hex} upper ${hex.toUpperCase()}`, [secret]), 'lower [redacted] upper [redacted]');
});

test('scrub() masks any leading part of a secret of at least 8 characters, and no shorter part', () => {
  const secret = 'sk-live-0123456789abcdef';
  assert.equal(scrub('invalid key sk-live-01234… given', [secret]), 'invalid key [redacted]… given');
  assert.equal(scrub('key sk-live-0 given', [secret]), 'key [redacted] given');
  assert.equal(scrub('key sk-live given', [secret]), 'key sk-live given');
  assert.equal(scrub(`url /v1?key=${encodeURIComponent(secret).slice(0, 10)}`, [secret]), 'url /v1?key=[redacted]');
});

test('scrub() masks a short secret wherever it appears whole, in any form', () => {
  const secret = 'pw+1';
  const text = `a ${secret} b ${encodeURIComponent(secret)} c ${Buffer.from(secret).toString('hex')}`;
  assert.equal(scrub(text, [secret]), 'a [redacted] b [redacted] c [redacted]');
});
