import assert from 'node:assert/strict';
import { parseArgs } from 'node:util';
import { test } from 'node:test';
import { parseArgsProblem, unknownCommand, usageLine, type OptionSpec } from '../lib/cli/usage.ts';

const OPTIONS: Record<string, OptionSpec> = { config: { type: 'string', short: 'c' }, json: { type: 'boolean' }, limit: { type: 'string', short: 'n' } };

function problemFor(args: string[]): string {
  try {
    parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: false });
  } catch (error) {
    return parseArgsProblem(error, OPTIONS);
  }
  throw new Error(`${args.join(' ')} parsed`);
}

test('usageLine() is one line naming the command, the problem and where the help is', () => {
  assert.equal(usageLine('events', 'unknown option "--x"'), 'hooks-ingress events: unknown option "--x"; see hooks-ingress events --help\n');
  assert.equal(usageLine(null, 'unknown command "x"'), 'hooks-ingress: unknown command "x"; see hooks-ingress --help\n');
});

test('unknownCommand() guesses the command a typo was meant to be, and only then', () => {
  const commands = ['serve', 'check', 'events', 'runs', 'reload', 'send', 'gmail', 'token', 'config'];
  assert.equal(unknownCommand('srve', commands), 'unknown command "srve" (did you mean "serve"?)');
  assert.equal(unknownCommand('evnets', commands), 'unknown command "evnets" (did you mean "events"?)');
  assert.equal(unknownCommand('deploy', commands), 'unknown command "deploy"');
});

test('parseArgsProblem() says each parseArgs failure in one line, without Node\'s wording', () => {
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
