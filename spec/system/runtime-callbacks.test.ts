// Completion callbacks end to end: `hooks-ingress serve` as a process, a local model, and receivers that
// are node:http servers on 127.0.0.1, verifying what arrives with the standardwebhooks package.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { defer } from '../_cleanup.ts';
import { configFile, runCli, type Spawned, spawnServer, stopAfter } from '../_cli.ts';
import { closedUrl, json, listenJson } from '../_fake-server.ts';
import { post } from '../_http.ts';
import { until } from '../_until.ts';

const TOKEN = 'callbacks-spec-hook-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };

function whsec(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

interface Delivery {
  path: string;
  headers: Record<string, string>;
  body: string;
}

interface Receiver {
  url: string;
  port: number;
  got: Delivery[];
  close(): Promise<void>;
}

/** A receiver on 127.0.0.1 (`port` 0: any free one) that records each POST and answers as `answer` says. */
async function receiver(
  t: TestContext,
  port = 0,
  answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => json(res, 200, { ok: true }),
): Promise<Receiver> {
  const got: Delivery[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({
        path: req.url ?? '',
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
        body: Buffer.concat(chunks).toString('utf8'),
      });
      answer(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  defer(t, close);
  return { url: `http://127.0.0.1:${bound}`, port: bound, got, close };
}

interface Model {
  url: string;
  /** The prompts the model was asked, in order. */
  prompts: string[];
}

/**
 * A local OpenAI-compatible model: a message holding FAIL is refused (400, the run ends error), one
 * holding HANG is never answered (the run times out), and any other is answered "done: <message>".
 */
async function model(t: TestContext): Promise<Model> {
  const prompts: string[] = [];
  const server = await listenJson<{ messages: { content: string }[] }>((seen, res) => {
    const prompt = seen.body.messages.at(-1)?.content ?? '';
    prompts.push(prompt);
    if (prompt.includes('HANG')) return;
    if (prompt.includes('FAIL')) {
      return json(res, 400, { error: { message: 'bad request', type: 'invalid_request_error', code: null } });
    }
    const word = /\b(RUN-\w+)\b/.exec(prompt)?.[1] ?? 'nothing';
    json(res, 200, {
      id: 'c',
      object: 'chat.completion',
      created: 1,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: `done: ${word}` }, finish_reason: 'stop' }],
    });
  });
  defer(t, () => server.close());
  return { url: `${server.url}/v1`, prompts };
}

function config(m: Model, hooks: Record<string, unknown>): Record<string, unknown> {
  return {
    hooks: { enabled: true, token: TOKEN, ...hooks },
    agents: { defaults: { model: 'fake/m', timeoutSeconds: 60, maxConcurrent: 1 } },
    models: { providers: { fake: { api: 'openai-completions', baseUrl: m.url } } },
  };
}

async function agent(server: Spawned, body: Record<string, unknown>, path = '/hooks/agent'): Promise<string> {
  const accepted = await post(server.url, path, { headers: AUTH, body: { deliver: false, ...body } });
  assert.equal(accepted.status, 202, accepted.text);
  return (JSON.parse(accepted.text) as { runId: string }).runId;
}

/** The event a delivery carries, once its signature verified with `secret`. */
function verified(
  delivery: Delivery,
  secret: string,
): { type: string; version: number; data: Record<string, unknown> } {
  return new Webhook(secret).verify(delivery.body, delivery.headers) as {
    type: string;
    version: number;
    data: Record<string, unknown>;
  };
}

async function outbox(state: string, ...args: string[]): Promise<Record<string, unknown>[]> {
  const listed = await runCli(['outbox', '--json', '--state-dir', state, ...args]);
  assert.equal(listed.code, 0, listed.stderr);
  return listed.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
}

test(
  "a finished run's completion is POSTed to hooks.onComplete's URL, signed with each secret (both verify with standardwebhooks), the reply only with includeReply",
  { timeout: 120_000 },
  async (t) => {
    const m = await model(t);
    const receiving = await receiver(t);
    const [oldSecret, newSecret, mappedSecret] = [whsec(), whsec(), whsec()];
    const file = await configFile(
      t,
      config(m, {
        onComplete: { url: `${receiving.url}/ci/done?job=7`, secret: [oldSecret, newSecret], includeReply: true },
        mappings: [{
          match: { path: 'build' },
          action: 'agent',
          messageTemplate: 'build {{id}}',
          deliver: false,
          onComplete: { url: `${receiving.url}/mapped`, secret: mappedSecret },
        }],
      }),
      'callbacks-',
    );
    const server = await spawnServer(['--config', file.config, '--port', '0', '--state-dir', file.state]);
    stopAfter(t, server);
    const runId = await agent(server, { message: 'please RUN-one', name: 'CI' });
    const mappedRun = await agent(server, { id: 'RUN-two' }, '/hooks/build');
    await until('both callbacks', () => (receiving.got.length >= 2 ? true : undefined));
    const direct = receiving.got.find((d) => d.path === '/ci/done?job=7')!;
    const mapped = receiving.got.find((d) => d.path === '/mapped')!;
    // Each secret signs: a receiver holding either verifies.
    const event = verified(direct, oldSecret);
    assert.deepEqual(verified(direct, newSecret), event);
    assert.equal(direct.headers['webhook-signature']!.split(' ').length, 2);
    assert.equal(direct.headers['webhook-id'], `msg_${runId}`);
    assert.equal(direct.headers['content-type'], 'application/json');
    assert.equal(event.type, 'run.completed');
    assert.equal(event.version, 1);
    assert.deepEqual(
      { ...event.data, sessionKey: undefined },
      {
        runId,
        hook: 'agent',
        agentId: 'main',
        sessionKey: undefined,
        requestId: event.data['requestId'],
        status: 'ok',
        replyDisposition: 'visible',
        delivered: false,
        deliveryAttempted: false,
        reply: 'done: RUN-one',
      },
    );
    const mappedEvent = verified(mapped, mappedSecret);
    assert.throws(() => verified(mapped, oldSecret), /signature/i);
    assert.equal(mappedEvent.data['runId'], mappedRun);
    assert.equal(mappedEvent.data['status'], 'ok');
    assert.equal(mappedEvent.data['hook'], 'build');
    assert.equal('reply' in mappedEvent.data, false, 'includeReply is off by default');
    // No secret in the log, and the outbox lists both as sent.
    for (const secret of [oldSecret, newSecret, mappedSecret]) {
      assert.equal(server.stderr().includes(secret.slice(6)), false, 'a secret reached the log');
    }
    // Nor in the state directory: the journal, the request ledger, anything else written there.
    for (const name of await readdir(file.state, { recursive: true })) {
      const path = join(file.state, name);
      if (!(await stat(path)).isFile()) continue;
      const text = await readFile(path, 'latin1');
      for (const secret of [oldSecret, newSecret, mappedSecret]) {
        assert.equal(text.includes(secret.slice(6)), false, `a secret is in ${name}`);
      }
    }
    const listed = await outbox(file.state);
    // The receiver's URL (its query here) is never printed: the origin is.
    assert.deepEqual(listed.map((e) => [e['url'], e['origin']]), [[undefined, receiving.url], [
      undefined,
      receiving.url,
    ]]);
    assert.deepEqual(
      listed.map((e) => [e['id'], e['state']]).sort(),
      [
        [`msg_${mappedRun}`, 'sent'],
        [`msg_${runId}`, 'sent'],
      ].sort(),
    );
  },
);

test('error and timeout runs send their status', { timeout: 120_000 }, async (t) => {
  const m = await model(t);
  const receiving = await receiver(t);
  const secret = whsec();
  const file = await configFile(t, config(m, { onComplete: { url: receiving.url, secret } }), 'callbacks-');
  const server = await spawnServer(['--config', file.config, '--port', '0', '--state-dir', file.state]);
  stopAfter(t, server);
  const failed = await agent(server, { message: 'FAIL please' });
  const slow = await agent(server, { message: 'HANG please', timeoutSeconds: 1 });
  await until('two callbacks', () => (receiving.got.length >= 2 ? true : undefined));
  const statuses = Object.fromEntries(
    receiving.got.map((d) => verified(d, secret).data).map((data) => [data['runId'], data['status']]),
  );
  assert.deepEqual(statuses, { [failed]: 'error', [slow]: 'timeout' });
});

test(
  "a callbackUrl outside hooks.callbackOrigins is 400 ERR_CALLBACK_ORIGIN; one inside gets the run's callback, signed with hooks.onComplete's secret",
  { timeout: 120_000 },
  async (t) => {
    const m = await model(t);
    const allowed = await receiver(t);
    const other = await receiver(t);
    const secret = whsec();
    const file = await configFile(
      t,
      config(m, {
        onComplete: { url: `${other.url}/default`, secret },
        callbackOrigins: [allowed.url],
      }),
      'callbacks-',
    );
    const server = await spawnServer(['--config', file.config, '--port', '0', '--state-dir', file.state]);
    stopAfter(t, server);
    for (const callbackUrl of [`${other.url}/hook`, `${allowed.url.replace('127.0.0.1', 'localhost')}/hook`]) {
      const refused = await post(server.url, '/hooks/agent', {
        headers: AUTH,
        body: { message: 'RUN-x', deliver: false, callbackUrl },
      });
      assert.equal(refused.status, 400, refused.text);
      assert.deepEqual(JSON.parse(refused.text), {
        ok: false,
        error: 'callbackUrl: its origin is not one of hooks.callbackOrigins',
        code: 'ERR_CALLBACK_ORIGIN',
      });
    }
    const runId = await agent(server, { message: 'RUN-mine', callbackUrl: `${allowed.url}/mine?x=1` });
    await until('the callback', () => (allowed.got.length > 0 ? true : undefined));
    assert.equal(allowed.got[0]!.path, '/mine?x=1');
    assert.equal(verified(allowed.got[0]!, secret).data['runId'], runId);
    assert.equal(other.got.length, 0, 'neither the refused requests nor the default URL got anything');
  },
);

test(
  'a 307 is not followed: the redirect target receives nothing, the callback is dead after its maximum age, listed by outbox, and outbox retry --dead sends it again once the receiver answers',
  { timeout: 120_000 },
  async (t) => {
    const m = await model(t);
    const target = await receiver(t);
    let redirect = true;
    const redirecting = await receiver(t, 0, (_req, res) => {
      if (redirect) res.writeHead(307, { location: `${target.url}/elsewhere?token=abc` }).end();
      else json(res, 200, {});
    });
    const file = await configFile(
      t,
      config(m, { onComplete: { url: redirecting.url, secret: whsec(), maxAgeSeconds: 3 } }),
      'callbacks-',
    );
    const server = await spawnServer(['--config', file.config, '--port', '0', '--state-dir', file.state]);
    stopAfter(t, server);
    const runId = await agent(server, { message: 'RUN-redirect' });
    const dead = await until('the dead callback', async () => {
      const [entry] = await outbox(file.state, '--state', 'dead');
      return entry;
    });
    assert.equal(dead['runId'], runId);
    assert.ok(redirecting.got.length >= 1);
    assert.equal(target.got.length, 0, 'the redirect was followed');
    assert.match(
      String(dead['lastError']),
      new RegExp(
        `^not accepted within 3 s \\(last: receiver answered 307, a redirect to ${target.url}/elsewhere, which is not followed\\)$`,
      ),
    );
    const text = await runCli(['outbox', '--state-dir', file.state]);
    assert.match(text.stdout, new RegExp(`dead  msg_${runId}  callback ${redirecting.url} hook=agent runId=${runId}`));
    // The receiver is fixed; the running server (not in forward mode) sends the dead callback again, same id.
    redirect = false;
    const tried = redirecting.got.length;
    const retried = await runCli(['outbox', 'retry', '--dead', '--state-dir', file.state]);
    assert.equal(retried.code, 0, retried.stderr);
    assert.equal(retried.stdout, '1 entry pending again; the server is sending them\n');
    await until('sent', async () => ((await outbox(file.state, '--state', 'sent')).length === 1 ? true : undefined));
    assert.equal(redirecting.got.length, tried + 1);
    assert.equal(redirecting.got.at(-1)!.headers['webhook-id'], `msg_${runId}`);
  },
);

test("a receiver that never answers does not delay another origin's callbacks", { timeout: 120_000 }, async (t) => {
  const m = await model(t);
  const held: ServerResponse[] = [];
  const stuck = await receiver(t, 0, (_req, res) => void held.push(res));
  const fine = await receiver(t);
  const file = await configFile(
    t,
    config(m, {
      onComplete: { url: fine.url, secret: whsec() },
      mappings: [{
        match: { path: 'stuck' },
        action: 'agent',
        messageTemplate: 'RUN-stuck {{n}}',
        deliver: false,
        onComplete: { url: stuck.url, secret: whsec() },
      }],
    }),
    'callbacks-',
  );
  const server = await spawnServer(['--config', file.config, '--port', '0', '--state-dir', file.state]);
  stopAfter(t, server);
  await agent(server, { n: 1 }, '/hooks/stuck');
  await agent(server, { n: 2 }, '/hooks/stuck');
  await until('the stuck receiver holding the first', () => (held.length > 0 ? true : undefined));
  const runs = [await agent(server, { message: 'RUN-a' }), await agent(server, { message: 'RUN-b' })];
  await until('the other origin', () => (fine.got.length >= 2 ? true : undefined));
  assert.deepEqual(fine.got.map((d) => d.headers['webhook-id']), runs.map((id) => `msg_${id}`));
  // The stuck origin's first POST is still unanswered, and its second waits behind it.
  assert.equal(stuck.got.length, 1);
  for (const res of held) res.destroy();
});

test(
  'a receiver down for a while, then up, receives each callback once and in order, across a kill -9 of the server',
  { timeout: 180_000 },
  async (t) => {
    const m = await model(t);
    const down = await closedUrl();
    const secret = whsec();
    const file = await configFile(t, config(m, { onComplete: { url: `${down}/cb`, secret } }), 'callbacks-');
    const args = ['--config', file.config, '--port', '0', '--state-dir', file.state];
    const first = await spawnServer(args);
    stopAfter(t, first, 'SIGKILL');
    const runs: string[] = [];
    for (const word of ['RUN-1', 'RUN-2', 'RUN-3']) runs.push(await agent(first, { message: word }));
    // Every run ended and its callback was tried at least once, in vain.
    await until('the callbacks tried', async () => {
      const entries = await outbox(file.state);
      return entries.length === 3 && (entries[0]!['attempts'] as number) >= 1 ? true : undefined;
    });
    first.child.kill('SIGKILL');
    await first.exited;
    const again = await spawnServer(args);
    stopAfter(t, again);
    const up = await receiver(t, Number(new URL(down).port));
    await until('three callbacks', async () => {
      const entries = await outbox(file.state, '--state', 'sent');
      return entries.length === 3 ? true : undefined;
    });
    assert.deepEqual(
      up.got.map((d) => verified(d, secret).data['runId']),
      runs,
      'each once, in the order the runs ended',
    );
    assert.deepEqual(up.got.map((d) => d.headers['webhook-id']), runs.map((id) => `msg_${id}`));
  },
);
