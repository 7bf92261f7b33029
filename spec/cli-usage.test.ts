import assert from 'node:assert/strict';
import { parseArgs } from 'node:util';
import { test } from 'node:test';
import { main } from '../lib/cli/main.ts';
import { type OptionSpec, parseArgsProblem, unknownCommand, usageLine } from '../lib/cli/usage.ts';
import { captureIo } from './_io.ts';

const OPTIONS: Record<string, OptionSpec> = {
  config: { type: 'string', short: 'c' },
  json: { type: 'boolean' },
  limit: { type: 'string', short: 'n' },
};

function problemFor(args: string[]): string {
  try {
    parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: false });
  } catch (error) {
    return parseArgsProblem(error, OPTIONS);
  }
  throw new Error(`${args.join(' ')} parsed`);
}

test('usageLine() is one line naming the command, the problem and where the help is', () => {
  assert.equal(
    usageLine('events', 'unknown option "--x"'),
    'hooks-ingress events: unknown option "--x"; see hooks-ingress events --help\n',
  );
  assert.equal(
    usageLine(null, 'unknown command "x"'),
    'hooks-ingress: unknown command "x"; see hooks-ingress --help\n',
  );
});

test('unknownCommand() guesses the command a typo was meant to be, and only then', () => {
  const commands = ['serve', 'check', 'events', 'runs', 'reload', 'send', 'gmail', 'token', 'config'];
  assert.equal(unknownCommand('srve', commands), 'unknown command "srve" (did you mean "serve"?)');
  assert.equal(unknownCommand('evnets', commands), 'unknown command "evnets" (did you mean "events"?)');
  assert.equal(unknownCommand('deploy', commands), 'unknown command "deploy"');
});

test("parseArgsProblem() says each parseArgs failure in one line, without Node's wording", () => {
  const cases: [string[], string][] = [
    [['--jsn'], 'unknown option "--jsn" (did you mean "--json"?)'],
    [['--lim', '3'], 'unknown option "--lim" (did you mean "--limit"?)'],
    [['-x'], 'unknown option "-x"'],
    [['--config'], 'option --config needs a value'],
    [['-c', '--json'], 'option --config needs a value (to give one that starts with "-", write --config=VALUE)'],
    [['--json=1'], 'option --json takes no value'],
    [['extra'], 'unexpected argument "extra"'],
  ];
  for (const [args, expected] of cases) {
    const problem = problemFor(args);
    assert.equal(problem, expected, args.join(' '));
    assert.doesNotMatch(problem, /\n|ambiguous|positional|To specify/);
  }
});

test('parseArgsProblem() keeps the first line of an error it does not know', () => {
  assert.equal(parseArgsProblem(new Error('Something odd.\nMore advice'), OPTIONS), 'Something odd');
  assert.equal(parseArgsProblem('plain', OPTIONS), 'plain');
});

/** Runs the CLI in-process; returns the exit code and what it wrote. */
async function run(argv: string[], env: Record<string, string> = {}) {
  const { io, out } = captureIo({ HOME: '/nonexistent-home', ...env });
  const code = await main(argv, io);
  return { code, ...out };
}

test('a usage error is one line naming the command and its help, never the help itself or parseArgs wording', async () => {
  const cases: [string[], string][] = [
    [['srve'], 'hooks-ingress: unknown command "srve" (did you mean "serve"?); see hooks-ingress --help\n'],
    [['confg', 'get'], 'hooks-ingress: unknown command "confg" (did you mean "config"?); see hooks-ingress --help\n'],
    [
      ['events', '--jsn'],
      'hooks-ingress events: unknown option "--jsn" (did you mean "--json"?); see hooks-ingress events --help\n',
    ],
    [['events', '-c'], 'hooks-ingress events: option --config needs a value; see hooks-ingress events --help\n'],
    [
      ['events', '--limit', '-3'],
      'hooks-ingress events: option --limit needs a value (to give one that starts with "-", write --limit=VALUE); see hooks-ingress events --help\n',
    ],
    [
      ['events', '--limit', 'x', '--state-dir', '/nonexistent'],
      'hooks-ingress events: --limit must be a whole number, got "x"; see hooks-ingress events --help\n',
    ],
    [
      ['runs', '--limit=1.5', '--state-dir', '/nonexistent'],
      'hooks-ingress runs: --limit must be a whole number, got "1.5"; see hooks-ingress runs --help\n',
    ],
    [['check', 'extra'], 'hooks-ingress check: unexpected argument "extra"; see hooks-ingress check --help\n'],
    [
      ['check', 'config.json'],
      'hooks-ingress check: unexpected argument "config.json" (did you mean "-c config.json"?); see hooks-ingress check --help\n',
    ],
    [
      ['events', '/etc/hooks-ingress/config.jsonc'],
      'hooks-ingress events: unexpected argument "/etc/hooks-ingress/config.jsonc" (did you mean "-c /etc/hooks-ingress/config.jsonc"?); see hooks-ingress events --help\n',
    ],
    [['token', 'x.json'], 'hooks-ingress token: unexpected argument "x.json"; see hooks-ingress token --help\n'],
    [
      ['check', '-V'],
      'hooks-ingress check: unknown option "-V" (the version is "hooks-ingress --version"); see hooks-ingress check --help\n',
    ],
    [['help', 'srve'], 'hooks-ingress: unknown command "srve" (did you mean "serve"?); see hooks-ingress --help\n'],
    [
      ['help', 'serve', 'now'],
      'hooks-ingress: "help serve" takes no further argument, got "now"; see hooks-ingress --help\n',
    ],
    [['token', '--json'], 'hooks-ingress token: unknown option "--json"; see hooks-ingress token --help\n'],
    [
      ['outbox', 'retyr'],
      'hooks-ingress outbox: unknown command "retyr" (did you mean "retry"?); see hooks-ingress outbox --help\n',
    ],
    [
      ['serve', '--port', 'eighty'],
      'hooks-ingress serve: --port must be an integer from 0 to 65535, got "eighty"; see hooks-ingress serve --help\n',
    ],
    [
      ['--port', '99999'],
      'hooks-ingress serve: --port must be an integer from 0 to 65535, got "99999"; see hooks-ingress serve --help\n',
    ],
    [
      ['serve', '--log-format', 'xml'],
      'hooks-ingress serve: --log-format must be json or text, got "xml"; see hooks-ingress serve --help\n',
    ],
    [
      ['send', 'hello'],
      'hooks-ingress send: give --channel (one of whatsapp, telegram, discord, slack, mattermost, signal, imessage, msteams); see hooks-ingress send --help\n',
    ],
    [
      ['send', '--channel', 'fax', 'hello'],
      'hooks-ingress send: --channel must be one of whatsapp, telegram, discord, slack, mattermost, signal, imessage, msteams, got "fax"; see hooks-ingress send --help\n',
    ],
    [['send', '--channel', 'telegram'], 'hooks-ingress send: give the TEXT to send; see hooks-ingress send --help\n'],
  ];
  for (const [argv, expected] of cases) {
    const result = await run(argv);
    assert.equal(result.code, 2, argv.join(' '));
    assert.equal(result.stderr, expected, argv.join(' '));
    assert.equal(result.stdout, '');
  }
});

test('every error of a command names the command, config problems included', async () => {
  const missing = await run(['check', '-c', '/nonexistent/config.json']);
  assert.equal(missing.code, 1);
  assert.match(
    missing.stderr,
    /^hooks-ingress check: invalid config \/nonexistent\/config\.json:\n {2}cannot read \/nonexistent\/config\.json: no such file\n$/,
  );
  const events = await run(['events', '-c', '/nonexistent/config.json']);
  assert.match(events.stderr, /^hooks-ingress events: invalid config /);
  const reload = await run(['reload', '--state-dir', '/nonexistent']);
  assert.match(reload.stderr, /^hooks-ingress reload: no running server found/);
});
