import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { type ServerResponse, STATUS_CODES } from 'node:http';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { fake, type Handler, json } from './_fake-server.ts';
import { createBlueBubblesAdapter, createImsgAdapter } from '../lib/delivery/imessage.ts';
import { addAdapterTests, addHttpAdapterTests } from './_adapter-contract.ts';
import { tempDir } from './_dir.ts';
import { until } from './_until.ts';

const PASSWORD = 'hunter2 & p@ss=word/+';
const FRIEND = '+15551234567';
const BROKEN = '+15550000500';
const GROUP_GUID = 'iMessage;+;chat123456789';
const MESSAGE_GUID = 'p:0/5A1B2C3D-0000-4000-8000-00000000CAFE';

function bbError(res: ServerResponse, status: number, message: string, type: string, detail: string): void {
  json(res, status, { status, message, error: { type, message: detail } });
}

// BlueBubbles server: password in the query, messageValidator's rules, its success and error shapes.
const blueBubbles: Handler = (req, res) => {
  const url = new URL(req.url, 'http://x');
  if (req.method !== 'POST' || url.pathname !== '/api/v1/message/text') {
    return bbError(res, 404, 'Not Found', 'Not Found', 'Route not found');
  }
  const password = url.searchParams.get('password') ?? url.searchParams.get('guid') ?? url.searchParams.get('token');
  if (password === null) return bbError(res, 401, 'Unauthorized', 'Authentication Error', 'Missing server password!');
  if (password !== PASSWORD) return bbError(res, 401, 'Unauthorized', 'Authentication Error', 'Invalid password!');
  const body = JSON.parse(req.body) as Record<string, unknown>;
  const chatGuid = body['chatGuid'];
  if (typeof chatGuid !== 'string' || !chatGuid.includes(';')) {
    return bbError(res, 400, 'Bad Request', 'Validation Error', 'The chatGuid field is required.');
  }
  if (typeof body['message'] !== 'string') {
    return bbError(res, 400, 'Bad Request', 'Validation Error', 'The message field is required.');
  }
  const method = body['method'] ?? 'apple-script';
  if (method !== 'apple-script' && method !== 'private-api') {
    return bbError(res, 400, 'Bad Request', 'Validation Error', 'The selected method is invalid.');
  }
  if (method === 'apple-script' && typeof body['tempGuid'] !== 'string') {
    return bbError(res, 400, 'Bad Request', 'Validation Error', 'A tempGuid is required when sending via AppleScript.');
  }
  if (chatGuid === `iMessage;-;${BROKEN}`) {
    return bbError(res, 500, 'Message Send Error', 'iMessage Error', 'Message failed to send!');
  }
  json(res, 200, {
    status: 200,
    message: 'Message sent!',
    data: {
      guid: MESSAGE_GUID,
      tempGuid: body['tempGuid'],
      text: body['message'],
      dateCreated: 1_700_000_000_000,
      isFromMe: true,
      error: 0,
    },
  });
};

// Both ways to Messages.app reach the same people.
const RECIPIENTS = {
  good: [
    FRIEND,
    'jane@example.com',
    GROUP_GUID,
    'iMessage;-;+15551234567',
    'SMS;-;+15551234567',
    'any;-;jane@example.com',
  ],
  bad: [
    'jane',
    '5551234567',
    '(555) 123-4567',
    'jane@localhost',
    'iMessage;+;',
    'Telegram;-;+15551234567',
    'iMessage;-;a b',
    '',
  ],
  expected: 'a phone number in E.164, an email address or a chat guid such as iMessage;+;chat123456789',
};

addHttpAdapterTests('blueBubblesAdapter', {
  name: 'iMessage',
  service: 'BlueBubbles',
  channel: 'imessage',
  maxLength: 4000,
  recipients: RECIPIENTS,
  make: (serverUrl, fetch) =>
    createBlueBubblesAdapter({ serverUrl, password: PASSWORD, ...(fetch === undefined ? {} : { fetch }) }),
  url: { option: 'serverUrl', rule: 'must be the http(s) URL of the BlueBubbles server' },
  platform: () => blueBubbles,
  refuse: (res, status, text, headers) =>
    json(res, status, { status, message: STATUS_CODES[status], error: { type: 'Error', message: text } }, headers),
  says: (status, text) => `BlueBubbles answered ${status} Error: ${STATUS_CODES[status]}: ${text}`,
  unreachable: 'Cannot reach the BlueBubbles server: ',
  secret: { value: PASSWORD, mask: '[redacted]' },
});

test('createBlueBubblesAdapter() refuses a serverUrl without its scheme, an empty password and an unknown method, without echoing the password', () => {
  assert.throws(
    () => createBlueBubblesAdapter({ serverUrl: 'bluebubbles.local:1234', password: PASSWORD }),
    (error: Error) => {
      assert.ok(error instanceof TypeError);
      assert.match(error.message, /^Invalid option serverUrl: /);
      assert.ok(!error.message.includes(PASSWORD));
      return true;
    },
  );
  assert.throws(() => createBlueBubblesAdapter({ serverUrl: 'http://127.0.0.1:1234', password: '' }), {
    name: 'TypeError',
    message: /^Invalid option password: /,
  });
  assert.throws(
    () =>
      createBlueBubblesAdapter({
        serverUrl: 'http://127.0.0.1:1234',
        password: PASSWORD,
        method: 'shortcut' as 'apple-script',
      }),
    {
      name: 'TypeError',
      message: 'Invalid option method: must be apple-script or private-api, got "shortcut"',
    },
  );
});

test('blueBubblesAdapter.send() posts chatGuid, tempGuid, message and method with the password in the query, and returns data.guid', async (t) => {
  const server = await fake(t, blueBubbles);
  const adapter = createBlueBubblesAdapter({ serverUrl: `${server.url}/`, password: PASSWORD });
  assert.deepEqual(await adapter.send(FRIEND, 'Dinner at 8?'), { ok: true, value: { messageIds: [MESSAGE_GUID] } });
  assert.deepEqual(await adapter.send('jane@example.com', 'and you'), {
    ok: true,
    value: { messageIds: [MESSAGE_GUID] },
  });
  assert.deepEqual(await adapter.send(GROUP_GUID, 'all of you'), { ok: true, value: { messageIds: [MESSAGE_GUID] } });
  const [phone, email, group] = server.seen;
  assert.equal(phone?.method, 'POST');
  const url = new URL(phone?.url ?? '', 'http://x');
  assert.equal(url.pathname, '/api/v1/message/text');
  assert.deepEqual([...url.searchParams], [['password', PASSWORD]]);
  assert.equal(phone?.headers['content-type'], 'application/json');
  const body = JSON.parse(phone?.body ?? '') as Record<string, unknown>;
  assert.match(String(body['tempGuid']), /^temp-[0-9a-f-]{36}$/);
  assert.deepEqual({ ...body, tempGuid: 't' }, {
    chatGuid: `iMessage;-;${FRIEND}`,
    tempGuid: 't',
    message: 'Dinner at 8?',
    method: 'apple-script',
  });
  assert.equal(JSON.parse(email?.body ?? '').chatGuid, 'iMessage;-;jane@example.com');
  assert.equal(JSON.parse(group?.body ?? '').chatGuid, GROUP_GUID);
  assert.notEqual(JSON.parse(email?.body ?? '').tempGuid, body['tempGuid']);
});

test('blueBubblesAdapter.send() uses the configured private-api method and succeeds without ids when data has no guid', async (t) => {
  const server = await fake(t, (_req, res) => json(res, 200, { status: 200, message: 'Message sent!', data: null }));
  const adapter = createBlueBubblesAdapter({ serverUrl: server.url, password: PASSWORD, method: 'private-api' });
  assert.deepEqual(await adapter.send(FRIEND, 'hi'), { ok: true, value: { messageIds: [] } });
  assert.equal(JSON.parse(server.seen[0]?.body ?? '').method, 'private-api');
});

test('blueBubblesAdapter.send() retries a 500 send error and fails permanently on a wrong password, without the password in the message', async (t) => {
  const server = await fake(t, blueBubbles);
  const adapter = createBlueBubblesAdapter({ serverUrl: server.url, password: PASSWORD });
  assert.deepEqual(await adapter.send(BROKEN, 'hi'), {
    ok: false,
    retryable: true,
    message: 'BlueBubbles answered 500 iMessage Error: Message Send Error: Message failed to send!',
  });
  const wrong = createBlueBubblesAdapter({ serverUrl: server.url, password: 'guess' });
  assert.deepEqual(await wrong.send(FRIEND, 'hi'), {
    ok: false,
    retryable: false,
    message: 'BlueBubbles answered 401 Authentication Error: Unauthorized: Invalid password!',
  });
});

test('blueBubblesAdapter.send() scrubs the password from any echo of the request URL, raw or encoded', async (t) => {
  let mode: 'echo' | 'sparse' | 'limited' = 'echo';
  const server = await fake(t, (req, res) => {
    if (mode === 'echo') {
      return void res.writeHead(404, { 'content-type': 'text/html' }).end(
        `Cannot POST ${req.url} (password ${PASSWORD})`,
      );
    }
    if (mode === 'sparse') return json(res, 400, { status: 400, error: { error: 'The message field is required.' } });
    json(res, 429, { status: 429, message: 'Too Many Requests' }, { 'retry-after': '2' });
  });
  const adapter = createBlueBubblesAdapter({ serverUrl: `${server.url}/bb`, password: PASSWORD });
  const echoed = await adapter.send(FRIEND, 'hi');
  assert.equal(!echoed.ok && echoed.retryable, false);
  const message = !echoed.ok ? echoed.message : '';
  for (
    const form of [PASSWORD, encodeURIComponent(PASSWORD), new URLSearchParams({ p: PASSWORD }).toString().slice(2)]
  ) assert.ok(!message.includes(form), message);
  assert.equal(
    message,
    'BlueBubbles answered HTTP 404: Cannot POST /bb/api/v1/message/text?password=[redacted] (password [redacted])',
  );
  mode = 'sparse';
  assert.deepEqual(await adapter.send(FRIEND, 'hi'), {
    ok: false,
    retryable: false,
    message: 'BlueBubbles answered 400 Error: The message field is required.',
  });
  mode = 'limited';
  assert.deepEqual(await adapter.send(FRIEND, 'hi'), {
    ok: false,
    retryable: true,
    message: 'BlueBubbles answered 429 Too Many Requests',
    retryAfterMs: 2000,
  });
});

// A stand-in for steipete/imsg: the same flag grammar (values attached with `=` or as the next
// argument, where a next argument starting with `-` is an option, not a value), the same output.
const IMSG = `#!/usr/bin/env node
const { appendFileSync } = require('node:fs');
const { join } = require('node:path');
const argv = process.argv.slice(2);
appendFileSync(join(__dirname, 'calls.jsonl'), JSON.stringify(argv) + '\\n');
const fail = (message) => { process.stderr.write(message + '\\n'); process.exit(1); };
if (argv[0] !== 'send') fail('Error: Unknown command');
const options = {};
const flags = new Set();
for (let i = 1; i < argv.length; i++) {
  const arg = argv[i];
  if (!arg.startsWith('--')) fail('Error: Unexpected argument ' + arg);
  const eq = arg.indexOf('=');
  const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
  if (name === 'json') { flags.add(name); continue; }
  if (!['to', 'chat-id', 'chat-identifier', 'chat-guid', 'text', 'file', 'service', 'region'].includes(name)) fail('Error: Unknown option --' + name);
  if (eq !== -1) { options[name] = arg.slice(eq + 1); continue; }
  const next = argv[++i];
  if (next === undefined || next.startsWith('-')) fail('Error: Missing value for option --' + name);
  options[name] = next;
}
const targets = ['to', 'chat-id', 'chat-identifier', 'chat-guid'].filter((k) => options[k] !== undefined);
if (targets.length !== 1) fail('Error: Invalid value for option --to');
if (!options.text && !options.file) fail('Error: Missing required option: text or file');
if (options.text === 'FAIL') fail('Error: Messages.app: Can\\u2019t get buddy id "+15550000500".');
if (options.text === 'QUIET') process.exit(3);
if (require('node:fs').existsSync(join(__dirname, 'hang'))) { setTimeout(() => {}, 60000); return; }
if (options.text === 'ODD') { process.stdout.write('{"status":"queued"}\\n'); process.exit(0); }
process.stdout.write(flags.has('json') ? '{"status":"sent"}\\n' : 'sent\\n');
`;

async function fakeImsg(
  t: TestContext,
): Promise<{ command: string; calls: () => Promise<string[][]>; hang: () => void }> {
  const dir = await tempDir(t, 'hooks-imsg-');
  const command = join(dir, 'imsg');
  // CommonJS so `require` and `__dirname` work whatever the nearest package.json says.
  await writeFile(join(dir, 'package.json'), '{"type":"commonjs"}');
  await writeFile(command, IMSG);
  await chmod(command, 0o755);
  const calls = async () => {
    const text = await readFile(join(dir, 'calls.jsonl'), 'utf8').catch(() => '');
    return text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as string[]);
  };
  // Written at once, so the run of the send that comes next sees it.
  return { command, calls, hang: () => writeFileSync(join(dir, 'hang'), '') };
}

addAdapterTests('imsgAdapter', {
  name: 'iMessage',
  channel: 'imessage',
  maxLength: 4000,
  recipients: RECIPIENTS,
  aborted: 'iMessage request aborted',
  async rig(t) {
    const imsg = await fakeImsg(t);
    let runs = 0;
    const counting =
      ((command: string, args: string[], options: object) => (runs++, spawn(command, args, options))) as typeof spawn;
    const hang = () => {
      imsg.hang();
      return until('imsg to start', async () => (await imsg.calls()).length > 0).then(() => undefined);
    };
    return { adapter: createImsgAdapter({ command: imsg.command, spawn: counting }), calls: () => runs, hang };
  },
});

test('createImsgAdapter() refuses an empty command and a spawn that is not a function', () => {
  assert.throws(() => createImsgAdapter({ command: '' }), {
    name: 'TypeError',
    message: 'Invalid option command: must be a non-empty string',
  });
  assert.throws(() => createImsgAdapter({ spawn: 'bash' as unknown as typeof spawn }), {
    name: 'TypeError',
    message: 'Invalid option spawn: must be a function',
  });
});

test('imsgAdapter.send() runs `imsg send --to=… --text=… --json` through the spawn it was given, and succeeds, without ids, when imsg reports sent', async (t) => {
  const imsg = await fakeImsg(t);
  const started: string[][] = [];
  const spawning = ((
    command: string,
    args: string[],
    options: object,
  ) => (started.push(args), spawn(command, args, options))) as typeof spawn;
  const adapter = createImsgAdapter({ command: imsg.command, spawn: spawning });
  assert.deepEqual(await adapter.send(FRIEND, 'Dinner at 8?'), { ok: true, value: { messageIds: [] } });
  assert.deepEqual(await adapter.send(GROUP_GUID, 'all of you'), { ok: true, value: { messageIds: [] } });
  const calls = [
    ['send', `--to=${FRIEND}`, '--text=Dinner at 8?', '--json'],
    ['send', `--chat-guid=${GROUP_GUID}`, '--text=all of you', '--json'],
  ];
  assert.deepEqual(await imsg.calls(), calls);
  assert.deepEqual(started, calls);
});

test('imsgAdapter.send() keeps a text that starts with a dash or holds = and newlines as the value of --text', async (t) => {
  const imsg = await fakeImsg(t);
  const text = '- first item\n- second = 2\n--json';
  assert.deepEqual(await createImsgAdapter({ command: imsg.command }).send('jane@example.com', text), {
    ok: true,
    value: { messageIds: [] },
  });
  assert.deepEqual(await imsg.calls(), [['send', '--to=jane@example.com', `--text=${text}`, '--json']]);
});

test('imsgAdapter.send() reads a run that ended of itself before the caller stopped it as any other: a message imsg reported sent is sent', async (t) => {
  const imsg = await fakeImsg(t);
  const stop = new AbortController();
  // The stop comes after imsg exited 0 and before its output closed: it ends nothing.
  const stopping = ((command: string, args: string[], options: object) => {
    const child = spawn(command, args, options);
    child.once('exit', () => stop.abort());
    return child;
  }) as typeof spawn;
  const adapter = createImsgAdapter({ command: imsg.command, spawn: stopping });
  assert.deepEqual(await adapter.send(FRIEND, 'Dinner at 8?', stop.signal), { ok: true, value: { messageIds: [] } });
  assert.equal(stop.signal.aborted, true);
});

test("imsgAdapter.send() fails permanently with imsg's trimmed stderr on a non-zero exit, or names the exit code when it said nothing", async (t) => {
  const imsg = await fakeImsg(t);
  const adapter = createImsgAdapter({ command: imsg.command });
  assert.deepEqual(await adapter.send(BROKEN, 'FAIL'), {
    ok: false,
    retryable: false,
    message: 'Error: Messages.app: Can’t get buddy id "+15550000500".',
  });
  assert.deepEqual(await adapter.send(FRIEND, 'QUIET'), {
    ok: false,
    retryable: false,
    message: `${imsg.command} send exited with 3`,
  });
  assert.deepEqual(await adapter.send(FRIEND, 'ODD'), {
    ok: false,
    retryable: false,
    message: `${imsg.command} send did not report the message sent: {"status":"queued"}`,
  });
});

test('imsgAdapter.send() fails permanently when imsg cannot be started', async (t) => {
  const imsg = await fakeImsg(t);
  const missing = `${imsg.command}-missing`;
  const result = await createImsgAdapter({ command: missing }).send(FRIEND, 'hi');
  assert.equal(!result.ok && result.retryable, false);
  assert.match(!result.ok ? result.message : '', /^Cannot run .*imsg-missing: .*ENOENT/);
  const throwing = await createImsgAdapter({
    spawn: (() => {
      throw new Error('spawn EACCES');
    }) as unknown as typeof spawn,
  }).send(FRIEND, 'hi');
  assert.deepEqual(throwing, { ok: false, retryable: false, message: 'Cannot run imsg: spawn EACCES' });
  assert.deepEqual(await imsg.calls(), []);
});
