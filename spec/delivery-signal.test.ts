import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fake, type Handler, json } from './_fake-server.ts';
import { createSignalAdapter } from '../lib/delivery/signal.ts';
import { addHttpAdapterTests } from './_adapter-contract.ts';

const ACCOUNT = '+15550000001';
const FRIEND = '+15550000002';
const RATE_LIMITED = '+15550000429';
const UNREGISTERED = '+15550000404';
const GROUP = Buffer.alloc(32, 7).toString('base64');
const TIMESTAMP = 1_700_000_000_123;

// What `signal-cli -a ACCOUNT daemon --http` does with /api/v1/rpc, per its HttpServerHandler and send command.
const signalCli: Handler = (req, res) => {
  if (req.url === '/api/v1/check') return void res.writeHead(req.method === 'GET' ? 200 : 405).end();
  if (req.url !== '/api/v1/rpc') return void res.writeHead(404).end();
  if (req.method !== 'POST') return void res.writeHead(405).end();
  if (!String(req.headers['content-type']).startsWith('application/json')) return void res.writeHead(415).end();
  let rpc: Record<string, unknown>;
  try {
    rpc = JSON.parse(req.body) as Record<string, unknown>;
  } catch {
    return json(res, 200, { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error', data: null }, id: null });
  }
  if (rpc['jsonrpc'] !== '2.0' || typeof rpc['method'] !== 'string') {
    return json(res, 200, {
      jsonrpc: '2.0',
      error: { code: -32600, message: 'method field must be set', data: null },
      id: rpc['id'] ?? null,
    });
  }
  if (rpc['id'] === undefined) return void res.writeHead(201).end();
  const reply = (body: object) => json(res, 200, { jsonrpc: '2.0', ...body, id: rpc['id'] });
  const error = (code: number, message: string, data: unknown = null) => reply({ error: { code, message, data } });
  if (rpc['method'] !== 'send') return error(-32601, 'Method not implemented');
  const params = rpc['params'] as Record<string, unknown>;
  if (params['account'] !== ACCOUNT) return error(-32602, 'Specified account does not exist');
  if (typeof params['message'] !== 'string' || params['message'] === '') {
    return error(-1, 'Send message failed: empty message');
  }
  const recipients = params['recipient'] === undefined ? [] : [params['recipient']].flat();
  if (recipients.some((r) => typeof r !== 'string' || !/^\+\d+$/.test(r))) return error(-1, 'Invalid phone number');
  if (params['groupId'] !== undefined && params['groupId'] !== GROUP) return error(-1, 'Invalid group id');
  if (recipients.length === 0 && params['groupId'] === undefined) return error(-1, 'No recipients given');
  const number = recipients[0];
  if (number === RATE_LIMITED) {
    return error(-5, 'Failed to send message due to rate limiting', {
      response: {
        timestamp: TIMESTAMP,
        results: [{ recipientAddress: { number }, type: 'RATE_LIMIT_FAILURE', retryAfterSeconds: 30 }],
      },
    });
  }
  if (number === UNREGISTERED) {
    return error(-1, 'Failed to send message', {
      response: { timestamp: TIMESTAMP, results: [{ recipientAddress: { number }, type: 'UNREGISTERED_FAILURE' }] },
    });
  }
  const results = recipients.map((r) => ({ recipientAddress: { uuid: 'a1b2', number: r }, type: 'SUCCESS' }));
  reply({
    result: {
      timestamp: TIMESTAMP,
      results: params['groupId'] === undefined
        ? results
        : [{ recipientAddress: { number: FRIEND }, type: 'SUCCESS', groupId: GROUP }],
    },
  });
};

addHttpAdapterTests('signalAdapter', {
  name: 'Signal',
  channel: 'signal',
  maxLength: 2000,
  recipients: {
    good: [FRIEND, '+15551234567', '+4915112345678', '+1234567', `group:${GROUP}`],
    bad: [
      '5551234',
      '15551234567',
      '+0555123456',
      '+123456',
      '+1234567890123456',
      '+1 555 123 4567',
      'group:',
      'group:not base64!',
      `group:${Buffer.alloc(16).toString('base64')}`,
      'u:alice.01',
    ],
    expected:
      'a phone number in E.164 (+ and 7 to 15 digits) or group:<base64 id of 32 bytes> as signal-cli listGroups prints it',
  },
  make: (url, fetch) => createSignalAdapter({ url, account: ACCOUNT, ...(fetch === undefined ? {} : { fetch }) }),
  url: { option: 'url', rule: 'must be the http(s) URL of the signal-cli daemon' },
  platform: () => signalCli,
  // signal-cli itself answers JSON-RPC at HTTP 200; any other status comes from a proxy in front of it.
  refuse: (res, status, text, headers) =>
    void res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(text),
  says: (status, text) => `signal-cli answered HTTP ${status}: ${text}`,
  unreachable: 'Cannot reach signal-cli: ',
  // Each part quoted from signal-cli is clipped on its own: 301 characters behind `signal-cli answered HTTP 400: `.
  clippedTo: 331,
});

test('createSignalAdapter() refuses a url without its scheme or not http(s), and an account that is not E.164', () => {
  assert.throws(() => createSignalAdapter({ url: 'localhost:8080', account: ACCOUNT }), {
    name: 'TypeError',
    message: /^Invalid option url: /,
  });
  assert.throws(() => createSignalAdapter({ url: 'ftp://127.0.0.1', account: ACCOUNT }), TypeError);
  assert.throws(() => createSignalAdapter({ url: 'http://127.0.0.1:8080', account: '15550000001' }), {
    name: 'TypeError',
    message: /^Invalid option account: must be an E\.164 number such as \+15551234567, got "15550000001"$/,
  });
});

test('signalAdapter.send() posts a JSON-RPC send with account, recipient and message, and returns the timestamp as the message id', async (t) => {
  const daemon = await fake(t, signalCli);
  const adapter = createSignalAdapter({ url: daemon.url, account: ACCOUNT });
  const result = await adapter.send(FRIEND, 'Hello from the hook');
  assert.deepEqual(result, { ok: true, value: { messageIds: [String(TIMESTAMP)] } });
  assert.equal(daemon.seen.length, 1);
  const [seen] = daemon.seen;
  assert.equal(seen?.method, 'POST');
  assert.equal(seen?.url, '/api/v1/rpc');
  assert.equal(seen?.headers['content-type'], 'application/json');
  const rpc = JSON.parse(seen?.body ?? '') as Record<string, unknown>;
  assert.equal(typeof rpc['id'], 'string');
  assert.deepEqual({ ...rpc, id: 'x' }, {
    jsonrpc: '2.0',
    method: 'send',
    params: { account: ACCOUNT, recipient: [FRIEND], message: 'Hello from the hook' },
    id: 'x',
  });
});

test('signalAdapter.send() sends group:<id> as groupId, and uses a fresh request id each time', async (t) => {
  const daemon = await fake(t, signalCli);
  const adapter = createSignalAdapter({ url: `${daemon.url}/`, account: ACCOUNT });
  assert.deepEqual(await adapter.send(`group:${GROUP}`, 'to the group'), {
    ok: true,
    value: { messageIds: [String(TIMESTAMP)] },
  });
  assert.deepEqual(await adapter.send(`group:${GROUP}`, 'again'), {
    ok: true,
    value: { messageIds: [String(TIMESTAMP)] },
  });
  const [first, second] = daemon.seen.map((s) => JSON.parse(s.body) as Record<string, unknown>);
  assert.equal(daemon.seen[0]?.url, '/api/v1/rpc');
  assert.deepEqual(first?.['params'], { account: ACCOUNT, groupId: GROUP, message: 'to the group' });
  assert.notEqual(first?.['id'], second?.['id']);
});

test("signalAdapter.send() fails permanently with signal-cli's words on a user error answered at HTTP 200", async (t) => {
  const daemon = await fake(t, signalCli);
  const refusals = [
    [ACCOUNT, UNREGISTERED, 'signal-cli error -1: Failed to send message'],
    ['+15559999999', FRIEND, 'signal-cli error -32602: Specified account does not exist'],
  ] as const;
  for (const [account, to, message] of refusals) {
    assert.deepEqual(await createSignalAdapter({ url: daemon.url, account }).send(to, 'hi'), {
      ok: false,
      retryable: false,
      message,
    });
  }
});
test('signalAdapter.send() retries rate limiting (error -5) after the longest retryAfterSeconds Signal gave', async (t) => {
  const daemon = await fake(t, signalCli);
  const adapter = createSignalAdapter({ url: daemon.url, account: ACCOUNT });
  assert.deepEqual(await adapter.send(RATE_LIMITED, 'hi'), {
    ok: false,
    retryable: true,
    message: 'signal-cli error -5: Failed to send message due to rate limiting',
    retryAfterMs: 30_000,
  });
});

test('signalAdapter.send() retries rate limiting without a wait when signal-cli gives no results', async (t) => {
  const daemon = await fake(t, (req, res) => {
    const { id } = JSON.parse(req.body) as { id: string };
    json(res, 200, {
      jsonrpc: '2.0',
      error: { code: -5, message: 'Failed to send message due to rate limiting', data: null },
      id,
    });
  });
  const result = await createSignalAdapter({ url: daemon.url, account: ACCOUNT }).send(FRIEND, 'hi');
  assert.deepEqual(result, {
    ok: false,
    retryable: true,
    message: 'signal-cli error -5: Failed to send message due to rate limiting',
  });
});

test('signalAdapter.send() fails permanently on a wrong path (404) or method/content-type refusals', async (t) => {
  const daemon = await fake(t, signalCli);
  const adapter = createSignalAdapter({ url: `${daemon.url}/signal`, account: ACCOUNT });
  assert.deepEqual(await adapter.send(FRIEND, 'hi'), {
    ok: false,
    retryable: false,
    message: 'signal-cli answered HTTP 404',
  });
  assert.equal(daemon.seen[0]?.url, '/signal/api/v1/rpc');
});

test('signalAdapter.send() fails permanently on an answer that is not JSON-RPC, lacks a result, or answers another id', async (t) => {
  let answer: (id: unknown) => string = () => '<html>proxy</html>';
  const daemon = await fake(t, (req, res) => {
    const { id } = JSON.parse(req.body) as { id: unknown };
    res.writeHead(200, { 'content-type': 'application/json' }).end(answer(id));
  });
  const adapter = createSignalAdapter({ url: daemon.url, account: ACCOUNT });
  assert.deepEqual(await adapter.send(FRIEND, 'hi'), {
    ok: false,
    retryable: false,
    message: 'signal-cli answered with something other than JSON-RPC: <html>proxy</html>',
  });
  answer = (id) => JSON.stringify({ jsonrpc: '2.0', id });
  assert.deepEqual(await adapter.send(FRIEND, 'hi'), {
    ok: false,
    retryable: false,
    message: 'signal-cli answered without a result',
  });
  answer = () => JSON.stringify({ jsonrpc: '2.0', result: { timestamp: 1 }, id: 'someone-else' });
  assert.deepEqual(await adapter.send(FRIEND, 'hi'), {
    ok: false,
    retryable: false,
    message: 'signal-cli answered a different JSON-RPC request id',
  });
  answer = (id) => JSON.stringify({ jsonrpc: '2.0', error: { code: 'odd' }, id });
  assert.deepEqual(await adapter.send(FRIEND, 'hi'), {
    ok: false,
    retryable: false,
    message: 'signal-cli error ?: no message',
  });
});

test('signalAdapter.send() succeeds without ids when signal-cli reports no timestamp, so the text is not sent twice', async (t) => {
  const daemon = await fake(t, (req, res) => {
    const { id } = JSON.parse(req.body) as { id: unknown };
    json(res, 200, { jsonrpc: '2.0', result: { results: [] }, id });
  });
  assert.deepEqual(await createSignalAdapter({ url: daemon.url, account: ACCOUNT }).send(FRIEND, 'hi'), {
    ok: true,
    value: { messageIds: [] },
  });
});
