// A replay claims its root (the original request) inside the running server, and writes what it
// came to in the journal line of its effects: a single replay racing a bulk one, a ledger that is
// off, an original trimmed out of the ledger, a kill -9 right after a replay: each fixed failure
// takes effect once. Most deliveries here carry no delivery id, so the record is all that tells a
// replay of a replayed request apart from a new one; the bulk replay's plan and requests resolve too.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test, type TestContext } from 'node:test';
import { main } from '../../lib/cli/main.ts';
import { readLedger } from '../../lib/store/ledger/read.ts';
import { readEvents, readRoots } from '../../lib/store/journal/read.ts';
import { configFile, serveState as serve, type Spawned, spawnServer, stopAfter } from '../_cli.ts';
import { fake } from '../_fake-server.ts';
import { post } from '../_http.ts';
import { captureIo } from '../_io.ts';
import { githubExample, SIGNERS } from '../_signers.ts';
import { until } from '../_until.ts';

const TOKEN = 'claim-cli-token-0123456789abcdef';
const SECRET = 'the-real-secret';

interface Setup {
  config: string;
  state: string;
  write(raw: unknown): Promise<void>;
}

const wake = (path: string, secret: string) => ({
  match: { path },
  signature: { scheme: 'github', secret },
  action: 'wake',
  wakeMode: 'next-heartbeat',
  textTemplate: `${path}: push to {{repository.name}}`,
});

async function reload(s: Setup, server: Spawned, raw: unknown): Promise<void> {
  await s.write(raw);
  const before = server.stderr().split('"msg":"reloaded"').length;
  // process.kill: Deno's ChildProcess.kill() sends nothing once it has sent one signal.
  process.kill(server.child.pid!, 'SIGHUP');
  await until('the reload', () => server.stderr().split('"msg":"reloaded"').length > before, { detail: server.stderr });
}

async function cli(s: Setup, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { io, out } = captureIo({ HOOKS_INGRESS_CONFIG: s.config });
  const code = await main(['requests', ...args, '--state-dir', s.state], io);
  return { code, ...out };
}

/** A GitHub push signed with the real secret, sent as request `requestId` (with no delivery id when `anonymous`); answers the status. */
async function push(server: Spawned, path: string, requestId: string, anonymous = false): Promise<number> {
  const body = JSON.stringify(githubExample('push'));
  const { 'x-github-delivery': delivery, ...signed } = await SIGNERS['github']!({
    secret: SECRET,
    body,
    nowSeconds: 0,
    id: `delivery-${requestId}`,
  });
  const headers = anonymous ? signed : { ...signed, 'x-github-delivery': delivery! };
  return (await post(server.url, `/hooks/${path}`, {
    headers: { ...headers, 'content-type': 'application/json', 'x-request-id': requestId },
    body,
  })).status;
}

async function entryOf(s: Setup, requestId: string): Promise<string> {
  return until(
    `the entry of ${requestId}`,
    async () => (await readLedger(s.state)).find((e) => e.requestId === requestId)?.id,
  );
}

async function pushes(s: Setup, path: string): Promise<number> {
  return (await readEvents(s.state)).filter((e) => e.text.includes(`${path}: push to`)).length;
}

/** An OpenAI-compatible model that holds every call until `release`, then answers each at once. */
async function heldModel(t: TestContext): Promise<{ url: string; calls: () => number; release: () => void }> {
  const held: ServerResponse[] = [];
  let released = false;
  const answer = (res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'c',
        object: 'chat.completion',
        created: 1_700_000_000,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'done' }, finish_reason: 'stop' }],
      }),
    );
  };
  const server = await fake(t, (_req, res) => (released ? answer(res) : held.push(res)));
  return {
    url: `${server.url}/v1`,
    calls: () => server.seen.length,
    release: () => {
      released = true;
      held.splice(0).forEach(answer);
    },
  };
}

test('a single replay racing a bulk one: the root runs once (one event), and the bulk replay says a replay of it succeeded', async (t) => {
  const model = await heldModel(t);
  // The bulk replay runs `slow` first: an agent run it waits for (waitForCompletion), held at the model.
  const slow = {
    match: { path: 'slow' },
    signature: { scheme: 'github', secret: 'wrong' },
    action: 'agent',
    messageTemplate: 'slow',
    wakeMode: 'next-heartbeat',
    deliver: false,
    waitForCompletion: true,
  };
  const raw = (secret: string) => ({
    hooks: {
      enabled: true,
      token: TOKEN,
      mappings: [{ ...slow, signature: { scheme: 'github', secret } }, wake('gh', secret)],
    },
    agents: { defaults: { model: 'fake/m', timeoutSeconds: 120 } },
    models: { providers: { fake: { api: 'openai-completions', baseUrl: model.url } } },
  });
  const s = await configFile(t, raw('wrong'), 'cli-claim-race-');
  const server = await serve(t, s);
  assert.equal(await push(server, 'slow', 'slow-1'), 401);
  assert.equal(await push(server, 'gh', 'gh-1', true), 401);
  const id = await entryOf(s, 'gh-1');
  await reload(s, server, raw(SECRET));

  const bulk = cli(s, 'replay', '--failed', '--yes');
  await until('the bulk replay to hold at the model', () => model.calls() > 0);
  const single = await cli(s, 'replay', id);
  assert.equal(single.code, 0, single.stdout + single.stderr);
  assert.match(single.stdout, new RegExp(`^replayed ${id}  as [0-9a-f]{24} request=\\S+  200  event \\d+\\n$`));
  model.release();
  const done = await bulk;
  assert.equal(await pushes(s, 'gh'), 1, `one event; the bulk replay said:\n${done.stdout}`);
  assert.match(
    done.stdout,
    new RegExp(
      `not replayed ${id}: a replay of entry ${id} succeeded \\(replay [0-9a-f]{24}, 200\\); replay it again with --force\\n`,
    ),
  );
});

test('with the ledger off, a replay that succeeded needs --force to run again, and forces only then', async (t) => {
  const raw = (secret: string, ledger: boolean) => ({
    hooks: { enabled: true, token: TOKEN, ledger: { enabled: ledger }, mappings: [wake('gh', secret)] },
  });
  const s = await configFile(t, raw('wrong', true), 'cli-claim-off-');
  const server = await serve(t, s);
  assert.equal(await push(server, 'gh', 'off-1', true), 401);
  const id = await entryOf(s, 'off-1');
  await reload(s, server, raw(SECRET, false));

  const first = await cli(s, 'replay', id);
  assert.equal(first.code, 0, first.stdout + first.stderr);
  assert.match(
    first.stdout,
    new RegExp(`^replayed ${id}  request=\\S+  200  event \\d+\\n$`),
    'no entry: the ledger is off',
  );
  const again = await cli(s, 'replay', id);
  assert.equal(again.code, 1, again.stdout);
  assert.match(
    again.stdout,
    new RegExp(
      `^not replayed ${id}: a replay of entry ${id} succeeded \\(replay request \\S+, 200\\); replay it again with --force\\n$`,
    ),
  );
  assert.equal(await pushes(s, 'gh'), 1);
  assert.equal((await readLedger(s.state)).length, 1, 'nothing recorded with the ledger off');

  const forced = await cli(s, 'replay', id, '--force');
  assert.equal(forced.code, 0, forced.stdout);
  assert.equal(await pushes(s, 'gh'), 2);
  const record = (await readRoots(s.state)).get(id);
  assert.equal(record?.state, 'succeeded');
  assert.deepEqual(record?.replays.map((r) => [r.entry, r.status]), [[undefined, 200], [undefined, 200]]);
});

test('kill -9 right after a replay: after the restart the root is succeeded (its record rode on the line of its event), and a replay needs --force', async (t) => {
  const raw = (secret: string) => ({ hooks: { enabled: true, token: TOKEN, mappings: [wake('gh', secret)] } });
  const s = await configFile(t, raw('wrong'), 'cli-claim-crash-');
  const first = await serve(t, s);
  assert.equal(await push(first, 'gh', 'crash-1'), 401);
  const id = await entryOf(s, 'crash-1');
  await reload(s, first, raw(SECRET));
  const replayed = await cli(s, 'replay', id);
  assert.equal(replayed.code, 0, replayed.stdout + replayed.stderr);
  process.kill(first.child.pid!, 'SIGKILL');
  await first.exited;

  const record = (await readRoots(s.state)).get(id);
  assert.equal(record?.state, 'succeeded', 'written with the replay, read with the server stopped');
  const second = await spawnServer(['--config', s.config, '--port', '0', '--state-dir', s.state]);
  stopAfter(t, second);
  const again = await cli(s, 'replay', id);
  assert.equal(again.code, 1, again.stdout);
  assert.match(again.stdout, /a replay of entry \S+ succeeded \(replay .*, 200\); replay it again with --force/);
  assert.equal(await pushes(s, 'gh'), 1);
});

test('an original trimmed out of the ledger: its two failed replays stand for it, and a bulk replay runs it once (one event)', async (t) => {
  // Fixed secret but a template that renders no text: the replays authenticate (the main lane) and fail.
  const raw = (secret: string, broken = false) => ({
    hooks: {
      enabled: true,
      token: TOKEN,
      authRateLimit: { maxFailures: 10_000 },
      ledger: { unauthenticated: { maxEntries: 3, maxBytes: 262_144 } },
      mappings: [
        { ...wake('gh', secret), ...(broken ? { textTemplate: '{{nothing}}' } : {}) },
        wake('noise', 'never-this'),
      ],
    },
  });
  const s = await configFile(t, raw('wrong', true), 'cli-claim-trim-');
  const server = await serve(t, s);
  // No delivery id: nothing but the original's record tells its replays apart from new deliveries.
  assert.equal(await push(server, 'gh', 'trim-1', true), 401);
  const id = await entryOf(s, 'trim-1');
  await reload(s, server, raw(SECRET, true));
  for (let n = 0; n < 2; n++) assert.equal((await cli(s, 'replay', id)).code, 1);
  const replays = await until('the two replays', async () => {
    const found = (await readLedger(s.state)).filter((e) => e.replayOf === id);
    return found.length === 2 ? found : undefined;
  });
  assert.deepEqual(replays.map((e) => [e.lane, e.status >= 400]), [['authenticated', true], ['authenticated', true]]);
  // Anyone can push a refused delivery out of its lane: refused deliveries of their own.
  const noise = JSON.stringify({ pad: 'x'.repeat(4000) });
  await until('the original trimmed', async () => {
    await post(server.url, '/hooks/noise', {
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` },
      body: noise,
    });
    return !(await readLedger(s.state)).some((e) => e.id === id);
  });
  await reload(s, server, raw(SECRET));

  const listed = await cli(s, '--failed', '--hook', 'gh');
  assert.equal(listed.stdout.split('\n').filter(Boolean).length, 1, listed.stdout);
  assert.match(
    listed.stdout,
    new RegExp(`${replays[1]!.id} .*replay of ${id}  replayed 2x, not resolved \\(last 400\\)\\n$`),
  );
  const bulk = await cli(s, 'replay', '--failed', '--hook', 'gh', '--yes');
  assert.equal(await pushes(s, 'gh'), 1, `one event; the bulk replay said:\n${bulk.stdout}`);
  assert.match(
    bulk.stdout,
    /^2 requests match; will replay 1 request, skip 1: 1 already counted with their original:\n/,
  );
  assert.match(bulk.stdout, new RegExp(`^replayed ${id}  as [0-9a-f]{24} request=\\S+  200  event \\d+$`, 'm'));
  assert.equal((await cli(s, '--failed', '--hook', 'gh')).stdout, '');
});

test('a chain of two failed replays, then the fix: the bulk plan counts the original once, one event, and nothing is left in --failed', async (t) => {
  const raw = (secret: string) => ({ hooks: { enabled: true, token: TOKEN, mappings: [wake('gh', secret)] } });
  const s = await configFile(t, raw('wrong'), 'cli-claim-chain-');
  const server = await serve(t, s);
  assert.equal(await push(server, 'gh', 'chain-1'), 401);
  const id = await entryOf(s, 'chain-1');
  assert.equal((await cli(s, 'replay', id)).code, 1);
  const first = await until(
    'the first replay',
    async () => (await readLedger(s.state)).find((e) => e.replayOf === id)?.id,
  );
  // Named through the replay, it is the original that runs again: the chain does not grow.
  assert.equal((await cli(s, 'replay', first)).code, 1);
  await until('the second replay', async () => (await readLedger(s.state)).length === 3);
  assert.deepEqual((await readLedger(s.state)).map((e) => e.replayOf ?? '-'), ['-', id, id]);
  const listed = await cli(s, '--failed');
  assert.match(
    listed.stdout,
    new RegExp(`^\\S+  401  ERR_UNAUTHORIZED  POST gh  ${id}  .*replayed 2x, not resolved \\(last 401\\)\\n$`),
  );
  await reload(s, server, raw(SECRET));

  const plan = await cli(s, 'replay', '--failed');
  assert.equal(plan.code, 0);
  assert.match(
    plan.stdout,
    new RegExp(
      `^3 requests match; will replay 1 request, skip 2: 2 already counted with their original:\\n\\S+  401  ERR_UNAUTHORIZED  POST gh  ${id}  `,
    ),
  );
  assert.match(plan.stderr, /nothing replayed; add --yes to replay it/);
  const bulk = await cli(s, 'replay', '--failed', '--yes');
  assert.equal(bulk.code, 0, bulk.stdout);
  assert.equal(await pushes(s, 'gh'), 1);
  assert.equal((await cli(s, '--failed')).stdout, '', 'nothing left');
  const all = (await cli(s, '--failed', '--all')).stdout.split('\n').filter(Boolean);
  assert.equal(all.length, 3);
  for (const line of all) assert.match(line, /resolved by replay [0-9a-f]{24} \(200\)$/);
  const shown = await cli(s, 'show', id);
  assert.match(shown.stdout, /^resolution {2}resolved by replay [0-9a-f]{24} \(200\)$/m);
  assert.deepEqual([...shown.stdout.matchAll(/^replayed {4}\S+ at \S+: (\d+)$/gm)].map((m) => m[1]), [
    '401',
    '401',
    '200',
  ]);
  assert.doesNotMatch(shown.stdout, /^replay {6}/m, 'no replay offered for what is resolved');
  // A second bulk pass has nothing to run.
  const again = await cli(s, 'replay', '--failed', '--all', '--yes');
  assert.match(
    again.stdout,
    /^3 requests match; will replay 0 requests, skip 3: 1 resolved already, by a replay or by hand \(--force replays\); 2 already counted with their original\n$/,
  );
  assert.equal(await pushes(s, 'gh'), 1);
});

test('requests resolve: a failure that can never be fixed is marked resolved by hand; --failed leaves it out, a replay needs --force, and the reading commands need no server', async (t) => {
  const raw = { hooks: { enabled: true, token: TOKEN, mappings: [wake('gh', 'wrong')] } };
  const s = await configFile(t, raw, 'cli-claim-resolve-');
  const server = await serve(t, s);
  assert.equal(await push(server, 'gh', 'lost-1'), 401);
  assert.equal(await push(server, 'gh', 'open-1'), 401);
  const lost = await entryOf(s, 'lost-1');
  const open = await entryOf(s, 'open-1');
  const done = await cli(s, 'resolve', 'lost-1');
  assert.equal(done.code, 0, done.stderr);
  assert.equal(done.stdout, `resolved ${lost} by hand (named as lost-1)\n`);
  const twice = await cli(s, 'resolve', lost, 'nobody');
  assert.equal(twice.code, 1);
  assert.match(
    twice.stdout,
    new RegExp(
      `^not resolved ${lost}: entry ${lost} was marked resolved already, at \\S+\\nnot resolved nobody: no request ledger entry has the id "nobody"`,
    ),
  );
  const refused = await cli(s, 'replay', lost);
  assert.match(
    refused.stdout,
    new RegExp(`^not replayed ${lost}: entry ${lost} was marked resolved at \\S+; replay it with --force\\n$`),
  );
  const plan = await cli(s, 'replay', '--failed', '--all');
  assert.match(
    plan.stdout,
    /^2 requests match; will replay 1 request, skip 1: 1 resolved already, by a replay or by hand \(--force replays\):\n/,
  );
  assert.equal((await cli(s, 'resolve')).code, 2);

  server.child.kill('SIGTERM');
  await server.exited;
  const failed = await cli(s, '--failed');
  assert.equal(failed.code, 0);
  assert.deepEqual(failed.stdout.split('\n').filter(Boolean).map((l) => l.split('  ')[4]), [open]);
  assert.match((await cli(s, '--failed', '--all')).stdout, new RegExp(`${lost} .*resolved by hand\\n`));
  assert.match((await cli(s, 'show', lost)).stdout, /^resolution {2}resolved by hand at \S+$/m);
  const json = JSON.parse((await cli(s, 'show', lost, '--json')).stdout) as { resolution: { state: string } };
  assert.equal(json.resolution.state, 'resolved');
  assert.equal((await cli(s, '--all')).code, 2, '--all goes with --failed');
  const offline = await cli(s, 'resolve', open);
  assert.equal(offline.code, 1);
  assert.match(offline.stderr, /resolve is done by the running server \(start it, then resolve\)/);
});
