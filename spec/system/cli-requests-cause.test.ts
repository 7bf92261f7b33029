// A ledger entry says why its request came out as it did, and `requests` shows it: a transform's
// exception with its module and line, the placeholders that found nothing, the filter that passed
// it over, the policy's rule, the request it duplicated; request text in it escaped for a terminal.
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { main } from '../../lib/cli/main.ts';
import { type ConfigFile, configFile, serveState as serve } from '../_cli.ts';
import { post } from '../_http.ts';
import { captureIo } from '../_io.ts';
import { until } from '../_until.ts';

const TOKEN = 'requests-cause-token-0123456789abcdef';

async function cli(s: ConfigFile, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { io, out } = captureIo({ HOOKS_INGRESS_CONFIG: s.config });
  const code = await main(['requests', ...args, '--state-dir', s.state], io);
  return { code, ...out };
}

type Entry = { requestId: string; cause?: unknown };

test("requests, show and --json carry each entry's cause: a transform's exception at its module and line, hollow placeholders, the filter, the policy's rule, the duplicated request", async (t) => {
  const mappings = [
    { id: 'ci', match: { path: 'ci' }, action: 'wake', textTemplate: 'x', transform: { module: 'ci.mjs' } },
    {
      id: 'notes',
      match: { path: 'notes' },
      action: 'wake',
      wakeMode: 'next-heartbeat',
      textTemplate: 'note {{title}} by {{author}}',
    },
    {
      id: 'pushes',
      match: { path: 'github' },
      filter: { headers: { 'x-github-event': 'push' } },
      action: 'wake',
      textTemplate: 'push',
    },
  ];
  const s = await configFile(t, { hooks: { enabled: true, token: TOKEN, mappings } }, 'cli-requests-cause-');
  await mkdir(join(s.dir, 'hooks', 'transforms'), { recursive: true });
  // Line 3 raises the error, with the payload's text in its message.
  await writeFile(
    join(s.dir, 'hooks', 'transforms', 'ci.mjs'),
    'export default ({ payload }) => {\n  const why = payload.why;\n  throw new Error(`bad build ${why}`);\n};\n',
  );
  const server = await serve(t, s);
  const auth = { authorization: `Bearer ${TOKEN}` };
  const hostile = 'red \u001b[31mALERT\u001b[0m \u202eevil\u202c\nsecond line';
  const send = (path: string, id: string, body: object, headers: Record<string, string> = {}) =>
    post(server.url, path, { headers: { ...auth, 'x-request-id': id, ...headers }, body });
  assert.equal((await send('/hooks/ci', 'tx-1', { why: hostile })).status, 500);
  assert.equal((await send('/hooks/notes', 'hollow-1', { title: 'hello' })).status, 200);
  assert.equal((await send('/hooks/github', 'filtered-1', {}, { 'x-github-event': 'issues' })).status, 200);
  assert.equal((await send('/hooks/agent', 'policy-1', { message: 'hi', sessionKey: 'hook:mine' })).status, 400);
  assert.equal(
    (await send('/hooks/wake', 'first-1', { text: 'once', mode: 'next-heartbeat' }, { 'idempotency-key': 'k-1' }))
      .status,
    200,
  );
  assert.equal(
    (await send('/hooks/wake', 'again-1', { text: 'once', mode: 'next-heartbeat' }, { 'idempotency-key': 'k-1' }))
      .status,
    200,
  );

  const listed = await until('six entries', async () => {
    const out = await cli(s);
    return out.stdout.split('\n').filter(Boolean).length === 6 ? out : null;
  });
  const lines = listed.stdout.trim().split('\n');
  assert.match(
    lines[0]!,
    /  500  ERR_MAPPING_FAILED  POST ci  .*  transform ci\.mjs:3 threw: bad build red \\x1b\[31mALERT\\x1b\[0m \\u202eevil\\u202c$/,
  );
  assert.match(lines[1]!, /  200  -  POST notes  .*  placeholders resolved to nothing: author$/);
  assert.match(
    lines[2]!,
    /  200  -  POST github  .*  ignored by pushes's filter: header x-github-event is not "push"$/,
  );
  assert.match(
    lines[3]!,
    /  400  ERR_NOT_ALLOWED  POST agent  .*  refused by policy: sessionKey: may not be chosen by the request while hooks\.allowRequestSessionKey is false$/,
  );
  assert.match(lines[5]!, /  200  -  POST wake  .*  duplicate of request first-1$/);
  assert.doesNotMatch(listed.stdout, /[\u001b\u202e\u202c]|second line/);

  const jsonOut = (await cli(s, '--json')).stdout;
  // JSON escapes the C0 controls itself; the bidirectional ones are escaped too, so a terminal shows them as text.
  assert.doesNotMatch(jsonOut, /[\u001b\u202e\u202c]/);
  const json = new Map(
    jsonOut.trim().split('\n').map((l) => JSON.parse(l) as Entry).map((e) => [e.requestId, e.cause]),
  );
  assert.deepEqual(json.get('tx-1'), {
    kind: 'transform',
    text: 'threw: bad build red \u001b[31mALERT\u001b[0m \u202eevil\u202c',
    at: 'ci.mjs:3',
  });
  assert.deepEqual(json.get('hollow-1'), { kind: 'placeholders', text: 'author' });
  assert.deepEqual(json.get('filtered-1'), {
    kind: 'filter',
    text: 'header x-github-event is not "push"',
    at: 'pushes',
  });
  assert.deepEqual(json.get('policy-1'), {
    kind: 'policy',
    text: 'sessionKey: may not be chosen by the request while hooks.allowRequestSessionKey is false',
  });
  assert.deepEqual(json.get('again-1'), { kind: 'duplicate', text: 'first-1' });
  assert.equal(json.get('first-1'), undefined);

  const shown = await cli(s, 'show', 'tx-1');
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(
    shown.stdout,
    /^cause +transform ci\.mjs:3 threw: bad build red \\x1b\[31mALERT\\x1b\[0m \\u202eevil\\u202c$/m,
  );
  assert.doesNotMatch(shown.stdout, /[\u001b\u202e\u202c]/);
  const shownJsonOut = (await cli(s, 'show', 'tx-1', '--json')).stdout;
  assert.doesNotMatch(shownJsonOut, /[\u001b\u202e\u202c]/);
  const shownJson = JSON.parse(shownJsonOut) as { entry: Entry };
  assert.deepEqual(shownJson.entry.cause, json.get('tx-1'));
  assert.match((await cli(s, 'show', 'hollow-1')).stdout, /^cause +placeholders resolved to nothing: author$/m);
  assert.match(
    (await cli(s, 'show', 'filtered-1')).stdout,
    /^became +ignored by pushes's filter: header x-github-event is not "push"$/m,
  );
  assert.match(
    (await cli(s, 'show', 'policy-1')).stdout,
    /^cause +refused by policy: sessionKey: may not be chosen by the request while hooks\.allowRequestSessionKey is false$/m,
  );

  // The log line is as it was: the whole detail, in the log alone.
  assert.match(server.stderr(), /hook mapping failed/);
  assert.ok(!(listed.stdout + shown.stdout).includes(TOKEN));
});
