// `hooks-ingress requests replay` against a real server process: a delivery refused for a wrong
// secret runs exactly once after the secret is fixed; a template typo fixed gives the replayed run
// the corrected message; a Stripe event older than the tolerance replays only with --force; bulk replay asks first.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { main } from '../../lib/cli/main.ts';
import { readLedger } from '../../lib/store/ledger/read.ts';
import { readEvents, readRuns } from '../../lib/store/journal/read.ts';
import { configFile, serveState as serve, type Spawned } from '../_cli.ts';
import { post } from '../_http.ts';
import { captureIo } from '../_io.ts';
import { githubExample, SIGNERS } from '../_signers.ts';
import { until } from '../_until.ts';

const TOKEN = 'replay-cli-token-0123456789abcdef';

interface Setup {
  config: string;
  state: string;
  /** Writes the config again with these mappings. */
  write(mappings: unknown[]): Promise<void>;
}

const hooks = (mappings: unknown[]) => ({ hooks: { enabled: true, token: TOKEN, mappings } });

async function setup(t: TestContext, mappings: unknown[]): Promise<Setup> {
  const { config, state, write } = await configFile(t, hooks(mappings), 'cli-replay-');
  return { config, state, write: (list) => write(hooks(list)) };
}

async function reload(s: Setup, server: Spawned, mappings: unknown[]): Promise<void> {
  await s.write(mappings);
  const before = server.stderr().split('"msg":"reloaded"').length;
  server.child.kill('SIGHUP');
  await until('the reload', () => server.stderr().split('"msg":"reloaded"').length > before, { detail: server.stderr });
}

async function cli(s: Setup, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { io, out } = captureIo({ HOOKS_INGRESS_CONFIG: s.config });
  const code = await main(['requests', ...args, '--state-dir', s.state], io);
  return { code, ...out };
}

async function entryOf(s: Setup, requestId: string): Promise<string> {
  return until(
    `the entry of ${requestId}`,
    async () => (await readLedger(s.state)).find((e) => e.requestId === requestId)?.id,
  );
}

const github = (secret: string) => ({
  match: { path: 'github' },
  signature: { scheme: 'github', secret },
  action: 'wake',
  wakeMode: 'next-heartbeat',
  textTemplate: 'push to {{repository.name}}',
});

test('a GitHub delivery signed under the wrong secret is refused and listed; after the secret is fixed and reloaded, replay runs it exactly once', async (t) => {
  const s = await setup(t, [github('the-old-wrong-secret')]);
  const server = await serve(t, s);
  const body = JSON.stringify(githubExample('push'));
  const headers = await SIGNERS['github']!({ secret: 'the-real-secret', body, nowSeconds: 0, id: 'delivery-77' });
  const refused = await post(server.url, '/hooks/github', {
    headers: { ...headers, 'content-type': 'application/json', 'x-request-id': 'gh-push-1' },
    body,
  });
  assert.equal(refused.status, 401);
  const id = await entryOf(s, 'gh-push-1');
  assert.match(
    (await cli(s, '--failed')).stdout,
    new RegExp(`401  ERR_UNAUTHORIZED  POST github  ${id}  request=gh-push-1 .*signature bad-signature`),
  );

  const early = await cli(s, 'replay', id);
  assert.equal(early.code, 1, 'still the wrong secret: the replay is refused again');
  assert.match(
    early.stdout,
    /^replayed .* 401  ERR_UNAUTHORIZED  invalid signature: X-Hub-Signature-256 does not match the body\n$/,
  );

  await reload(s, server, [github('the-real-secret')]);
  const replayed = await cli(s, 'replay', 'gh-push-1');
  assert.equal(replayed.code, 0, replayed.stderr);
  assert.match(replayed.stdout, new RegExp(`^replayed ${id}  as [0-9a-f]{24} request=\\S+  200  event \\d+\\n$`));
  const events = (await readEvents(s.state)).filter((e) => e.text.includes('push to'));
  assert.equal(events.length, 1);

  const again = await cli(s, 'replay', id);
  assert.equal(again.code, 1);
  assert.match(
    again.stdout,
    new RegExp(
      `^not replayed ${id}: a replay of entry ${id} succeeded \\(replay [0-9a-f]{24}, 200\\); replay it again with --force\\n$`,
    ),
  );
  assert.equal((await readEvents(s.state)).filter((e) => e.text.includes('push to')).length, 1, 'exactly once');

  const entries = await readLedger(s.state);
  const replays = entries.filter((e) => e.replayOf === id);
  assert.deepEqual(replays.map((e) => e.status), [401, 200]);
  assert.equal(replays[1]!.signature?.ok, true);
  assert.equal(events[0]!.requestId, replays[1]!.requestId);
  const shown = await cli(s, 'show', id);
  assert.match(shown.stdout, new RegExp(`^replayed {4}${replays[1]!.id} at \\S+: 200$`, 'm'));
  for (const secret of ['the-real-secret', 'the-old-wrong-secret', TOKEN]) {
    assert.ok(!(server.stderr() + shown.stdout).includes(secret), secret);
  }
});

test('a template typo fixed: the replayed run gets the corrected message (a request that succeeded needs --force)', async (t) => {
  const mapping = (template: string) => ({
    match: { path: 'gh' },
    action: 'agent',
    messageTemplate: template,
    name: 'GitHub',
    deliver: false,
  });
  const s = await setup(t, [mapping('Push by {{pusher.nam}} to {{repository.name}}')]);
  const server = await serve(t, s);
  const payload = githubExample('push');
  const reply = await post(server.url, '/hooks/gh', {
    headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': 'typo-1' },
    body: payload,
  });
  assert.equal(reply.status, 202, reply.text);
  const first = await until('the first run', async () => (await readRuns(s.state))[0]);
  const pusher = (payload['pusher'] as { name: string }).name;
  assert.ok(!first.message.includes(pusher));
  await reload(s, server, [mapping('Push by {{pusher.name}} to {{repository.name}}')]);
  const refused = await cli(s, 'replay', 'typo-1');
  assert.equal(refused.code, 1);
  assert.match(refused.stdout, /succeeded \(202\); replay it again with --force/);
  const forced = await cli(s, 'replay', 'typo-1', '--force');
  assert.equal(forced.code, 0, forced.stderr + forced.stdout);
  const runId = /run (\S+)/.exec(forced.stdout)![1]!;
  const run = (await readRuns(s.state)).find((r) => r.runId === runId)!;
  assert.match(run.message, new RegExp(`Push by ${pusher} to `));
});

test('a Stripe event older than the tolerance is refused; a bulk replay of what failed leaves it, and it replays by id with --force (the timestamp is not held against the clock again)', async (t) => {
  const s = await setup(t, [{
    match: { path: 'stripe' },
    signature: { scheme: 'stripe', secret: 'whsec_replay_stripe', toleranceSeconds: 300 },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    textTemplate: 'paid {{id}}',
  }]);
  const server = await serve(t, s);
  const body = JSON.stringify({ id: 'evt_old_1', type: 'invoice.paid' });
  const headers = await SIGNERS['stripe']!({
    secret: 'whsec_replay_stripe',
    body,
    nowSeconds: Math.floor(Date.now() / 1000) - 7200,
    id: '',
  });
  assert.equal(
    (await post(server.url, '/hooks/stripe', {
      headers: { ...headers, 'content-type': 'application/json', 'x-request-id': 'stripe-old' },
      body,
    })).status,
    401,
  );
  const id = await entryOf(s, 'stripe-old');
  const shown = await cli(s, 'show', id);
  assert.match(shown.stdout, /signature {3}stripe: refused, stale-timestamp \(timestamp 7\d{3} s in the past\)/);
  // Anyone with one captured delivery can send it again at any time: not run unasked.
  const bulk = await cli(s, 'replay', '--failed', '--yes');
  assert.equal(bulk.code, 0, bulk.stdout);
  assert.equal(
    bulk.stdout,
    '1 request matches; will replay 0 requests, skip 1: 1 signed too far from the clock when they arrived (--force replays, if genuine)\n',
  );
  const plain = await cli(s, 'replay', id);
  assert.equal(plain.code, 1, plain.stdout);
  assert.equal((await readEvents(s.state)).filter((e) => e.text.includes('paid evt_old_1')).length, 0);
  const replayed = await cli(s, 'replay', id, '--force');
  assert.equal(replayed.code, 0, replayed.stdout);
  assert.equal((await readEvents(s.state)).filter((e) => e.text.includes('paid evt_old_1')).length, 1);
});

test('replay: a metadata-only entry says why not; filters list what matches and replay only with --yes; no server is one line', async (t) => {
  const s = await setup(t, [{
    match: { path: 'notes' },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    textTemplate: 'note {{n}}',
  }]);
  const server = await serve(t, s);
  assert.equal(
    (await post(server.url, '/hooks/wake', {
      headers: { authorization: 'Bearer wrong-wrong-wrong-wrong', 'x-request-id': 'bad-token' },
      body: {},
    })).status,
    401,
  );
  assert.equal(
    (await post(server.url, '/hooks/notes', {
      headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': 'bad-body' },
      body: '{"n": 1,}',
    })).status,
    400,
  );
  const metadata = await cli(s, 'replay', await entryOf(s, 'bad-token'));
  assert.equal(metadata.code, 1);
  assert.match(
    metadata.stdout,
    /cannot be replayed: its body was not kept \(not-read\): only its metadata is in the ledger/,
  );
  await entryOf(s, 'bad-body');

  const asked = await cli(s, 'replay', '--status', '400');
  assert.equal(asked.code, 0);
  assert.match(asked.stdout, /^1 request matches; will replay 1 request:\n.*400  ERR_INVALID_JSON  POST notes/);
  assert.match(asked.stderr, /nothing replayed; add --yes to replay it/);
  const done = await cli(s, 'replay', '--status', '400', '--yes');
  assert.equal(done.code, 1, 'the body is still not JSON: replayed, and failed again');
  assert.match(done.stdout, /replayed .* 400  ERR_INVALID_JSON/);
  assert.equal(
    (await cli(s, 'replay', '--status', '400', '--yes')).code,
    1,
    'a replay that failed again can be replayed again',
  );
  assert.equal((await cli(s, 'replay')).code, 2);
  assert.equal((await cli(s, 'replay', 'x', '--hook', 'notes')).code, 2);

  server.child.kill('SIGTERM');
  await server.exited;
  const none = await cli(s, 'replay', 'bad-body');
  assert.equal(none.code, 1);
  assert.match(
    none.stderr,
    /^hooks-ingress requests: no running server found for state directory .*; replay is done by the running server/,
  );
});
