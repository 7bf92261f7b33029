// A provider's delivery is taken once, whichever way it arrives, against a real server process: a
// delivery refused for a wrong secret and replayed after the fix makes the provider's redelivery a
// duplicate; a provider retry accepted after the fix makes the replay of the refused copy a skip,
// which the dry run announces. GitHub (signed by @octokit/webhooks-methods), Stripe (the `stripe`
// package) and Standard Webhooks (the `standardwebhooks` package).
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { main } from '../../lib/cli/main.ts';
import { readLedger } from '../../lib/store/ledger/read.ts';
import { readEvents } from '../../lib/store/journal/read.ts';
import { configFile, serveState as serve, type Spawned } from '../_cli.ts';
import { post, type Reply } from '../_http.ts';
import { captureIo } from '../_io.ts';
import { githubExample, SIGNERS, WHSEC, WHSEC_2 } from '../_signers.ts';
import { until } from '../_until.ts';

const TOKEN = 'replay-taken-token-0123456789abcdef';

interface Setup {
  config: string;
  state: string;
  write(mappings: unknown[]): Promise<void>;
}

const hooks = (mappings: unknown[]) => ({ hooks: { enabled: true, token: TOKEN, mappings } });

async function setup(t: TestContext, mappings: unknown[]): Promise<Setup> {
  const { config, state, write } = await configFile(t, hooks(mappings), 'cli-taken-');
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

async function events(s: Setup, text: string): Promise<number> {
  return (await readEvents(s.state)).filter((e) => e.text.includes(text)).length;
}

const wake = (path: string, signature: Record<string, unknown>, template: string) => ({
  match: { path },
  signature,
  action: 'wake',
  wakeMode: 'next-heartbeat',
  textTemplate: template,
});
const github = (secret: string) => wake('github', { scheme: 'github', secret }, 'push to {{repository.name}}');
const stripe = (secret: string) => wake('stripe', { scheme: 'stripe', secret }, 'paid {{id}}');
const standard = (secret: string) => wake('sw', { scheme: 'standard-webhooks', secret }, 'order {{data.order}}');

const GITHUB_BODY = JSON.stringify(githubExample('push'));

// GitHub sends a delivery, and its redelivery, with the same X-GitHub-Delivery.
async function github_(server: Spawned, secret: string, requestId: string): Promise<Reply> {
  const headers = await SIGNERS['github']!({
    secret,
    body: GITHUB_BODY,
    nowSeconds: 0,
    id: '72d3162e-cc78-11e3-81ab-4c9367dc0958',
  });
  return post(server.url, '/hooks/github', {
    headers: { ...headers, 'content-type': 'application/json', 'x-request-id': requestId },
    body: GITHUB_BODY,
  });
}

test("GitHub: a delivery refused for a wrong secret and replayed after the fix makes the provider's redelivery (same X-GitHub-Delivery) a duplicate: one event", async (t) => {
  const s = await setup(t, [github('the-old-wrong-secret')]);
  const server = await serve(t, s);
  assert.equal((await github_(server, 'the-real-secret', 'gh-refused')).status, 401);
  const id = await entryOf(s, 'gh-refused');
  await reload(s, server, [github('the-real-secret')]);
  const replayed = await cli(s, 'replay', id);
  assert.equal(replayed.code, 0, replayed.stderr + replayed.stdout);
  const replayRequest = /request=(\S+)/.exec(replayed.stdout)![1]!;
  const redelivered = await github_(server, 'the-real-secret', 'gh-redeliver');
  assert.equal(redelivered.status, 200, redelivered.text);
  assert.equal(redelivered.headers['idempotent-replayed'], 'true');
  assert.equal(await events(s, 'push to'), 1);
  const entry = await until(
    "the redelivery's entry",
    async () => (await readLedger(s.state)).find((e) => e.requestId === 'gh-redeliver'),
  );
  assert.deepEqual(entry.became, { duplicateOf: replayRequest });
});

test("GitHub: the provider's retry accepted after the fix makes the refused copy a skip in a bulk replay; the dry run says it was already accepted", async (t) => {
  const s = await setup(t, [github('the-old-wrong-secret')]);
  const server = await serve(t, s);
  assert.equal((await github_(server, 'the-real-secret', 'gh-refused')).status, 401);
  const id = await entryOf(s, 'gh-refused');
  await reload(s, server, [github('the-real-secret')]);
  assert.equal((await github_(server, 'the-real-secret', 'gh-retry')).status, 200);
  // The plan of a bulk replay asks the server, and skips it, naming the request that took its id.
  const plan =
    `1 request matches; will replay 0 requests, skip 1: 1 whose delivery id was already accepted, live or by a replay before them \\(--force replays\\)\n` +
    `skipped ${id}: entry ${id}'s delivery id was already accepted as request gh-retry; replay it again with --force\n`;
  for (const flag of ['--dry-run', '--yes']) {
    const bulk = await cli(s, 'replay', '--failed', flag);
    assert.equal(bulk.code, 0, bulk.stderr + bulk.stdout);
    assert.match(bulk.stdout, new RegExp(`^${plan}$`));
  }
  // Named, a dry run says the same.
  const dry = await cli(s, 'replay', id, '--dry-run');
  assert.match(
    dry.stdout,
    new RegExp(
      `^dry run of ${id}: nothing replayed \\(a replay is skipped without --force: entry ${id}'s delivery id was already accepted as request gh-retry; replay it again with --force\\)`,
    ),
  );
  const one = await cli(s, 'replay', id);
  assert.equal(one.code, 1);
  assert.match(
    one.stdout,
    new RegExp(
      `^not replayed ${id}: entry ${id}'s delivery id was already accepted as request gh-retry; replay it again with --force\\n$`,
    ),
  );
  assert.equal(await events(s, 'push to'), 1);
  assert.equal((await readLedger(s.state)).filter((e) => e.replayOf === id).length, 0, 'nothing ran');
});

test("Stripe: an event refused for a wrong secret and replayed after the fix makes Stripe's retry of the event (same id, a new signature) a duplicate: one event", async (t) => {
  const s = await setup(t, [stripe('whsec_the_old_wrong_one')]);
  const server = await serve(t, s);
  const body = JSON.stringify({ id: 'evt_taken_1', object: 'event', type: 'invoice.paid' });
  const send = async (requestId: string) => {
    const headers = await SIGNERS['stripe']!({
      secret: 'whsec_the_real_one',
      body,
      nowSeconds: Math.floor(Date.now() / 1000),
      id: '',
    });
    return post(server.url, '/hooks/stripe', {
      headers: { ...headers, 'content-type': 'application/json', 'x-request-id': requestId },
      body,
    });
  };
  assert.equal((await send('stripe-refused')).status, 401);
  const id = await entryOf(s, 'stripe-refused');
  await reload(s, server, [stripe('whsec_the_real_one')]);
  const replayed = await cli(s, 'replay', id);
  assert.equal(replayed.code, 0, replayed.stderr + replayed.stdout);
  const retried = await send('stripe-retry');
  assert.equal(retried.status, 200);
  assert.equal(retried.headers['idempotent-replayed'], 'true');
  assert.equal(await events(s, 'paid evt_taken_1'), 1);
});

test("Standard Webhooks: two refused copies of one message, replayed in one bulk run after the fix: the first runs, the second is skipped (the dry run says so), and the sender's retry is a duplicate", async (t) => {
  const s = await setup(t, [standard(WHSEC_2)]);
  const server = await serve(t, s);
  const body = JSON.stringify({ type: 'order.paid', data: { order: 'o-17' } });
  const send = async (requestId: string) => {
    const headers = await SIGNERS['standard-webhooks']!({
      secret: WHSEC,
      body,
      nowSeconds: Math.floor(Date.now() / 1000),
      id: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W',
    });
    return post(server.url, '/hooks/sw', {
      headers: { ...headers, 'content-type': 'application/json', 'x-request-id': requestId },
      body,
    });
  };
  assert.equal((await send('sw-1')).status, 401);
  assert.equal((await send('sw-2')).status, 401);
  const [first, second] = [await entryOf(s, 'sw-1'), await entryOf(s, 'sw-2')];
  await reload(s, server, [standard(WHSEC)]);
  const dry = await cli(s, 'replay', '--failed', '--dry-run');
  assert.match(
    dry.stdout,
    /^2 requests match; will replay 1 request, skip 1: 1 whose delivery id was already accepted, live or by a replay before them \(--force replays\):\n/,
  );
  assert.match(
    dry.stdout,
    new RegExp(
      `\\nskipped ${second}: entry ${second}'s delivery id would already be accepted by the replay of entry ${first} before it; replay it again with --force\\n`,
    ),
  );
  assert.match(dry.stdout, new RegExp(`\\ndry run of ${first}: nothing replayed\\n`));
  assert.ok(!dry.stdout.includes(`dry run of ${second}`), dry.stdout);
  const bulk = await cli(s, 'replay', '--failed', '--yes');
  const replayRequest = new RegExp(`replayed ${first}  as \\S+ request=(\\S+)  200`).exec(bulk.stdout)?.[1];
  assert.ok(replayRequest !== undefined, bulk.stdout);
  assert.ok(!bulk.stdout.includes(`replayed ${second}`), bulk.stdout);
  // Asked again, the second copy is skipped for the replay that took its id.
  const again = await cli(s, 'replay', '--failed', '--yes');
  assert.match(
    again.stdout,
    new RegExp(
      `\\nskipped ${second}: entry ${second}'s delivery id was already accepted as request ${replayRequest}; replay it again with --force\\n$`,
    ),
  );
  const retried = await send('sw-retry');
  assert.equal(retried.status, 200);
  assert.equal(retried.headers['idempotent-replayed'], 'true');
  assert.equal(await events(s, 'order o-17'), 1);
});

test('Standard Webhooks: two refused copies of one message, replayed in one bulk run with --force: the second copy is still skipped for the first one in the run (one event), not forced with it', async (t) => {
  const s = await setup(t, [standard(WHSEC_2)]);
  const server = await serve(t, s);
  const body = JSON.stringify({ type: 'order.paid', data: { order: 'o-18' } });
  const send = async (requestId: string) => {
    const headers = await SIGNERS['standard-webhooks']!({
      secret: WHSEC,
      body,
      nowSeconds: Math.floor(Date.now() / 1000),
      id: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4X',
    });
    return post(server.url, '/hooks/sw', {
      headers: { ...headers, 'content-type': 'application/json', 'x-request-id': requestId },
      body,
    });
  };
  assert.equal((await send('sw-1')).status, 401);
  assert.equal((await send('sw-2')).status, 401);
  const [first, second] = [await entryOf(s, 'sw-1'), await entryOf(s, 'sw-2')];
  await reload(s, server, [standard(WHSEC)]);
  const bulk = await cli(s, 'replay', '--failed', '--yes', '--force');
  assert.match(
    bulk.stdout,
    /^2 requests match; will replay 1 request, skip 1: 1 whose delivery id was already accepted, live or by a replay before them \(--force replays\):\n/,
  );
  assert.match(
    bulk.stdout,
    new RegExp(
      `\\nskipped ${second}: entry ${second}'s delivery id would already be accepted by the replay of entry ${first} before it; replay it again with --force\\n`,
    ),
  );
  assert.ok(!bulk.stdout.includes(`replayed ${second}`), bulk.stdout);
  assert.equal(await events(s, 'order o-18'), 1, bulk.stdout);
});

test('GitHub: a refused copy whose redelivery was accepted live after the fix reads as resolved by that delivery: left out of requests --failed, shown resolved with --all and in show', async (t) => {
  const s = await setup(t, [github('the-old-wrong-secret')]);
  const server = await serve(t, s);
  assert.equal((await github_(server, 'the-real-secret', 'gh-refused')).status, 401);
  const id = await entryOf(s, 'gh-refused');
  const before = await cli(s, '--failed');
  assert.equal(before.code, 0, before.stderr);
  assert.match(
    before.stdout,
    new RegExp(`^\\S+  401 .* ${id} .*request=gh-refused`),
    'the refusal is listed while nothing took its delivery id',
  );
  await reload(s, server, [github('the-real-secret')]);
  assert.equal((await github_(server, 'the-real-secret', 'gh-retry')).status, 200);
  const retry = await entryOf(s, 'gh-retry');
  const open = await cli(s, '--failed');
  assert.equal(open.code, 0, open.stderr);
  assert.equal(open.stdout, '', 'nothing is left to deal with');
  const all = await cli(s, '--failed', '--all');
  assert.equal(all.code, 0, all.stderr);
  assert.match(all.stdout, new RegExp(`^\\S+  401 .* ${id} .*resolved by delivery ${retry} \\(accepted live\\)\\n$`));
  const json = await cli(s, '--failed', '--all', '--json');
  assert.deepEqual(JSON.parse(json.stdout).resolution, {
    root: id,
    state: 'resolved',
    delivery: { requestId: 'gh-retry', entry: retry, live: true },
    replays: [],
  });
  const show = await cli(s, 'show', id);
  assert.equal(show.code, 0, show.stderr);
  assert.match(show.stdout, new RegExp(`resolution +resolved by delivery ${retry} \\(accepted live\\)`));
  assert.doesNotMatch(show.stdout, /requests replay|requests resolve/, 'nothing is offered for it');
  assert.equal(await events(s, 'push to'), 1);
});
