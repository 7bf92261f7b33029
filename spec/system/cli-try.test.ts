// `hooks-ingress try` and `requests replay --dry-run`: what a request would become, asked of the
// running server or, with none, tried here with the same transform sandbox; nothing is enqueued.
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { main } from '../../lib/cli/main.ts';
import { readLedger } from '../../lib/store/ledger/read.ts';
import { readEvents, readRuns } from '../../lib/store/journal/read.ts';
import { configFile, serveState } from '../_cli.ts';
import { post } from '../_http.ts';
import { captureIo } from '../_io.ts';
import { until } from '../_until.ts';

const TOKEN = 'try-cli-token-0123456789abcdef';
const PUSH = { pusher: { name: 'octocat' }, repository: { name: 'hello' }, kind: 'push' };

interface Setup {
  dir: string;
  config: string;
  state: string;
  body: string;
}

async function setup(t: TestContext): Promise<Setup> {
  const { dir, config, state, write } = await configFile(t, '', 'cli-try-');
  await mkdir(join(dir, 'hooks', 'transforms'), { recursive: true });
  await writeFile(
    join(dir, 'hooks', 'transforms', 'shout.mjs'),
    'export default ({ payload }) => ({ kind: "wake", text: `LOUD ${payload.repository.name}` });\n',
  );
  await writeFile(
    join(dir, 'hooks', 'transforms', 'boom.mjs'),
    'export default () => { throw new Error("transform blew up"); };\n',
  );
  const mappings = [
    {
      match: { path: 'gh' },
      action: 'agent',
      name: 'GitHub',
      messageTemplate: 'Push by {{pusher.nam}} to {{repository.name}}',
      sessionKey: 'hook:gh',
      deliver: false,
      filter: { payload: { kind: 'push' } },
    },
    { match: { path: 'loud' }, action: 'wake', transform: { module: 'shout.mjs' } },
    { match: { path: 'boom' }, action: 'wake', transform: { module: 'boom.mjs' } },
    { match: { path: 'picky' }, action: 'agent', sessionKey: 'other:{{kind}}', messageTemplate: 'x' },
  ];
  await write({
    hooks: {
      enabled: true,
      token: TOKEN,
      allowedSessionKeyPrefixes: ['hook:'],
      allowRequestSessionKey: true,
      mappings,
    },
  });
  const body = join(dir, 'push.json');
  await writeFile(body, JSON.stringify(PUSH));
  return { dir, config, state, body };
}

async function cli(s: Setup, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { io, out } = captureIo({ HOOKS_INGRESS_CONFIG: s.config });
  const code = await main([...args, '--state-dir', s.state], io);
  return { code, ...out };
}

test('try asks the running server: the mapping and filter, the message with its unresolved placeholder, the policy decisions; nothing is enqueued', async (t) => {
  const s = await setup(t);
  const server = await serveState(t, s);
  const out = await cli(s, 'try', 'gh', '--body', s.body);
  assert.equal(out.code, 0, out.stderr);
  assert.match(
    out.stdout,
    /^tried by the running server, with the config file as it is on disk\n {2}the same config the server runs\n {2}\$\{VAR\} values come from the server's environment, not this shell's\n/,
  );
  assert.match(out.stdout, /^mapping {5}mapping-1 \(matched\)$/m);
  assert.match(out.stdout, /^would get {3}202$/m);
  assert.match(out.stdout, /^ {2}agent {7}main$/m);
  assert.match(out.stdout, /^ {2}session key hook:gh$/m);
  assert.match(out.stdout, /^ {2}channel {5}last \(not delivered\)$/m);
  assert.match(out.stdout, /^ {4}Push by  to hello$/m);
  assert.match(out.stdout, /^ {2}warning: \{\{pusher\.nam\}\} resolved to nothing$/m);
  const json = JSON.parse((await cli(s, 'try', 'gh', '--body', s.body, '--json')).stdout) as Record<string, unknown>;
  assert.equal(json['triedBy'], 'server');
  assert.deepEqual((json['actions'] as { unresolved: string[] }[])[0]!.unresolved, ['pusher.nam']);

  const other = join(s.dir, 'other.json');
  await writeFile(other, JSON.stringify({ ...PUSH, kind: 'issue' }));
  assert.match(
    (await cli(s, 'try', 'gh', '--body', other)).stdout,
    /^mapping {5}none: ignored by mapping-1's filter: payload kind is not "push" \(answered 200 ignored\)$/m,
  );
  const refused = await cli(s, 'try', 'picky', '--body', s.body);
  assert.equal(refused.code, 1);
  assert.match(refused.stdout, /^would get {3}400 ERR_NOT_ALLOWED: mapping mapping-4: sessionKey/m);
  assert.match(
    (await cli(s, 'try', 'loud', '--body', s.body)).stdout,
    /^transform {3}returned \{"kind":"wake","text":"LOUD hello"\}$/m,
  );
  const boom = await cli(s, 'try', 'boom', '--body', s.body);
  assert.equal(boom.code, 1);
  assert.match(boom.stdout, /^transform {3}failed: threw: transform blew up \(at boom\.mjs:1\)$/m);
  assert.match(boom.stdout, /^would get {3}500 ERR_MAPPING_FAILED/m);

  assert.deepEqual(await readRuns(s.state), []);
  assert.deepEqual(await readEvents(s.state), []);
  assert.deepEqual(await readLedger(s.state), []);
  assert.doesNotMatch(server.stderr(), /hook mapping failed/);
});

test('try runs the config file as it is on disk, before a reload: an edited template and transform are tried, what differs is named, nothing is applied', async (t) => {
  const s = await setup(t);
  const server = await serveState(t, s);
  const loud = async () => {
    assert.equal(
      (await post(server.url, '/hooks/loud', { headers: { authorization: `Bearer ${TOKEN}` }, body: PUSH })).status,
      200,
    );
    return (await readEvents(s.state)).at(-1)?.text ?? '';
  };
  // The server loads its module (a transform is imported at its first call).
  assert.match(await loud(), /LOUD hello/);
  const mappings = [
    {
      match: { path: 'gh' },
      action: 'agent',
      name: 'GitHub',
      messageTemplate: 'Push by {{pusher.name}} to {{repository.name}}',
      sessionKey: 'hook:gh',
      deliver: false,
      filter: { payload: { kind: 'push' } },
    },
    { match: { path: 'loud' }, action: 'wake', transform: { module: 'shout.mjs' } },
  ];
  await writeFile(
    s.config,
    JSON.stringify({
      hooks: {
        enabled: true,
        token: TOKEN,
        allowedSessionKeyPrefixes: ['hook:'],
        allowRequestSessionKey: true,
        mappings,
      },
    }),
  );
  await writeFile(
    join(s.dir, 'hooks', 'transforms', 'shout.mjs'),
    'export default ({ payload }) => ({ kind: "wake", text: `QUIET ${payload.repository.name}` });\n',
  );
  const out = await cli(s, 'try', 'gh', '--body', s.body);
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stdout, /^ {4}Push by octocat to hello$/m, 'the edited template');
  assert.doesNotMatch(out.stdout, /resolved to nothing/);
  assert.ok(
    out.stdout.startsWith(
      'tried by the running server, with the config file as it is on disk\n' +
        '  it differs from what the server runs (not applied; "hooks-ingress reload" applies it):\n' +
        '    hooks removed: /hooks/boom, /hooks/picky\n' +
        '    mappings removed: mapping-3, mapping-4\n' +
        '    mappings changed: mapping-1 (messageTemplate)\n' +
        '    transforms removed: boom.mjs\n' +
        '    transforms changed: shout.mjs\n' +
        "  ${VAR} values come from the server's environment, not this shell's\n",
    ),
    out.stdout,
  );
  assert.match(
    (await cli(s, 'try', 'loud', '--body', s.body)).stdout,
    /^transform {3}returned \{"kind":"wake","text":"QUIET hello"\}$/m,
    'the edited transform',
  );
  const json = JSON.parse((await cli(s, 'try', 'loud', '--body', s.body, '--json')).stdout) as {
    configFile: { file: string; differs: boolean };
  };
  assert.deepEqual([json.configFile.file, json.configFile.differs], [s.config, true]);

  // Nothing was applied: the server still runs what it loaded.
  const status = await cli(s, 'status', '--json');
  assert.equal((JSON.parse(status.stdout) as { lastReload: unknown }).lastReload, null);
  assert.match(await loud(), /LOUD hello/, 'the server runs the module it loaded');

  // A file with problems is said to be one, and nothing is tried.
  await writeFile(s.config, '{ "hooks": { "enabled": true, "token": 5 } }');
  const refused = await cli(s, 'try', 'gh', '--body', s.body);
  assert.equal(refused.code, 1);
  assert.equal(refused.stdout, '');
  assert.match(
    refused.stderr,
    new RegExp(
      `^hooks-ingress try: ${s.config} has problems; the server tried nothing \\(a reload would refuse it\\):\n  hooks.token: `,
    ),
  );
});

test('try with no server runs here, with the same sandbox, and says so', async (t) => {
  const s = await setup(t);
  const out = await cli(s, 'try', 'loud', '--body', s.body);
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stdout, /^no server is running: tried here/);
  assert.match(out.stdout, /^transform {3}returned \{"kind":"wake","text":"LOUD hello"\}$/m);
  assert.match(out.stdout, /^ {4}.*LOUD hello/m);
  assert.match(
    (await cli(s, 'try', 'gh', '--body', s.body)).stdout,
    /warning: \{\{pusher\.nam\}\} resolved to nothing/,
  );
});

test('try --request and requests replay --dry-run show what a stored request would become now, and replay nothing', async (t) => {
  const s = await setup(t);
  const server = await serveState(t, s);
  assert.equal(
    (await post(server.url, '/hooks/gh', {
      headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': 'stored-1' },
      body: PUSH,
    })).status,
    202,
  );
  await until('the entry', async () => (await readLedger(s.state)).length === 1);
  const tried = await cli(s, 'try', '--request', 'stored-1');
  assert.equal(tried.code, 0, tried.stderr);
  assert.match(tried.stdout, /warning: \{\{pusher\.nam\}\} resolved to nothing/);
  const dry = await cli(s, 'requests', 'replay', 'stored-1', '--dry-run');
  assert.equal(dry.code, 0, dry.stderr);
  assert.match(dry.stdout, /^dry run of stored-1: nothing replayed\nhook {8}gh\n/);
  assert.match(dry.stdout, /^would get {3}202$/m);
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal((await readLedger(s.state)).length, 1, 'no replay entry');
  assert.equal((await readRuns(s.state)).length, 1);
  server.child.kill('SIGTERM');
  await server.exited;
  const local = await cli(s, 'try', '--request', 'stored-1');
  assert.equal(local.code, 0, local.stderr);
  assert.match(local.stdout, /^no server is running: tried here/);
  assert.match(local.stdout, /warning: \{\{pusher\.nam\}\} resolved to nothing/);
});

test('try: bad input is one line', async (t) => {
  const s = await setup(t);
  for (
    const [args, problem, code] of [
      [['try', '--body', s.body], /name the HOOK to try/, 2],
      [['try', 'gh'], /--body FILE is required/, 2],
      [['try', 'gh', '--body', s.body, '--header', 'no-colon'], /--header must be NAME:VALUE/, 2],
      [['try', 'gh', '--request', 'x'], /--request takes no HOOK/, 2],
      [['try', 'gh', '--body', join(s.dir, 'missing.json')], /cannot read --body .*: ENOENT/, 1],
      [['try', '--request', 'nope'], /no request ledger entry has the id "nope"|state directory .* does not exist/, 1],
    ] as const
  ) {
    const out = await cli(s, ...args);
    assert.equal(out.code, code, `${args.join(' ')}: ${out.stderr}`);
    assert.match(out.stderr, problem);
  }
});
