// A replay claims its root (the original request) inside the running server, and writes what it
// came to in the journal line of its effects: a single replay racing a bulk one, a ledger that is
// off, an original trimmed out of the ledger, a kill -9 right after a replay: each fixed failure
// takes effect once.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test, type TestContext } from 'node:test';
import { main } from '../../lib/cli/main.ts';
import { readLedger } from '../../lib/store/ledger/read.ts';
import { readEvents, readRoots } from '../../lib/store/journal/read.ts';
import { configFile, serveState as serve, spawnServer, stopAfter, type Spawned } from '../_cli.ts';
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

const wake = (path: string, secret: string) => ({ match: { path }, signature: { scheme: 'github', secret }, action: 'wake', wakeMode: 'next-heartbeat', textTemplate: `${path}: push to {{repository.name}}` });

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

/** A GitHub push signed with the real secret, sent as request `requestId`; answers the status. */
async function push(server: Spawned, path: string, requestId: string): Promise<number> {
  const body = JSON.stringify(githubExample('push'));
  const headers = await SIGNERS['github']!({ secret: SECRET, body, nowSeconds: 0, id: `delivery-${requestId}` });
  return (await post(server.url, `/hooks/${path}`, { headers: { ...headers, 'content-type': 'application/json', 'x-request-id': requestId }, body })).status;
}

async function entryOf(s: Setup, requestId: string): Promise<string> {
  return until(`the entry of ${requestId}`, async () => (await readLedger(s.state)).find((e) => e.requestId === requestId)?.id);
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
    res.end(JSON.stringify({ id: 'c', object: 'chat.completion', created: 1_700_000_000, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'done' }, finish_reason: 'stop' }] }));
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
  const slow = { match: { path: 'slow' }, signature: { scheme: 'github', secret: 'wrong' }, action: 'agent', messageTemplate: 'slow', wakeMode: 'next-heartbeat', deliver: false, waitForCompletion: true };
  const raw = (secret: string) => ({
    hooks: { enabled: true, token: TOKEN, mappings: [{ ...slow, signature: { scheme: 'github', secret } }, wake('gh', secret)] },
    agents: { defaults: { model: 'fake/m', timeoutSeconds: 120 } },
    models: { providers: { fake: { api: 'openai-completions', baseUrl: model.url } } },
  });
  const s = await configFile(t, raw('wrong'), 'cli-claim-race-');
  const server = await serve(t, s);
  assert.equal(await push(server, 'slow', 'slow-1'), 401);
  assert.equal(await push(server, 'gh', 'gh-1'), 401);
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
  assert.match(done.stdout, new RegExp(`not replayed ${id}: a replay of entry ${id} succeeded \\(replay [0-9a-f]{24}, 200\\); replay it again with --force\\n`));
});

test('with the ledger off, a replay that succeeded needs --force to run again, and forces only then', async (t) => {
  const raw = (secret: string, ledger: boolean) => ({ hooks: { enabled: true, token: TOKEN, ledger: { enabled: ledger }, mappings: [wake('gh', secret)] } });
  const s = await configFile(t, raw('wrong', true), 'cli-claim-off-');
  const server = await serve(t, s);
  assert.equal(await push(server, 'gh', 'off-1'), 401);
  const id = await entryOf(s, 'off-1');
  await reload(s, server, raw(SECRET, false));

  const first = await cli(s, 'replay', id);
  assert.equal(first.code, 0, first.stdout + first.stderr);
  assert.match(first.stdout, new RegExp(`^replayed ${id}  request=\\S+  200  event \\d+\\n$`), 'no entry: the ledger is off');
  const again = await cli(s, 'replay', id);
  assert.equal(again.code, 1, again.stdout);
  assert.match(again.stdout, new RegExp(`^not replayed ${id}: a replay of entry ${id} succeeded \\(replay request \\S+, 200\\); replay it again with --force\\n$`));
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
