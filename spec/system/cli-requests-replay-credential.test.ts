// A request that authenticated with the hook token replays only while that token is configured: a
// real server records a keyed fingerprint of the token with the entry (never the token), and once
// the token is rotated `requests replay`, its dry run and `try` refuse the entry naming the rotation.
import assert from 'node:assert/strict';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { main } from '../../lib/cli/main.ts';
import { readLedger } from '../../lib/store/ledger/read.ts';
import { readEvents } from '../../lib/store/journal/read.ts';
import { configFile, serveState, type Spawned } from '../_cli.ts';
import { post } from '../_http.ts';
import { captureIo } from '../_io.ts';
import { until } from '../_until.ts';

const LEAKED = 'leaked-hook-token-0123456789abcdef';
const ROTATED = 'rotated-hook-token-fedcba9876543210';

interface Setup {
  config: string;
  state: string;
  write(token: string, template: string): Promise<void>;
}

// A wake mapping whose template may have a typo: `{{mesage}}` alone renders nothing, and the request is refused (400).
const hooks = (token: string, template: string) => ({
  hooks: {
    enabled: true,
    token,
    mappings: [{ match: { path: 'notes' }, action: 'wake', wakeMode: 'next-heartbeat', textTemplate: template }],
  },
});

async function setup(t: TestContext): Promise<Setup> {
  const { config, state, write } = await configFile(t, hooks(LEAKED, '{{mesage}}'), 'cli-replay-cred-');
  return { config, state, write: (token, template) => write(hooks(token, template)) };
}

async function reload(s: Setup, server: Spawned, token: string, template: string): Promise<void> {
  await s.write(token, template);
  const before = server.stderr().split('"msg":"reloaded"').length;
  server.child.kill('SIGHUP');
  await until('the reload', () => server.stderr().split('"msg":"reloaded"').length > before, { detail: server.stderr });
}

async function cli(s: Setup, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { io, out } = captureIo({ HOOKS_INGRESS_CONFIG: s.config });
  const code = await main([...args, '--state-dir', s.state], io);
  return { code, ...out };
}

// A request with the leaked token whose template had a typo: refused, in the ledger.
async function sendFailed(s: Setup, server: Spawned, requestId: string): Promise<string> {
  const sent = await post(server.url, '/hooks/notes', {
    headers: { authorization: `Bearer ${LEAKED}`, 'x-request-id': requestId },
    body: { message: 'attacker text' },
  });
  assert.equal(sent.status, 400, sent.text);
  return until(
    `the entry of ${requestId}`,
    async () => (await readLedger(s.state)).find((e) => e.requestId === requestId)?.id,
  );
}

const attackerEvents = async (s: Setup) => (await readEvents(s.state)).filter((e) => e.text.includes('attacker text'));

test('a request sent with a hook token since rotated is not replayed: the template fixed and the token rotated, replay, --failed, --force, the dry run and try each say the token is no longer configured', async (t) => {
  const s = await setup(t);
  const server = await serveState(t, s);
  const id = await sendFailed(s, server, 'leaked-1');
  await reload(s, server, ROTATED, 'note: {{message}}');

  const reason = `entry ${id} cannot be replayed: its token is no longer configured (rotated since)`;
  const one = await cli(s, 'requests', 'replay', id);
  assert.equal(one.code, 1, one.stdout + one.stderr);
  assert.equal(one.stdout, `not replayed ${id}: ${reason}\n`);
  const bulk = await cli(s, 'requests', 'replay', '--failed', '--yes');
  assert.equal(bulk.code, 1, bulk.stdout + bulk.stderr);
  assert.ok(bulk.stdout.includes(`not replayed ${id}: ${reason}\n`), bulk.stdout);
  // --force replays what cannot be checked; a token checked and found gone is never replayed.
  const forced = await cli(s, 'requests', 'replay', id, '--force');
  assert.equal(forced.code, 1, forced.stdout + forced.stderr);
  assert.equal(forced.stdout, `not replayed ${id}: ${reason}\n`);
  const dry = await cli(s, 'requests', 'replay', id, '--dry-run');
  assert.equal(dry.code, 1, dry.stdout + dry.stderr);
  assert.ok((dry.stdout + dry.stderr).includes(reason), dry.stdout + dry.stderr);
  const tried = await cli(s, 'try', '--request', id);
  assert.equal(tried.code, 1, tried.stdout + tried.stderr);
  assert.ok(tried.stderr.includes(reason), tried.stderr);
  assert.deepEqual(await attackerEvents(s), []);

  // With no server, try reads the state directory's key itself and says the same.
  // By its pid: under Deno a child once sent SIGHUP (the reload) reads as killed, and kill() sends nothing more.
  process.kill(server.child.pid!, 'SIGTERM');
  await server.exited;
  const local = await cli(s, 'try', '--request', id);
  assert.equal(local.code, 1, local.stdout + local.stderr);
  assert.ok(
    local.stderr.includes(`entry ${id} cannot be tried: its token is no longer configured (rotated since)`),
    local.stderr,
  );

  // The entry keeps a short opaque fingerprint; neither token is anywhere in the state directory's ledger.
  const shown = await cli(s, 'requests', 'show', id, '--json');
  assert.match(
    (JSON.parse(shown.stdout) as { entry: { credential?: string } }).entry.credential ?? '',
    /^[0-9a-f]{6}:[0-9a-f]{16}$/,
  );
  const ledgerDir = join(s.state, 'ledger');
  for (const name of await readdir(ledgerDir)) {
    const text = await readFile(join(ledgerDir, name), 'utf8');
    for (const token of [LEAKED, ROTATED]) assert.ok(!text.includes(token), `${name} holds a token`);
  }
  assert.equal((await stat(join(s.state, 'credential.key'))).mode & 0o777, 0o600);
});

test('the same hook token still configured: the fixed template replays the failed request', async (t) => {
  const s = await setup(t);
  const server = await serveState(t, s);
  const id = await sendFailed(s, server, 'kept-1');
  await reload(s, server, LEAKED, 'note: {{message}}');
  const replayed = await cli(s, 'requests', 'replay', id);
  assert.equal(replayed.code, 0, replayed.stdout + replayed.stderr);
  assert.match(replayed.stdout, new RegExp(`^replayed ${id}  as [0-9a-f]{24} request=\\S+  200  event \\d+\\n$`));
  assert.equal((await attackerEvents(s)).length, 1);
});
