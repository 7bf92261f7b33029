// The control channel's server in-process over a real unix socket in a temp state dir, spoken to
// byte by byte and through its client, callServer() (whose own tests are in cli-control.test.ts).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { callServer } from '../lib/control/client.ts';
import {
  CONTROL_SECRET,
  CONTROL_SOCKET,
  SOCKET_PATH_MAX,
  socketPathProblem,
  startControl,
} from '../lib/control/server.ts';
import { ErrorCode, HttpError } from '../lib/errors.ts';
import { silentLogger } from './_app.ts';
import { defer } from './_cleanup.ts';
import { startEcho as start } from './_control.ts';
import { tempDir } from './_dir.ts';
import { until } from './_until.ts';

/** Sends `text` as it is on the socket and resolves with everything the server wrote back. */
async function raw(dir: string, text: string | Buffer): Promise<string> {
  const socket = connect({ path: join(dir, CONTROL_SOCKET) });
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d));
  const closed = new Promise((resolve) => socket.once('close', resolve));
  await once(socket, 'connect');
  socket.end(text);
  await closed;
  return answer;
}

function parsed(answer: string): unknown {
  assert.ok(answer.endsWith('\n') && answer.indexOf('\n') === answer.length - 1, `one line: ${JSON.stringify(answer)}`);
  return JSON.parse(answer);
}

test('startControl() writes the socket and a 64-hex-digit secret, both 0600, a new secret at each start, and close() removes both', async (t) => {
  const dir = await tempDir(t, 'ctl-');
  const first = await start(t, {}, { dir });
  const secretPath = join(dir, CONTROL_SECRET);
  const socketPath = join(dir, CONTROL_SOCKET);
  assert.equal(first.control.socketPath, socketPath);
  assert.equal((await stat(socketPath)).mode & 0o777, 0o600);
  assert.ok((await stat(socketPath)).isSocket());
  assert.equal((await stat(secretPath)).mode & 0o777, 0o600);
  const secret = (await readFile(secretPath, 'utf8')).trim();
  assert.match(secret, /^[0-9a-f]{64}$/);
  await first.control.close();
  await assert.rejects(stat(socketPath), { code: 'ENOENT' });
  await assert.rejects(stat(secretPath), { code: 'ENOENT' });

  await start(t, {}, { dir });
  assert.notEqual((await readFile(secretPath, 'utf8')).trim(), secret);
});

test('a request with a wrong secret is refused with ERR_CONTROL_AUTH, logged, and its operation is not run', async (t) => {
  const { dir, calls, lines } = await start(t);
  const secret = (await readFile(join(dir, CONTROL_SECRET), 'utf8')).trim();
  const wrong = secret.slice(0, -1) + (secret.endsWith('0') ? '1' : '0');
  const answer = parsed(await raw(dir, `${JSON.stringify({ secret: wrong, op: 'echo', args: 1 })}\n`));
  assert.deepEqual(answer, { ok: false, error: { code: 'ERR_CONTROL_AUTH', message: 'not authorised' } });
  assert.deepEqual(calls, []);
  assert.equal(lines.filter((l) => l['msg'] === 'control request refused: wrong secret').length, 1);
  assert.ok(!JSON.stringify(lines).includes(wrong), 'the presented secret is not logged');
});

test('a process that can connect but has no secret gets nothing: not a result, not even which operations exist', async (t) => {
  const { dir, calls } = await start(t);
  const refused = { ok: false, error: { code: 'ERR_CONTROL_AUTH', message: 'not authorised' } };
  for (
    const line of [
      { op: 'echo', args: 1 },
      { op: 'no-such-op' },
      { secret: '', op: 'echo' },
      { secret: 42, op: 'echo' },
      ['echo'],
      null,
      'echo',
    ]
  ) {
    assert.deepEqual(parsed(await raw(dir, `${JSON.stringify(line)}\n`)), refused, JSON.stringify(line));
  }
  assert.deepEqual(parsed(await raw(dir, 'not json at all\n')), refused);
  assert.deepEqual(calls, []);
});

test('an unknown operation with the right secret is answered ERR_CONTROL_UNKNOWN_OP naming the known ones; an inherited name is not an operation', async (t) => {
  const { dir } = await start(t, { status: () => Promise.resolve('up') });
  for (const op of ['nope', 'constructor', '__proto__', 'toString']) {
    const answer = await callServer(dir, op, null);
    assert.equal(answer.kind, 'error', op);
    assert.equal(answer.kind === 'error' && answer.code, 'ERR_CONTROL_UNKNOWN_OP');
    assert.match(answer.kind === 'error' ? answer.message : '', /known: echo, status$/);
  }
});

test('a request line over the cap is refused with ERR_CONTROL_TOO_LARGE before it ends, and nothing runs', async (t) => {
  const { dir, calls } = await start(t, {}, { maxLineBytes: 1000 });
  const secret = (await readFile(join(dir, CONTROL_SECRET), 'utf8')).trim();
  const line = `${JSON.stringify({ secret, op: 'echo', args: 'x'.repeat(5000) })}\n`;
  const answer = parsed(await raw(dir, line));
  assert.deepEqual(answer, {
    ok: false,
    error: { code: 'ERR_CONTROL_TOO_LARGE', message: 'the request line is over 1000 bytes' },
  });
  assert.deepEqual(calls, []);
  // A line of exactly the cap still runs.
  const fits = `${JSON.stringify({ secret, op: 'echo', args: '' })}`;
  const padded = `${fits.slice(0, -1)},"pad":"${'p'.repeat(1000 - fits.length - 9)}"}`;
  assert.equal(Buffer.byteLength(padded), 1000);
  assert.deepEqual(parsed(await raw(dir, `${padded}\n`)), { ok: true, result: { echoed: '' } });
});

test('the default cap takes a 900 KiB request and refuses one of 2 MiB that never sends a newline; callServer() refuses such a request without sending it', async (t) => {
  const { dir, calls } = await start(t);
  assert.equal((await callServer(dir, 'echo', 'b'.repeat(900 * 1024))).kind, 'result');
  assert.deepEqual(await callServer(dir, 'echo', 'b'.repeat(1024 * 1024)), {
    kind: 'error',
    code: 'ERR_CONTROL_TOO_LARGE',
    message: 'the request is over 1048576 bytes',
  });
  const secret = (await readFile(join(dir, CONTROL_SECRET), 'utf8')).trim();
  const answer = parsed(await raw(dir, `{"secret":"${secret}","op":"echo","args":"${'x'.repeat(2 * 1024 * 1024)}`));
  assert.equal((answer as { error: { code: string } }).error.code, 'ERR_CONTROL_TOO_LARGE');
  assert.equal(calls.length, 1);
});

test('a handler that throws an HttpError answers its code and message; any other error answers ERR_INTERNAL without detail and is logged', async (t) => {
  const { dir, lines } = await start(t, {
    refuse: () => Promise.reject(new HttpError(400, ErrorCode.InvalidPayload, 'args.id must be a string')),
    crash: () => Promise.reject(new Error('disk on fire at /secret/path')),
  });
  assert.deepEqual(await callServer(dir, 'refuse', {}), {
    kind: 'error',
    code: 'ERR_INVALID_PAYLOAD',
    message: 'args.id must be a string',
  });
  assert.deepEqual(await callServer(dir, 'crash', {}), {
    kind: 'error',
    code: 'ERR_INTERNAL',
    message: 'internal error',
  });
  const logged = lines.find((l) => l['msg'] === 'control operation failed');
  assert.equal(logged?.['op'], 'crash');
  assert.match(String(logged?.['error']), /disk on fire/);
});

test('startControl() replaces a stale socket file left in the state directory', async (t) => {
  const dir = await tempDir(t, 'ctl-');
  await writeFile(join(dir, CONTROL_SOCKET), 'left by a killed server');
  await writeFile(join(dir, CONTROL_SECRET), 'old secret');
  const { calls } = await start(t, {}, { dir });
  assert.deepEqual(await callServer(dir, 'echo', 7), { kind: 'result', result: { echoed: 7 } });
  assert.deepEqual(calls, [7]);
});

test('close() while an operation runs ends its connection: the client hears that the server closed without an answer', async (t) => {
  let entered = () => {};
  const running = new Promise<void>((resolve) => (entered = resolve));
  const { dir, control } = await start(t, { slow: () => (entered(), new Promise(() => {})) });
  const call = callServer(dir, 'slow', null);
  await running;
  await control.close();
  const answer = await call;
  assert.equal(answer.kind, 'error');
  assert.equal(answer.kind === 'error' && answer.code, 'ERR_CONTROL_CLOSED');
});

test('a state directory whose socket path would pass the unix limit is refused by name, on both sides', async (t) => {
  const base = await tempDir(t, 'ctl-');
  const long = join(base, 'd'.repeat(SOCKET_PATH_MAX - base.length - CONTROL_SOCKET.length - 1));
  assert.equal(Buffer.byteLength(join(long, CONTROL_SOCKET)), SOCKET_PATH_MAX + 1);
  const problem = socketPathProblem(long);
  assert.match(problem ?? '', new RegExp(`is ${SOCKET_PATH_MAX + 1} bytes long, more than the ${SOCKET_PATH_MAX}`));
  await assert.rejects(startControl({ stateDir: long, handlers: {}, log: silentLogger }), {
    message: `Cannot start the control channel: ${problem}`,
  });
  assert.deepEqual(await callServer(long, 'echo', null), { kind: 'error', code: 'ERR_CONTROL_PATH', message: problem });
  // One byte shorter fits.
  assert.equal(socketPathProblem(long.slice(0, -1)), null);
});

test('a connection that sends a byte now and then but no whole line is closed at idleMs from its start, not kept while it trickles', async (t) => {
  const { dir, calls } = await start(t, {}, { idleMs: 300 });
  const socket = connect({ path: join(dir, CONTROL_SOCKET) });
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await once(socket, 'connect');
  // One byte every 50 ms for up to 10 s: an idle timer of 300 ms never fires on it.
  let sent = 0;
  for (; sent < 200 && !socket.destroyed && socket.writable; sent++) {
    socket.write('{');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (sent === 200) socket.destroy(); // still open after 10 s: the assertion below says so
  await closed;
  assert.ok(sent < 200, 'the server closed the connection while it trickled');
  assert.deepEqual(calls, []);
});

test('a flood of wrong secrets is logged once at once, then at most once a minute with how many came', async (t) => {
  let clock = 1_000_000;
  const { dir, lines } = await start(t, {}, { now: () => clock });
  const wrong = `${JSON.stringify({ secret: 'f'.repeat(64), op: 'echo' })}\n`;
  const refusals = () => lines.filter((l) => l['msg'] === 'control request refused: wrong secret');
  for (let i = 0; i < 5; i++) await raw(dir, wrong);
  assert.deepEqual(refusals().map((l) => l['refused']), [1]);
  clock += 59_999;
  await raw(dir, wrong);
  assert.equal(refusals().length, 1);
  clock += 1;
  await raw(dir, wrong);
  assert.deepEqual(refusals().map((l) => l['refused']), [1, 6]);
});

// A connection that writes `bytes` and keeps its side open: what the server answered, whether the
// write failed (the server closed before taking it all), once the server has closed the connection.
async function written(dir: string, bytes: Buffer): Promise<{ answer: string; writeError: string | null }> {
  const socket = connect({ path: join(dir, CONTROL_SOCKET) });
  let answer = '';
  let writeError: string | null = null;
  let closed = false;
  socket.on('data', (d: Buffer) => (answer += d));
  socket.on('error', () => {});
  socket.once('close', () => (closed = true));
  await once(socket, 'connect');
  socket.write(
    bytes,
    (
      error,
    ) => (writeError = error === undefined || error === null
      ? null
      : ((error as NodeJS.ErrnoException).code ?? String(error))),
  );
  try {
    // No deadline of the server's can end it (idleMs is long): only the check of the first bytes.
    await until('the server closed the connection', () => closed);
  } finally {
    socket.destroy();
  }
  return { answer, writeError };
}

test('a line whose first bytes are not the secret is answered and closed as soon as those bytes are in, without waiting for its end', async (t) => {
  const { dir, calls, lines } = await start(t, {}, { idleMs: 120_000 });
  const secret = (await readFile(join(dir, CONTROL_SECRET), 'utf8')).trim();
  const wrong = secret.slice(0, -1) + (secret.endsWith('0') ? '1' : '0');
  const refused = { ok: false, error: { code: 'ERR_CONTROL_AUTH', message: 'not authorised' } };
  // The head of a line, no newline: 77 bytes with a wrong secret, and as many of something else.
  for (const head of [`{"secret":"${wrong}",`, 'x'.repeat(77), `{ "secret": "${secret}",`]) {
    assert.deepEqual(parsed((await written(dir, Buffer.from(head))).answer), refused, head);
  }
  assert.deepEqual(calls, []);
  assert.equal(lines.filter((l) => l['msg'] === 'control request refused: wrong secret').length, 1);
});

test('a mebibyte of garbage is refused from its first bytes: the connection is closed before the server has taken it all', async (t) => {
  const { dir, calls } = await start(t, {}, { idleMs: 120_000 });
  const got = await written(dir, Buffer.alloc(1024 * 1024, 0x61));
  assert.notEqual(got.writeError, null, 'the mebibyte was not all taken');
  // The refusal is sent before the close, but a client whose write failed may not read it (Deno's drops it).
  if (got.answer !== '') {
    assert.deepEqual(parsed(got.answer), { ok: false, error: { code: 'ERR_CONTROL_AUTH', message: 'not authorised' } });
  }
  assert.deepEqual(calls, []);
  // The secret's own line still runs, its head split over writes.
  const secret = (await readFile(join(dir, CONTROL_SECRET), 'utf8')).trim();
  const socket = connect({ path: join(dir, CONTROL_SOCKET) });
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d));
  const closed = once(socket, 'close');
  await once(socket, 'connect');
  const line = `${JSON.stringify({ secret, op: 'echo', args: 'split' })}\n`;
  for (const piece of [line.slice(0, 5), line.slice(5, 40), line.slice(40, 78), line.slice(78)]) {
    socket.write(piece);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await closed;
  assert.deepEqual(parsed(answer), { ok: true, result: { echoed: 'split' } });
});

test('past maxConnections open at once that sent the secret, a connection is answered ERR_CONTROL_BUSY and closed; one closed makes room', async (t) => {
  let hung = 0;
  // An operation that does not end: its connection holds its slot.
  const hang = () => {
    hung++;
    return new Promise<never>(() => {});
  };
  const { dir, lines } = await start(t, { hang }, { maxConnections: 3, idleMs: 120_000 });
  const secret = (await readFile(join(dir, CONTROL_SECRET), 'utf8')).trim();
  const held: Socket[] = [];
  for (let i = 0; i < 3; i++) {
    const socket = connect({ path: join(dir, CONTROL_SOCKET) });
    socket.on('error', () => {});
    await once(socket, 'connect');
    socket.write(`${JSON.stringify({ secret, op: 'hang' })}\n`);
    held.push(socket);
  }
  defer(t, () => held.forEach((s) => s.destroy()));
  await until('the three are served', () => hung === 3);
  const busy = await written(dir, Buffer.from('{'));
  assert.deepEqual(parsed(busy.answer), {
    ok: false,
    error: { code: 'ERR_CONTROL_BUSY', message: 'more than 3 connections are open; try again' },
  });
  assert.deepEqual(await callServer(dir, 'echo', 1), {
    kind: 'error',
    code: 'ERR_CONTROL_BUSY',
    message: 'more than 3 connections are open; try again',
  });
  assert.deepEqual(
    lines.filter((l) => l['msg'] === 'control connection refused: too many open').map((l) => l['refused']),
    [1],
  );
  held.pop()!.destroy();
  await until('a connection is served again', async () => (await callServer(dir, 'echo', 2)).kind === 'result');
});

test('connections that have not sent the secret do not keep the owner out: at maxConnections the oldest of them is answered ERR_CONTROL_BUSY and closed, and the owner is served', async (t) => {
  const { dir, lines } = await start(t, {}, { maxConnections: 3, idleMs: 120_000 });
  const held: { socket: Socket; answer: string; closed: boolean }[] = [];
  for (let i = 0; i < 3; i++) {
    const one = { socket: connect({ path: join(dir, CONTROL_SOCKET) }), answer: '', closed: false };
    one.socket.on('error', () => {});
    one.socket.on('data', (d: Buffer) => (one.answer += d));
    one.socket.once('close', () => (one.closed = true));
    await once(one.socket, 'connect');
    // Half a head, then nothing: what an attacker without the secret can send.
    one.socket.write('{"secret":"');
    held.push(one);
  }
  defer(t, () => held.forEach((h) => h.socket.destroy()));
  assert.deepEqual(await callServer(dir, 'echo', 1), { kind: 'result', result: { echoed: 1 } });
  await until('the oldest held connection was ended', () => held[0]!.closed);
  assert.deepEqual(parsed(held[0]!.answer), {
    ok: false,
    error: { code: 'ERR_CONTROL_BUSY', message: 'more than 3 connections are open; try again' },
  });
  assert.deepEqual(
    [held[1]!.closed, held[2]!.closed, held[1]!.answer + held[2]!.answer],
    [false, false, ''],
    'the others wait on',
  );
  // The owner's call is over and its slot free: the next one takes it, and no other is ended.
  assert.deepEqual(await callServer(dir, 'echo', 2), { kind: 'result', result: { echoed: 2 } });
  assert.deepEqual(
    lines.filter((l) => l['msg'] === 'control connection refused: too many open').map((l) => l['refused']),
    [1],
  );
});
