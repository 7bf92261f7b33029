import { createHmac } from 'node:crypto';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { appendFile, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { Ledger } from '../lib/store/ledger/ledger.ts';
import { readLedger } from '../lib/store/ledger/read.ts';
import type { LedgerEntry } from '../lib/model/ledger-entry.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { type AppHarness, silentLogger, specConfig, startApp, type StartAppOptions, withHooks } from './_app.ts';
import { post, send } from './_http.ts';
import { SIGNERS } from './_signers.ts';
import { until } from './_until.ts';
import { replayOperation } from '../lib/server/replay.ts';
import { Claims } from '../lib/server/claims.ts';

const TOKEN = 'ledger-hook-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };

interface LedgerHarness extends AppHarness {
  ledger: Ledger;
  /** Every entry, once what is queued is written. */
  entries(): Promise<LedgerEntry[]>;
}

/** The app with a real ledger in its state directory (opened first, closed after the app). */
async function start(
  t: TestContext,
  raw: Record<string, unknown> = {},
  options: StartAppOptions = {},
): Promise<LedgerHarness> {
  const dir = await tempDir(t, 'edge-ledger-spec-');
  // A transform module for mappings that name one (no runner is given: calling it fails, a 500).
  await mkdir(join(dir, 'hooks', 'transforms'), { recursive: true });
  await writeFile(join(dir, 'hooks', 'transforms', 'nothing.mjs'), 'export default () => null;\n');
  const config = await specConfig(withHooks(raw, TOKEN), dir);
  const ledger = await Ledger.open(join(dir, 'state'), { config: config.hooks.ledger });
  defer(t, () => ledger.close());
  const h = await startApp(t, {
    raw,
    token: TOKEN,
    dir,
    ...options,
    with: (parts) => ({ ledger, ...(options.with?.(parts) ?? {}) }),
  });
  const entries = async () => {
    await ledger.flush();
    return readLedger(h.state);
  };
  return { ...h, ledger, entries };
}

async function only(h: LedgerHarness, where: (e: LedgerEntry) => boolean = () => true): Promise<LedgerEntry> {
  const found = (await h.entries()).filter(where);
  assert.equal(found.length, 1, JSON.stringify(found, null, 1));
  return found[0]!;
}

test('an accepted wake: an authenticated entry with the body, the request id, and the event it became (the event carries the request id)', async (t) => {
  const h = await start(t);
  const reply = await post(h.url, '/hooks/wake', {
    headers: { ...AUTH, 'x-request-id': 'wake-req-1' },
    body: { text: 'hello', mode: 'next-heartbeat' },
  });
  assert.equal(reply.status, 200);
  const entry = await only(h);
  assert.equal(entry.requestId, 'wake-req-1');
  assert.match(entry.id, /^[0-9a-f]{24}$/);
  assert.equal(entry.lane, 'authenticated');
  assert.equal(entry.auth, 'token');
  assert.equal(entry.hook, 'wake');
  assert.equal(entry.status, 200);
  assert.equal(entry.headers['authorization'], '[redacted]');
  assert.deepEqual(entry.body, {
    encoding: 'utf8',
    data: '{"text":"hello","mode":"next-heartbeat"}',
    bytes: 40,
    truncated: false,
  });
  const [event] = h.store.events();
  assert.deepEqual(entry.became, { events: [event!.seq] });
  assert.equal(event!.requestId, 'wake-req-1');
  const line = h.lines.find((l) => l['msg'] === 'request')!;
  assert.equal(line['entry'], entry.id);
  assert.equal(line['hook'], 'wake');
});

test('refusals of one client are one metadata-only entry with a count; the log line names the hook and the code', async (t) => {
  const h = await start(t);
  for (let i = 0; i < 3; i++) {
    assert.equal(
      (await post(h.url, '/hooks/wake', {
        headers: { authorization: 'Bearer wrong-token-000000000000' },
        body: { text: 'secret body text' },
      })).status,
      401,
    );
  }
  const entry = await only(h);
  assert.equal(entry.lane, 'unauthenticated');
  assert.equal(entry.auth, 'none');
  assert.equal(entry.count, 3);
  assert.equal(entry.code, 'ERR_UNAUTHORIZED');
  assert.equal(entry.body, undefined);
  assert.equal(entry.headers['authorization'], '[redacted]');
  // The log folds them as the ledger does: the first one's line, then their count.
  const lines = h.lines.filter((l) => l['msg'] === 'request');
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!['code'], 'ERR_UNAUTHORIZED');
  assert.equal(lines[0]!['hook'], 'wake');
  assert.equal(lines[0]!['entry'], entry.id);
  h.app.flushLog();
  assert.equal(h.lines.find((l) => l['msg'] === 'refused alike')?.['count'], 2);
  const text = await _files(h);
  assert.doesNotMatch(text, /wrong-token|secret body text/);
});

test('each outcome kind gets an entry: 400, 404, 405, 413, 408, 429, 503, 500, filtered out, deduplicated', async (t) => {
  const h = await start(
    t,
    {
      hooks: {
        maxBodyBytes: 1000,
        maxBacklogEvents: 1,
        authRateLimit: { maxFailures: 1, windowSeconds: 60, lockoutSeconds: 60 },
        mappings: [
          {
            match: { path: 'filtered' },
            action: 'wake',
            wakeMode: 'next-heartbeat',
            textTemplate: 'x',
            filter: { payload: { kind: 'wanted' } },
          },
          { match: { path: 'broken' }, action: 'wake', transform: { module: 'nothing.mjs' } },
        ],
      },
    },
    { with: () => ({ bodyTimeoutMs: 200 }) },
  );
  assert.equal(
    (await post(h.url, '/hooks/wake', { headers: { ...AUTH, 'content-type': 'application/json' }, body: '{not json' }))
      .status,
    400,
  );
  assert.equal((await post(h.url, '/hooks/nothing-here', { headers: AUTH, body: { a: 1 } })).status, 404);
  assert.equal((await send(h.url, '/hooks/wake', { method: 'PUT', headers: AUTH, body: { text: 'x' } })).status, 405);
  assert.equal((await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'x'.repeat(2000) } })).status, 413);
  assert.equal(await _partialBody(h.url, '/hooks/wake'), 408);
  assert.equal((await post(h.url, '/hooks/filtered', { headers: AUTH, body: { kind: 'other' } })).status, 200);
  assert.equal((await post(h.url, '/hooks/broken', { headers: AUTH, body: { kind: 'other' } })).status, 500);
  const first = await post(h.url, '/hooks/wake', {
    headers: { ...AUTH, 'idempotency-key': 'k1', 'x-request-id': 'first-copy' },
    body: { text: 'once', mode: 'next-heartbeat' },
  });
  assert.equal(first.status, 200);
  assert.equal(
    (await post(h.url, '/hooks/wake', {
      headers: { ...AUTH, 'idempotency-key': 'k1', 'x-request-id': 'second-copy' },
      body: { text: 'once', mode: 'next-heartbeat' },
    })).status,
    200,
  );
  assert.equal(
    (await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'backlog full', mode: 'next-heartbeat' } }))
      .status,
    503,
  );
  assert.equal(
    (await post(h.url, '/hooks/wake', { headers: { authorization: 'Bearer nope-nope-nope-nope' }, body: {} })).status,
    401,
  );
  assert.equal(
    (await post(h.url, '/hooks/wake', { headers: { authorization: 'Bearer nope-nope-nope-nope' }, body: {} })).status,
    429,
  );

  const entries = await h.entries();
  const by = (status: number, code?: string) =>
    entries.filter((e) => e.status === status && (code === undefined || e.code === code));
  assert.equal(by(400, 'ERR_INVALID_JSON')[0]?.body?.data, '{not json');
  assert.equal(by(404)[0]?.bodyOmitted, 'metadata-only');
  assert.equal(by(404)[0]?.hook, 'nothing-here');
  assert.equal(by(405)[0]?.hook, 'wake');
  assert.equal(by(413)[0]?.bodyOmitted, 'not-read');
  assert.equal(by(408)[0]?.code, 'ERR_BODY_TIMEOUT');
  assert.deepEqual(by(200).find((e) => e.hook === 'filtered')?.became, { ignored: true });
  assert.equal(by(200).find((e) => e.hook === 'filtered')?.mapping, undefined);
  assert.equal(by(500, 'ERR_MAPPING_FAILED')[0]?.mapping, 'mapping-2');
  const copies = entries.filter((e) => e.requestId.endsWith('-copy'));
  assert.deepEqual(copies.map((e) => e.became?.duplicateOf === undefined ? 'first' : e.became.duplicateOf), [
    'first',
    'first-copy',
  ]);
  assert.equal(by(503, 'ERR_UNAVAILABLE').length, 1);
  assert.equal(by(401).length, 1);
  assert.equal(by(429, 'ERR_TOO_MANY_FAILURES').length, 1);
});

test('a signed delivery under the wrong secret: kept with its body and signature headers in the unauthenticated lane, the verdict says why; the log line gives the reason', async (t) => {
  const h = await start(t, {
    hooks: {
      mappings: [
        {
          match: { path: 'github' },
          signature: { scheme: 'github', secret: 'right-secret' },
          action: 'wake',
          textTemplate: 'push',
        },
        {
          match: { path: 'stripe' },
          signature: { scheme: 'stripe', secret: 'whsec_stripe_right', toleranceSeconds: 300 },
          action: 'wake',
          textTemplate: 'paid',
        },
      ],
    },
  });
  const body = '{"ref":"refs/heads/main"}';
  const headers = await SIGNERS['github']!({ secret: 'wrong-secret', body, nowSeconds: 0, id: 'delivery-1' });
  assert.equal(
    (await post(h.url, '/hooks/github', { headers: { ...headers, 'content-type': 'application/json' }, body })).status,
    401,
  );
  const stale = await SIGNERS['stripe']!({
    secret: 'whsec_stripe_right',
    body: '{"id":"evt_1"}',
    nowSeconds: Math.floor(Date.now() / 1000) - 3600,
    id: '',
  });
  assert.equal(
    (await post(h.url, '/hooks/stripe', {
      headers: { ...stale, 'content-type': 'application/json' },
      body: '{"id":"evt_1"}',
    })).status,
    401,
  );
  const refused = await only(h, (e) => e.hook === 'github');
  assert.equal(refused.lane, 'unauthenticated');
  assert.equal(refused.body?.data, body);
  assert.equal(refused.headers['x-hub-signature-256'], headers['x-hub-signature-256']);
  assert.equal(refused.headers['x-github-delivery'], 'delivery-1');
  assert.equal(refused.signature?.why, 'bad-signature');
  assert.equal(refused.signature?.header, 'X-Hub-Signature-256');
  const old = await only(h, (e) => e.hook === 'stripe');
  assert.equal(old.signature?.why, 'stale-timestamp');
  assert.ok(
    old.signature!.skewSeconds! >= 3600 && old.signature!.skewSeconds! < 3700,
    String(old.signature?.skewSeconds),
  );
  const line = h.lines.find((l) => l['hook'] === 'github')!;
  assert.equal(line['reason'], 'invalid signature: X-Hub-Signature-256 does not match the body');
  const text = await _files(h) + JSON.stringify(h.lines);
  assert.doesNotMatch(text, /right-secret|wrong-secret|whsec_stripe_right/);
  assert.doesNotMatch(JSON.stringify(h.lines), new RegExp(headers['x-hub-signature-256']!.slice(7)));
});

test('the shared-token header of a gitlab path, the hook token, cookies and a Meta verify token in the query are never kept', async (t) => {
  const h = await start(t, {
    hooks: {
      mappings: [
        {
          match: { path: 'gl' },
          signature: { scheme: 'gitlab', secret: 'gl-secret-41' },
          action: 'wake',
          wakeMode: 'next-heartbeat',
          textTemplate: 'push',
        },
        {
          match: { path: 'meta' },
          signature: { scheme: 'meta', secret: 'meta-app-secret', verifyToken: 'meta-verify-77' },
          action: 'wake',
          textTemplate: 'm',
        },
      ],
    },
  });
  assert.equal(
    (await post(h.url, '/hooks/gl', {
      headers: { 'x-gitlab-token': 'gl-secret-41', 'x-gitlab-event-uuid': 'u-1', cookie: 'session=cookie-value-9' },
      body: { a: 1 },
    })).status,
    200,
  );
  assert.equal(
    (await post(h.url, '/hooks/wake', {
      headers: { 'x-openclaw-token': TOKEN, 'proxy-authorization': 'Basic cHJveHk=' },
      body: { text: 'x', mode: 'next-heartbeat' },
    })).status,
    200,
  );
  const handshake = await send(
    h.url,
    '/hooks/meta?hub.mode=subscribe&hub.verify_token=meta-verify-77&hub.challenge=c-1',
  );
  assert.equal(handshake.text, 'c-1');
  const entries = await h.entries();
  const gl = entries.find((e) => e.hook === 'gl')!;
  assert.equal(gl.headers['x-gitlab-token'], '[redacted]');
  assert.equal(gl.headers['x-gitlab-event-uuid'], 'u-1');
  assert.equal(gl.headers['cookie'], '[redacted]');
  assert.equal(gl.auth, 'signature');
  const meta = entries.find((e) => e.hook === 'meta')!;
  assert.deepEqual(meta.became, { handshake: 'meta' });
  assert.match(meta.query!, /hub.verify_token=%5Bredacted%5D/);
  const text = await _files(h);
  for (const secret of [TOKEN, 'gl-secret-41', 'cookie-value-9', 'cHJveHk=', 'meta-verify-77', 'meta-app-secret']) {
    assert.ok(!text.includes(secret), secret);
  }
});

test("every credential header is redacted on every path (the product's one rule), and only the signatures over the body are kept, a configured hmac header among them; a signed path still verifies on replay", async (t) => {
  const h = await start(t, {
    hooks: {
      mappings: [
        {
          match: { path: 'gl' },
          signature: { scheme: 'gitlab', secret: 'gl-secret-77' },
          action: 'wake',
          wakeMode: 'next-heartbeat',
          textTemplate: 'push',
        },
        {
          match: { path: 'signed' },
          signature: {
            scheme: 'hmac',
            secret: 'hmac-secret-5',
            header: 'X-Body-Secret',
            algorithm: 'sha256',
            encoding: 'hex',
          },
          action: 'wake',
          wakeMode: 'next-heartbeat',
          textTemplate: 'x',
        },
        {
          match: { path: 'github' },
          signature: { scheme: 'github', secret: 'gh-secret-3' },
          action: 'wake',
          wakeMode: 'next-heartbeat',
          textTemplate: 'push',
        },
      ],
    },
  });
  const credentials = {
    'x-gitlab-token': 'gl-secret-77',
    'x-webhook-secret': 'webhook-secret-1',
    'x-telegram-bot-api-secret-token': 'tg-secret-2',
    'x-custom-password': 'pw-3',
    'x-service-key': 'key-4',
  };
  // The GitLab secret on another path, with other credential headers, authenticated by the hook token.
  assert.equal(
    (await post(h.url, '/hooks/wake', {
      headers: { ...AUTH, ...credentials },
      body: { text: 'x', mode: 'next-heartbeat' },
    })).status,
    200,
  );
  // And refused (no token): the metadata-only entry redacts them too.
  assert.equal((await post(h.url, '/hooks/wake', { headers: credentials, body: { text: 'x' } })).status, 401);
  const body = '{"n":1}';
  const digest = createHmac('sha256', 'hmac-secret-5').update(body).digest('hex');
  assert.equal(
    (await post(h.url, '/hooks/signed', {
      headers: { 'x-body-secret': digest, 'x-webhook-secret': 'webhook-secret-1' },
      body,
    })).status,
    200,
  );
  const github = await SIGNERS['github']!({ secret: 'gh-secret-3', body, nowSeconds: 0, id: 'd-1' });
  assert.equal(
    (await post(h.url, '/hooks/github', { headers: { ...github, 'x-body-secret': 'not-a-signature-here' }, body }))
      .status,
    200,
  );
  const entries = await h.entries();
  for (const entry of entries.filter((e) => e.hook === 'wake')) {
    for (const name of Object.keys(credentials)) {
      assert.equal(entry.headers[name], '[redacted]', `${name} in the ${entry.status} entry`);
    }
  }
  const signed = entries.find((e) => e.hook === 'signed')!;
  assert.equal(
    signed.headers['x-body-secret'],
    digest,
    "the hmac path's configured header is a signature over the body",
  );
  assert.equal(signed.headers['x-webhook-secret'], '[redacted]');
  const gh = entries.find((e) => e.hook === 'github')!;
  assert.equal(gh.headers['x-hub-signature-256'], github['x-hub-signature-256']);
  assert.equal(gh.headers['x-body-secret'], '[redacted]', 'the configured header of another path is a credential here');
  const text = await _files(h);
  for (const secret of Object.values(credentials)) assert.ok(!text.includes(secret), secret);
  // The signatures kept verify again.
  for (const entry of [signed, gh]) assert.equal((await h.app.replay(entry)).status, 200, entry.hook);
});

test('a mapping with ledgerBody false keeps no body; with hooks.ledger.enabled false nothing is recorded', async (t) => {
  const h = await start(t, {
    hooks: {
      mappings: [{
        match: { path: 'private' },
        action: 'wake',
        wakeMode: 'next-heartbeat',
        textTemplate: 'x',
        ledgerBody: false,
      }],
    },
  });
  assert.equal((await post(h.url, '/hooks/private', { headers: AUTH, body: { ssn: '123-45-6789' } })).status, 200);
  const entry = await only(h);
  assert.equal(entry.bodyOmitted, 'opted-out');
  assert.doesNotMatch(await _files(h), /123-45-6789/);

  const off = await start(t, { hooks: { ledger: { enabled: false } } });
  assert.equal(
    (await post(off.url, '/hooks/wake', { headers: AUTH, body: { text: 'x', mode: 'next-heartbeat' } })).status,
    200,
  );
  assert.deepEqual(await off.entries(), []);
  assert.equal(off.lines.find((l) => l['msg'] === 'request')!['entry'], undefined);
});

test('a flood of refused requests many times a small unauthenticated budget leaves the authenticated entries, and each lane within its bytes and count', async (t) => {
  const budget = { maxEntries: 20, maxBytes: 65_536, maxBodyBytes: 2048 };
  const h = await start(t, {
    gateway: { trustedProxies: ['127.0.0.1/32'] },
    hooks: {
      authRateLimit: { maxFailures: 100_000 },
      ledger: { maxEntries: 50, maxBytes: 262_144, unauthenticated: budget },
      mappings: [{
        match: { path: 'github' },
        signature: { scheme: 'github', secret: 'right-secret' },
        action: 'wake',
        wakeMode: 'next-heartbeat',
        textTemplate: 'push',
      }],
    },
  });
  for (let i = 0; i < 5; i++) {
    assert.equal(
      (await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: `kept ${i}`, mode: 'next-heartbeat' } })).status,
      200,
    );
  }
  const body = JSON.stringify({ filler: 'f'.repeat(4000) });
  const headers = await SIGNERS['github']!({ secret: 'wrong', body, nowSeconds: 0, id: 'd' });
  // 300 refusals from 300 addresses (none coalesced), most with a 4 KB body: ~1.2 MB at the door, against a 64 KiB budget.
  for (let i = 0; i < 300; i++) {
    const from = { 'x-forwarded-for': `10.0.${i >> 8}.${i & 255}` };
    const reply = i % 3 === 0
      ? await post(h.url, '/hooks/wake', {
        headers: { ...from, authorization: 'Bearer wrong-wrong-wrong-wrong' },
        body: {},
      })
      : await post(h.url, '/hooks/github', {
        headers: { ...from, ...headers, 'content-type': 'application/json' },
        body,
      });
    assert.equal(reply.status, 401);
    if (i % 50 === 0) await h.ledger.flush();
  }
  const entries = await h.entries();
  assert.deepEqual(
    entries.filter((e) => e.lane === 'authenticated').map((e) => e.body?.data),
    [0, 1, 2, 3, 4].map((i) => `{"text":"kept ${i}","mode":"next-heartbeat"}`),
  );
  const open = entries.filter((e) => e.lane === 'unauthenticated');
  assert.ok(open.length > 0 && open.length <= budget.maxEntries, String(open.length));
  assert.ok(open.every((e) => e.body === undefined || e.body.data.length <= budget.maxBodyBytes));
  const sizes = await _laneBytes(h);
  assert.ok(sizes.u <= budget.maxBytes, `unauthenticated lane ${sizes.u} bytes`);
  assert.ok(sizes.a <= 262_144);
});

test('a ledger file that is damaged is skipped line by line by the reader', async (t) => {
  const h = await start(t);
  assert.equal(
    (await post(h.url, '/hooks/wake', { headers: AUTH, body: { text: 'x', mode: 'next-heartbeat' } })).status,
    200,
  );
  await h.ledger.flush();
  const [file] = (await readdir(join(h.state, 'ledger'))).filter((f) => f.startsWith('a-'));
  await appendFile(join(h.state, 'ledger', file!), 'garbage\n{"id":1}\n');
  const damaged: string[] = [];
  const entries = await readLedger(h.state, (d) => void damaged.push(`${d.line}: ${d.problem}`));
  assert.equal(entries.length, 1);
  assert.equal(damaged.length, 2);
  assert.match(damaged[0]!, /^2: not JSON$/);
});

// Every byte the ledger wrote, as text.
async function _files(h: LedgerHarness): Promise<string> {
  await h.ledger.flush();
  const dir = join(h.state, 'ledger');
  let text = '';
  for (const name of await readdir(dir)) text += await readFile(join(dir, name), 'utf8');
  return text;
}

async function _laneBytes(h: LedgerHarness): Promise<{ a: number; u: number }> {
  const dir = join(h.state, 'ledger');
  const sizes = { a: 0, u: 0 };
  for (const name of await readdir(dir)) sizes[name[0] as 'a' | 'u'] += (await stat(join(dir, name))).size;
  return sizes;
}

// A POST whose body never finishes: the answer's status.
function _partialBody(url: string, path: string): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"text":`,
      );
    });
    let data = '';
    socket.on('data', (d: Buffer) => {
      data += d;
      const m = /^HTTP\/1\.1 (\d{3})/.exec(data);
      if (m) {
        socket.destroy();
        resolve(Number(m[1]));
      }
    });
    socket.on('error', reject);
  });
}

test('App.replay: a gitlab delivery that passed its token replays on its recorded verdict (the token is not kept); one that failed cannot be checked again', async (t) => {
  const h = await start(t, {
    hooks: {
      mappings: [{
        match: { path: 'gl' },
        signature: { scheme: 'gitlab', secret: 'gl-secret-55' },
        action: 'wake',
        wakeMode: 'next-heartbeat',
        textTemplate: 'push {{n}}',
      }],
    },
  });
  assert.equal(
    (await post(h.url, '/hooks/gl', {
      headers: { 'x-gitlab-token': 'gl-secret-55', 'x-request-id': 'gl-ok' },
      body: { n: 1 },
    })).status,
    200,
  );
  assert.equal(
    (await post(h.url, '/hooks/gl', {
      headers: { 'x-gitlab-token': 'gl-wrong', 'x-request-id': 'gl-bad' },
      body: { n: 2 },
    })).status,
    401,
  );
  const entries = await h.entries();
  const passed = entries.find((e) => e.requestId === 'gl-ok')!;
  const outcome = await h.app.replay(passed);
  assert.equal(outcome.status, 200);
  assert.equal(outcome.replayOf, passed.id);
  assert.equal(h.store.events().filter((e) => e.text.includes('push 1')).length, 2);
  const failedOne = entries.find((e) => e.requestId === 'gl-bad')!;
  await assert.rejects(h.app.replay(failedOne), (error: Error & { status?: number; code?: string }) => {
    assert.equal(error.status, 409);
    assert.equal(error.code, 'ERR_NOT_REPLAYABLE');
    assert.match(error.message, /its gitlab token failed, and the token is not kept/);
    return true;
  });
  const replayEntry = (await h.entries()).find((e) => e.replayOf === passed.id)!;
  assert.equal(replayEntry.auth, 'signature');
  assert.equal(replayEntry.lane, 'authenticated');
});

test('App.replay: a request to the gmail hook reaches only mappings on the path "gmail", as hooks.gmail.hookToken does live', async (t) => {
  const gmailToken = 'gmail-only-credential-0123456789';
  const bySource = {
    id: 'by-source',
    match: { source: 'x' },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    textTemplate: 'by source',
    allowUnsafeExternalContent: true,
  };
  const own = { id: 'own', match: { path: 'gmail' }, action: 'wake', wakeMode: 'next-heartbeat', textTemplate: 'own' };
  const h = await start(t, { hooks: { gmail: { hookToken: gmailToken }, mappings: [bySource, own] } });
  // gog's credential (readable by every local user) passes the source mapping over and reaches its own.
  const sent = await post(h.url, '/hooks/gmail', {
    headers: { authorization: `Bearer ${gmailToken}`, 'x-request-id': 'gog-1' },
    body: { source: 'x' },
  });
  assert.equal(sent.status, 200);
  const entry = (await h.entries()).find((e) => e.requestId === 'gog-1')!;
  // Its replay must not open what the credential never opened.
  assert.equal((await h.app.replay(entry)).status, 200);
  assert.deepEqual(
    h.store.events().map((e) => e.text.includes('by source') ? 'by source' : e.text.includes('own') ? 'own' : e.text),
    ['own', 'own'],
  );
});

test('replayOperation: a second replay of an entry while the first runs is refused, so it runs once', async (t) => {
  const h = await start(t);
  assert.equal(
    (await post(h.url, '/hooks/wake', {
      headers: { ...AUTH, 'content-type': 'application/json', 'x-request-id': 'once' },
      body: '{"text":',
    })).status,
    400,
  );
  await h.ledger.flush();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let runs = 0;
  const op = replayOperation({
    stateDir: h.state,
    ledger: h.ledger,
    store: h.store,
    claims: new Claims(),
    log: silentLogger,
    app: {
      preview: () => Promise.reject(new Error('not used')),
      taken: async () => null,
      replay: async (entry) => {
        runs++;
        await gate;
        return { replayOf: entry.id, requestId: 'r', status: 200 };
      },
    },
  });
  const first = op({ ids: ['once'] });
  await until('the first replay to start', () => runs === 1);
  const second = await op({ ids: ['once'] });
  assert.deepEqual(second.results.map((r) => (r.ok ? 'ok' : r.error)), [
    `a replay of entry ${(await h.entries())[0]!.id} is running now`,
  ]);
  release();
  assert.equal((await first).results[0]!.ok, true);
  assert.equal(runs, 1);
  await assert.rejects(op({ ids: [] }), /ids: must be a non-empty list/);
});

test('replayOperation: the dry run and the refusal name why an entry runs only when forced, and force runs just the ids it is given', async (t) => {
  const h = await start(t);
  for (const id of ['done', 'open']) {
    assert.equal(
      (await post(h.url, '/hooks/wake', {
        headers: { ...AUTH, 'x-request-id': id },
        body: id === 'done' ? { text: 'x' } : {},
      })).status,
      id === 'done' ? 200 : 400,
    );
  }
  await h.ledger.flush();
  const ran: string[] = [];
  const op = replayOperation({
    stateDir: h.state,
    ledger: h.ledger,
    store: h.store,
    claims: new Claims(),
    log: silentLogger,
    app: {
      preview: async () => ({ hook: 'wake', status: 200, transforms: [], actions: [], warnings: [] }),
      replay: async (entry) => (ran.push(entry.requestId), { replayOf: entry.id, requestId: 'r', status: 200 }),
      taken: async () => null,
    },
  });
  const plan = await op({ ids: ['done', 'open'], dryRun: true });
  assert.deepEqual(plan.results.map((r) => (r.ok && 'preview' in r ? r.needsForce ?? 'runs' : 'refused')), [
    'succeeded',
    'runs',
  ]);
  const refused = await op({ ids: ['done'] });
  assert.deepEqual(refused.results.map((r) => (r.ok ? 'ran' : r.needsForce)), ['succeeded']);
  assert.deepEqual(ran, []);
  await op({ ids: ['open'] });
  await op({ ids: ['done'], force: true });
  assert.deepEqual(ran, ['open', 'done']);
});
