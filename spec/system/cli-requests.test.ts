// `hooks-ingress requests` against a real server process: what arrived is listed (filters, --json,
// --follow), one entry is shown in full and safe for a terminal, and bad input gets one short line.
import assert from 'node:assert/strict';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { main } from '../../lib/cli/main.ts';
import { type ConfigFile, configFile, serveState as serve } from '../_cli.ts';
import { post } from '../_http.ts';
import { captureIo } from '../_io.ts';
import { SIGNERS } from '../_signers.ts';
import { until } from '../_until.ts';

const TOKEN = 'requests-cli-token-0123456789abcdef';
const GH_SECRET = 'requests-cli-github-secret';

function setup(t: TestContext, extra: Record<string, unknown> = {}): Promise<ConfigFile> {
  const mappings = [
    {
      match: { path: 'notes' },
      action: 'wake',
      wakeMode: 'next-heartbeat',
      textTemplate: 'note {{title}}',
      allowUnsafeExternalContent: true,
    },
    {
      match: { path: 'github' },
      signature: { scheme: 'github', secret: GH_SECRET },
      action: 'wake',
      wakeMode: 'next-heartbeat',
      textTemplate: 'push',
    },
  ];
  return configFile(t, { hooks: { enabled: true, token: TOKEN, mappings, ...extra } }, 'cli-requests-');
}

async function cli(s: ConfigFile, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { io, out } = captureIo({ HOOKS_INGRESS_CONFIG: s.config });
  const code = await main(['requests', ...args, '--state-dir', s.state], io);
  return { code, ...out };
}

test('requests lists what arrived, newest last, within half a second of the answers; filters by hook, status, class, code and --failed; show prints one entry safe for a terminal', async (t) => {
  const s = await setup(t);
  const server = await serve(t, s);
  const auth = { authorization: `Bearer ${TOKEN}` };
  const nasty = { title: 'red \u001b[31mALERT\u001b[0m \u001b]0;pwned\u0007 done', when: 'now' };
  assert.equal(
    (await post(server.url, '/hooks/notes', { headers: { ...auth, 'x-request-id': 'note-1' }, body: nasty })).status,
    200,
  );
  assert.equal(
    (await post(server.url, '/hooks/wake', { headers: { authorization: 'Bearer wrong-wrong-wrong-wrong' }, body: {} }))
      .status,
    401,
  );
  const body = '{"ref":"refs/heads/main"}';
  const signed = await SIGNERS['github']!({ secret: 'not-the-secret', body, nowSeconds: 0, id: 'gh-delivery-1' });
  assert.equal(
    (await post(server.url, '/hooks/github', {
      headers: { ...signed, 'content-type': 'application/json', 'x-request-id': 'gh-1' },
      body,
    })).status,
    401,
  );

  const listed = await until('three entries', async () => {
    const out = await cli(s);
    return out.stdout.split('\n').filter(Boolean).length === 3 ? out : null;
  });
  assert.equal(listed.code, 0, listed.stderr);
  const lines = listed.stdout.trim().split('\n');
  assert.match(lines[0]!, /  200  -  POST notes  [0-9a-f]{24}  request=note-1  127\.0\.0\.1  event \d+/);
  assert.match(lines[1]!, /  401  ERR_UNAUTHORIZED  POST wake  /);
  assert.match(lines[2]!, /  401  ERR_UNAUTHORIZED  POST github  .*signature bad-signature/);

  assert.equal((await cli(s, '--hook', 'github')).stdout.trim().split('\n').length, 1);
  assert.equal((await cli(s, '--status', '4xx')).stdout.trim().split('\n').length, 2);
  assert.equal((await cli(s, '--status', '200')).stdout.trim().split('\n').length, 1);
  assert.equal((await cli(s, '--failed', '-n', '1')).stdout.trim().split('\n').length, 1);
  assert.equal((await cli(s, '--code', 'ERR_UNAUTHORIZED', '--since', '1h')).stdout.trim().split('\n').length, 2);
  assert.equal((await cli(s, '--until', '2000-01-01')).stdout, '');

  const json = (await cli(s, '--json')).stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(json.map((e) => e['requestId']), ['note-1', json[1]!['requestId'], 'gh-1']);

  const shown = await cli(s, 'show', 'note-1');
  assert.equal(shown.code, 0, shown.stderr);
  assert.doesNotMatch(shown.stdout, /\u001b|\u0007/);
  assert.match(shown.stdout, /red \\x1b\[31mALERT\\x1b\[0m \\x1b\]0;pwned\\x07 done/);
  assert.match(shown.stdout, /^ {2}authorization: \[redacted\]$/m);
  assert.match(shown.stdout, /^events:\n {2}.*\[hook:notes\]  note red/m);
  assert.match(shown.stdout, /^body: \d+ bytes:\n {2}\{\n {4}"title"/m);
  const gh = await cli(s, 'show', 'gh-1');
  assert.match(
    gh.stdout,
    /^signature {3}github: refused, bad-signature: invalid signature: X-Hub-Signature-256 does not match the body$/m,
  );
  assert.match(gh.stdout, /^ {2}x-github-delivery: gh-delivery-1$/m);
  assert.match(gh.stdout, /^replay {6}hooks-ingress requests replay [0-9a-f]{24}$/m);
  const shownJson = JSON.parse((await cli(s, 'show', 'gh-1', '--json')).stdout) as { entry: { id: string } };
  assert.equal((await cli(s, 'show', shownJson.entry.id)).code, 0);

  const everything = (await cli(s, '--json')).stdout + shown.stdout + gh.stdout + server.stderr();
  for (const secret of [TOKEN, GH_SECRET, 'not-the-secret', 'wrong-wrong-wrong-wrong']) {
    assert.ok(!everything.includes(secret), secret);
  }
});

test('requests: bad input is one short line: a malformed filter (exit 2), an unknown id, an ambiguous request id, an unreadable ledger (exit 1)', async (t) => {
  const s = await setup(t);
  for (
    const [args, problem] of [
      [['--status', '4x'], /--status must be a status such as 401 or a class such as 4xx, got "4x"/],
      [['--since', 'yesterday'], /--since must be an ISO time/],
      [['--code', 'unauthorized'], /--code must be an error code/],
      [['--limit', 'many'], /--limit must be a whole number/],
      [['show'], /show needs an entry id or a request id/],
      [['frobnicate'], /unknown subcommand "frobnicate"/],
    ] as const
  ) {
    const out = await cli(s, ...args);
    assert.equal(out.code, 2, `${args.join(' ')}: ${out.stderr}`);
    assert.match(out.stderr, problem);
    assert.equal(out.stderr.split('\n').length, 2, out.stderr);
  }
  await mkdir(join(s.state, 'ledger'), { recursive: true });
  await writeFile(
    join(s.state, 'ledger', 'a-1.jsonl'),
    [
      JSON.stringify({
        id: 'e1',
        requestId: 'same',
        time: '2026-01-01T00:00:00.000Z',
        method: 'POST',
        path: '/hooks/wake',
        client: '::1',
        lane: 'authenticated',
        auth: 'token',
        headers: {},
        status: 200,
        durationMs: 1,
      }),
      JSON.stringify({
        id: 'e2',
        requestId: 'same',
        time: '2026-01-01T00:00:01.000Z',
        method: 'POST',
        path: '/hooks/wake',
        client: '::1',
        lane: 'authenticated',
        auth: 'token',
        headers: {},
        status: 200,
        durationMs: 1,
      }),
      '{"torn":',
      '',
    ].join('\n'),
  );
  const unknown = await cli(s, 'show', 'no-such-id');
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /no request ledger entry has the id "no-such-id"/);
  const ambiguous = await cli(s, 'show', 'same');
  assert.equal(ambiguous.code, 1);
  assert.match(ambiguous.stderr, /request id "same" names 2 entries; use an entry id \(e1, e2\)/);
  const listed = await cli(s);
  assert.equal(listed.code, 0);
  assert.equal(listed.stdout.trim().split('\n').length, 2);
  assert.match(listed.stderr, /ledger file .*a-1\.jsonl line 3 skipped: not JSON\n$/);
  await mkdir(join(s.state, 'ledger', 'a-2.jsonl'));
  const unreadable = await cli(s);
  assert.equal(unreadable.code, 1);
  assert.match(unreadable.stderr, /cannot read the request ledger file .*a-2\.jsonl: not a regular file\n$/);
  assert.doesNotMatch(unreadable.stderr, /\n {4}at /);
});

test('a server whose ledger cannot be opened says so once and serves all the same', async (t) => {
  const s = await setup(t);
  await mkdir(s.state, { recursive: true });
  await writeFile(join(s.state, 'ledger'), 'not a folder');
  const server = await serve(t, s);
  assert.equal(
    (await post(server.url, '/hooks/wake', {
      headers: { authorization: `Bearer ${TOKEN}` },
      body: { text: 'x', mode: 'next-heartbeat' },
    })).status,
    200,
  );
  await until('the log line', () => server.stderr().includes('request ledger not opened; serving without it'));
  assert.deepEqual((await readdir(s.state)).includes('ledger'), true);
});
