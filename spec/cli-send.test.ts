import assert from 'node:assert/strict';
import { test } from 'node:test';
import { main } from '../lib/cli/main.ts';
import { waitingFor } from '../lib/cli/send.ts';
import { fake, json } from './_fake-server.ts';
import { captureIo } from './_io.ts';
import { configFile } from './_cli.ts';

test('send says what it is waiting for when the platform has not answered after a second', async (t) => {
  let heard: () => void = () => {};
  const noticed = new Promise<void>((resolve) => (heard = resolve));
  // The stand-in Telegram holds the request until the notice is out, then answers: no clock in the test.
  const telegram = await fake(
    t,
    (_req, res) => void noticed.then(() => json(res, 200, { ok: true, result: { message_id: 7 } })),
  );
  const { dir, config: path } = await configFile(t, {
    channels: { telegram: { botToken: '123:abc', apiBase: telegram.url, defaultTo: '42' } },
  }, 'hooks-send-');
  const { io, out } = captureIo(
    { HOME: dir },
    {
      onStderr: (all) => {
        if (all.includes('waiting for')) heard();
      },
    },
  );
  assert.equal(await main(['send', '-c', path, '--channel', 'telegram', 'hello'], io), 0);
  assert.equal(
    out.stderr,
    `hooks-ingress send: waiting for telegram at ${telegram.url} to answer (up to 3 attempts; Ctrl-C stops)\n`,
  );
  assert.equal(out.stdout, 'delivered to telegram 42 (7)\n');
});

test('a send that is answered at once prints no waiting notice', async (t) => {
  const telegram = await fake(t, (_req, res) => json(res, 200, { ok: true, result: { message_id: 8 } }));
  const { dir, config: path } = await configFile(t, {
    channels: { telegram: { botToken: '123:abc', apiBase: telegram.url } },
  }, 'hooks-send-');
  const { io, out } = captureIo({ HOME: dir });
  assert.equal(await main(['send', '-c', path, '--channel', 'telegram', '--to', '5', 'hi'], io), 0);
  assert.equal(out.stderr, '');
});

test('waitingFor() names the address each platform was given, or only the platform', () => {
  assert.equal(
    waitingFor({ channels: { signal: { url: 'http://127.0.0.1:8080', account: '+15550000000' } } }, 'signal'),
    'waiting for signal at http://127.0.0.1:8080 to answer (up to 3 attempts; Ctrl-C stops)',
  );
  assert.equal(
    waitingFor({ channels: { slack: { botToken: 'xoxb-1' } } }, 'slack'),
    'waiting for slack to answer (up to 3 attempts; Ctrl-C stops)',
  );
  assert.equal(
    waitingFor({ channels: { imessage: { command: 'imsg' } } }, 'imessage'),
    'waiting for imessage (imsg) to answer (up to 3 attempts; Ctrl-C stops)',
  );
});

test('send escapes the control characters of what the platform answered, failed or delivered', async (t) => {
  // A platform's error text and ids reach the terminal: an escape sequence in them must not act there.
  const telegram = await fake(
    t,
    (req, res) =>
      req.url?.includes('/sendMessage') && req.headers['x-fail'] === undefined
        ? json(res, 400, {
          ok: false,
          error_code: 400,
          description: 'Bad Request: \x1b[2J\x1b]0;owned\x07 chat not found',
        })
        : json(res, 200, { ok: true }),
  );
  const { dir, config: path } = await configFile(t, {
    channels: { telegram: { botToken: '123:abc', apiBase: telegram.url } },
  }, 'hooks-send-');
  const { io, out } = captureIo({ HOME: dir });
  assert.equal(await main(['send', '-c', path, '--channel', 'telegram', '--to', '5', 'hi'], io), 1);
  assert.ok(!/[\x00-\x08\x0b-\x1f\x7f]/.test(out.stderr), JSON.stringify(out.stderr));
  assert.match(out.stderr, /Bad Request: \\x1b\[2J\\x1b\]0;owned\\x07 chat not found\n$/);

  const ids = await fake(t, (_req, res) => json(res, 200, { ok: true, result: { message_id: '7\x1b[31m' } }));
  const second = await configFile(t, {
    channels: { telegram: { botToken: '123:abc', apiBase: ids.url } },
  }, 'hooks-send-');
  const delivered = captureIo({ HOME: second.dir });
  assert.equal(await main(['send', '-c', second.config, '--channel', 'telegram', '--to', '5', 'hi'], delivered.io), 0);
  assert.equal(delivered.out.stdout, 'delivered to telegram 5 (7\\x1b[31m)\n');
});
