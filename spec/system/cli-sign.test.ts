import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import type { Io } from '../../lib/cli/io.ts';
import { main } from '../../lib/cli/main.ts';
import { signCommand } from '../../lib/cli/sign.ts';
import { verifySignature } from '../../lib/guard/signatures/verify.ts';
import { defer } from '../_cleanup.ts';
import { fake } from '../_fake-server.ts';
import { assertCleanStop, configFile, runCli, spawnServer } from '../_cli.ts';
import { githubExample } from '../_signers.ts';

const TOKEN = 'spec-sign-token-0a1b2c3d4e5f67890';

const MAPPINGS = [
  {
    match: { path: 'github' },
    signature: { scheme: 'github', secret: '${GH_SECRET}' },
    filter: { headers: { 'x-github-event': 'push' } },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    textTemplate: 'push to {{repository.full_name}}',
  },
  {
    match: { path: 'gitlab' },
    signature: { scheme: 'gitlab', secret: 'gl-secret-4411' },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    textTemplate: 'gitlab',
  },
  {
    match: { path: 'sms' },
    signature: { scheme: 'twilio', secret: 'tw-token', url: 'https://hooks.example.com/hooks/sms' },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    textTemplate: 'sms {{Body}}',
  },
  { match: { path: 'plain' }, action: 'wake', textTemplate: 'plain' },
];

async function setup(t: TestContext): Promise<{ dir: string; config: string; body: string }> {
  const { dir, config, state, write } = await configFile(t, '', 'cli-sign-spec-');
  await write({
    hooks: { enabled: true, token: TOKEN, mappings: MAPPINGS },
    state: { dir: state },
    gateway: { port: 0 },
  });
  const body = join(dir, 'push.json');
  await writeFile(body, JSON.stringify(githubExample('push')));
  return { dir, config, body };
}

function capture(env: Record<string, string> = { GH_SECRET: 'gh-secret-77' }): Io & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, stdout: (s) => void out.push(s), stderr: (s) => void err.push(s), env };
}

// The shell words of a printed curl line (single-quoted words only, as sign prints them).
function words(line: string): string[] {
  return [...line.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)].map((m) => (m[1] ?? m[2]!).replaceAll("'\\''", "'"));
}

test('hooks-ingress sign prints a curl line whose headers verify for the body file', async (t) => {
  const { config, body } = await setup(t);
  const io = capture();
  const code = await main([
    'sign',
    '--config',
    config,
    '--hook',
    'github',
    '--body',
    body,
    '--header',
    'X-GitHub-Event: push',
    '--id',
    'd-1',
  ], io);
  assert.equal(code, 0, io.err.join(''));
  const argv = words(io.out.join('').trim());
  assert.deepEqual(argv.slice(0, 5), ['curl', '-sS', '-X', 'POST', 'http://127.0.0.1:0/hooks/github']);
  const headers: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] !== '-H') continue;
    const [name, ...rest] = argv[i + 1]!.split(': ');
    headers[name!] = rest.join(': ');
  }
  assert.equal(headers['x-github-event'], 'push');
  assert.equal(headers['x-github-delivery'], 'd-1');
  assert.equal(argv.at(-1), `@${body}`);
  const { readFile } = await import('node:fs/promises');
  const verdict = verifySignature({ scheme: 'github', secrets: ['gh-secret-77'], toleranceSeconds: 300 }, {
    headers,
    body: await readFile(body),
    query: '',
  }, Date.now());
  assert.deepEqual(verdict, { ok: true });
  assert.ok(!io.out.join('').includes('gh-secret-77'));
});

test('hooks-ingress sign never prints a header that carries the secret itself', async (t) => {
  const { config } = await setup(t);
  const io = capture();
  assert.equal(await main(['sign', '--config', config, '--hook', 'gitlab'], io), 0);
  const printed = io.out.join('');
  assert.ok(!printed.includes('gl-secret-4411'), printed);
  assert.match(printed, /'x-gitlab-token: <secret>'/);
  assert.match(io.err.join(''), /x-gitlab-token carries the secret itself, so it is not printed; use --send/);
});

test('hooks-ingress sign refuses a missing hook, an unsigned hook and a malformed --header', async (t) => {
  const { config } = await setup(t);
  let io = capture();
  assert.equal(await main(['sign', '--config', config], io), 2);
  assert.match(io.err.join(''), /give --hook NAME/);
  io = capture();
  assert.equal(await main(['sign', '--config', config, '--hook', 'plain'], io), 1);
  assert.match(io.err.join(''), /no mapping with match.path "plain" carries a signature/);
  io = capture();
  assert.equal(await main(['sign', '--config', config, '--hook', 'github', '--header', 'no colon'], io), 2);
  assert.match(io.err.join(''), /--header must be written "Name: value"/);
  io = capture();
  assert.equal(await main(['sign', '--config', config, '--hook', 'github', '--body', '/nonexistent/file.json'], io), 1);
  assert.match(io.err.join(''), /cannot read \/nonexistent\/file.json: ENOENT/);
  io = capture();
  assert.equal(await main(['sign', '--config', config, '--hook', 'github', '--send', 'http://127.0.0.1:9/'], io), 1);
  assert.match(io.err.join(''), /cannot reach http:\/\/127.0.0.1:9\/hooks\/github/);
  io = capture();
  assert.equal(
    await main(['sign', '--config', config, '--hook', 'github', '--send', 'http://bob:pw-in-url@127.0.0.1:9/'], io),
    1,
  );
  assert.match(io.err.join(''), /cannot reach http:\/\/\[redacted\]@127.0.0.1:9\/hooks\/github/);
  assert.ok(!io.err.join('').includes('pw-in-url'), io.err.join(''));
});

test('hooks-ingress sign --send does not follow a redirect: it prints the 3xx and exits 1, and the address it names gets nothing', async (t) => {
  const { config } = await setup(t);
  const elsewhere = await fake(t, (_req, res) => res.writeHead(200).end('took it'));
  const moving = await fake(t, (_req, res) => res.writeHead(307, { location: `${elsewhere.url}/hooks/github` }).end());
  const io = capture();
  assert.equal(
    await main(['sign', '--config', config, '--hook', 'github', '--send', `${moving.url}/hooks/github`], io),
    1,
  );
  assert.equal(io.out.join(''), '307 \n');
  assert.deepEqual(elsewhere.seen, []);
  assert.equal(moving.seen.length, 1);
});

test('hooks-ingress sign --body - reads stdin; a twilio body is signed as its form parameters', async (t) => {
  const { config } = await setup(t);
  const io = { ...capture(), stdin: async () => Buffer.from('Body=hello&From=%2B1555') };
  assert.equal(await signCommand({ config, hook: 'sms', body: '-' }, io, () => 1_800_000_000_000), 0, io.err.join(''));
  const line = io.out.join('');
  assert.match(line, /'content-type: application\/x-www-form-urlencoded'/);
  assert.match(line, /'x-twilio-signature: [A-Za-z0-9+/=]+'/);
  assert.match(line, /--data-binary 'Body=hello&From=%2B1555'$/m);
});

test('hooks-ingress sign --send posts to a running server (real processes): accepted, then filtered, then a retry replayed', async (t) => {
  const { dir, config, body } = await setup(t);
  const env = { GH_SECRET: 'gh-secret-77' };
  const server = await spawnServer(['--config', config, '--state-dir', join(dir, 'state')], env);
  defer(t, async () => {
    if (server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await assertCleanStop(server);
    }
  });
  const send = (extra: string[]) =>
    runCli(['sign', '--config', config, '--hook', 'github', '--body', body, '--send', server.url, ...extra], env);
  const accepted = await send(['--header', 'X-GitHub-Event: push', '--id', 'delivery-7']);
  assert.equal(accepted.code, 0, accepted.stderr);
  assert.equal(accepted.stdout, '200 {"ok":true,"mode":"next-heartbeat","eventOutcome":"queued"}\n');
  const ignored = await send(['--header', 'X-GitHub-Event: issues', '--id', 'delivery-8']);
  assert.equal(ignored.stdout, '200 {"ok":true,"ignored":true}\n');
  const again = await send(['--header', 'X-GitHub-Event: push', '--id', 'delivery-7']);
  assert.equal(again.stdout, '200 {"ok":true,"mode":"next-heartbeat","eventOutcome":"queued"}\n');
  const events = await runCli(['events', '--config', config, '--json'], env);
  assert.equal(events.stdout.trim().split('\n').length, 1, events.stdout);
  // The bytes signed are the bytes sent: a body that is not UTF-8 passes the signature and is refused as JSON.
  const latin1 = join(dir, 'latin1.json');
  await writeFile(latin1, Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d]));
  const raw = await runCli([
    'sign',
    '--config',
    config,
    '--hook',
    'github',
    '--body',
    latin1,
    '--send',
    server.url,
    '--header',
    'X-GitHub-Event: push',
  ], env);
  assert.match(raw.stdout, /^400 .*ERR_INVALID_JSON/);
  const unsigned = await runCli([
    'sign',
    '--config',
    config,
    '--hook',
    'github',
    '--body',
    body,
    '--send',
    `${server.url}/hooks/github`,
    '--header',
    'x-hub-signature-256: sha256=00',
  ], env);
  assert.equal(unsigned.code, 1);
  assert.match(unsigned.stdout, /^401 .*invalid signature: X-Hub-Signature-256 does not match the body/);
});

test('hooks-ingress check reports a signature problem with its key path', async (t) => {
  const { dir } = await setup(t);
  const config = join(dir, 'bad.json');
  await writeFile(
    config,
    JSON.stringify({
      hooks: {
        enabled: true,
        token: TOKEN,
        mappings: [{
          match: { path: 'sms' },
          signature: { scheme: 'twilio', secret: 'x' },
          action: 'wake',
          textTemplate: 'x',
        }],
      },
    }),
  );
  const io = capture();
  assert.equal(await main(['check', '--config', config], io), 1);
  assert.match(io.err.join(''), /hooks\.mappings\[0\]\.signature\.url: is required for scheme "twilio"/);
});
