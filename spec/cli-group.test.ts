// Command groups (lib/cli/group.ts): the command is found wherever it stands among the options,
// and every group of the CLI takes its options before or after its command.
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { runGroup, splitCommand } from '../lib/cli/group.ts';
import { main } from '../lib/cli/main.ts';
import type { OptionSpec } from '../lib/cli/usage.ts';
import { fileDir } from './_dir.ts';
import { captureIo } from './_io.ts';

const OPTIONS: Record<string, OptionSpec> = {
  config: { type: 'string', short: 'c' },
  json: { type: 'boolean', short: 'j' },
  help: { type: 'boolean', short: 'h' },
};

test("splitCommand() takes the first argument that is neither an option nor a string option's value, and keeps the others in order", () => {
  const cases: ReadonlyArray<readonly [string[], string | undefined, string[]]> = [
    [['get', 'K'], 'get', ['K']],
    [['--config', 'F', 'get', 'K'], 'get', ['--config', 'F', 'K']],
    [['-c', 'F', 'get', 'K'], 'get', ['-c', 'F', 'K']],
    [['--config=F', 'get'], 'get', ['--config=F']],
    [['-cF', 'get'], 'get', ['-cF']],
    [['-jc', 'F', 'get'], 'get', ['-jc', 'F']],
    [['--json', 'get', '--config', 'F'], 'get', ['--json', '--config', 'F']],
    // The value of a string option is never the command, even when it is a command's name.
    [['--config', 'get', 'get'], 'get', ['--config', 'get']],
    // An option no command declares takes no value here; the command's own parser refuses it.
    [['--bogus', 'get'], 'get', ['--bogus']],
    [['--', 'get', 'K'], 'get', ['--', 'K']],
    [['--config', 'F'], undefined, ['--config', 'F']],
    [[], undefined, []],
  ];
  for (const [argv, name, rest] of cases) assert.deepEqual(splitCommand(argv, OPTIONS), { name, rest }, argv.join(' '));
});

test("runGroup() prints the group's help for help or --help before any command, and names a missing or unknown command with options on either side", async () => {
  const ran: string[][] = [];
  const group = {
    name: 'demo',
    help: 'Usage: demo\n',
    commands: { get: { options: OPTIONS, run: async (argv: readonly string[]) => (ran.push([...argv]), 0) } },
  };
  const cases: ReadonlyArray<readonly [string[], number, string, string]> = [
    [['--config', 'F', '--help'], 0, 'Usage: demo\n', ''],
    [['help'], 0, 'Usage: demo\n', ''],
    [['--config', 'F'], 2, '', 'hooks-ingress demo: missing command (get); see hooks-ingress demo --help\n'],
    [
      ['-c', 'F', 'gte'],
      2,
      '',
      'hooks-ingress demo: unknown command "gte" (did you mean "get"?); see hooks-ingress demo --help\n',
    ],
  ];
  for (const [argv, code, stdout, stderr] of cases) {
    const { io, out } = captureIo({});
    assert.equal(await runGroup(group, argv, io), code, argv.join(' '));
    assert.deepEqual(out, { stdout, stderr }, argv.join(' '));
  }
  const { io } = captureIo({});
  assert.equal(await runGroup(group, ['-c', 'F', 'get', '--help'], io), 0);
  assert.deepEqual(ran, [['-c', 'F', '--help']], "a command's --help is the command's");
});

test('runGroup() refuses a group whose commands declare one option two ways', async () => {
  const two = {
    name: 'demo',
    help: '',
    commands: {
      a: { options: { port: { type: 'string' } }, run: async () => 0 },
      b: { options: { port: { type: 'boolean' } }, run: async () => 0 },
    },
  } as const;
  await assert.rejects(
    async () => runGroup(two, ['a'], captureIo({}).io),
    /Cannot read the demo commands' options: --port is declared two ways/,
  );
});

// Every group of the CLI, as the executable parses it: its options before its command, around
// it, and after it, give one outcome, and that outcome is the command's own (not a usage error).
const dir = await fileDir('cli-group-');
const config = join(dir, 'config.json');
await writeFile(config, JSON.stringify({ hooks: { enabled: true, token: 'group-token-0123456789abcdef' } }));
const state = join(dir, 'state');
await mkdir(state, { mode: 0o700 });

const GROUPS: ReadonlyArray<readonly [string, string[][], RegExp]> = [
  ['config get', [
    ['config', '--config', config, 'get', 'hooks.token'],
    ['config', '-c', config, 'get', 'hooks.token'],
    ['config', 'get', 'hooks.token', '--config', config],
  ], /^0 group-token-0123456789abcdef\n $/],
  ['gmail run', [
    ['gmail', '--config', config, 'run'],
    ['gmail', '-c', config, 'run'],
    ['gmail', 'run', '--config', config],
  ], /^1  hooks-ingress gmail run: hooks\.gmail\.account is not set/],
  ['requests show', [
    ['requests', '--state-dir', state, 'show', 'nope'],
    ['requests', 'show', '--state-dir', state, 'nope'],
    ['requests', 'show', 'nope', '--state-dir', state],
  ], /^1  hooks-ingress requests: no request ledger entry has the id "nope"/],
  ['outbox retry', [
    ['outbox', '--state-dir', state, 'retry', 'nope'],
    ['outbox', 'retry', '--state-dir', state, 'nope'],
    ['outbox', 'retry', 'nope', '--state-dir', state],
  ], /^1  hooks-ingress outbox retry: not a dead or pending entry: nope\n$/],
];

for (const [group, argvs, outcome] of GROUPS) {
  test(`hooks-ingress ${group} takes its options before or after the command`, async () => {
    for (const argv of argvs) {
      const { io, out } = captureIo({ HOME: dir });
      const code = await main(argv, io);
      assert.match(`${code} ${out.stdout} ${out.stderr}`, outcome, argv.join(' '));
    }
  });
}

test('hooks-ingress gmail setup takes its options before or after the command', async () => {
  for (
    const [n, argv] of [
      (file: string) => ['gmail', '--config', file, '--account', 'me@example.com', 'setup'],
      (file: string) => ['gmail', '--account', 'me@example.com', 'setup', '-c', file],
      (file: string) => ['gmail', 'setup', '--account', 'me@example.com', '--config', file],
    ].entries()
  ) {
    const file = join(dir, `setup-${n}.json`);
    const { io, out } = captureIo({ HOME: dir });
    assert.equal(await main(argv(file), io), 0, out.stderr);
    const written = JSON.parse(await readFile(file, 'utf8')) as { hooks: { gmail: { account: string } } };
    assert.equal(written.hooks.gmail.account, 'me@example.com', argv(file).join(' '));
  }
});
