// `hooks-ingress gmail` (lib/cli/gmail.ts): its help and its subcommands; each subcommand has its
// spec beside its file (cli-gmail-setup.test.ts, cli-gmail-companion.test.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { gmailCommand } from '../lib/cli/gmail.ts';
import { gmailFiles } from './_gmail.ts';

const { capture } = await gmailFiles();

describe('gmail help and usage', () => {
  test('gmailCommand() prints help for gmail, setup and run with exit code 0', async () => {
    for (
      const [args, usage] of [
        [['--help'], 'Usage: hooks-ingress gmail COMMAND'],
        [['-h'], 'Usage: hooks-ingress gmail COMMAND'],
        [['help'], 'Usage: hooks-ingress gmail COMMAND'],
        [['setup', '--help'], 'Usage: hooks-ingress gmail setup'],
        [['run', '-h'], 'Usage: hooks-ingress gmail run'],
      ] as const
    ) {
      const { io, out } = capture();
      assert.equal(await gmailCommand(args, io), 0);
      assert.ok(out.stdout.startsWith(usage), out.stdout);
      assert.equal(out.stderr, '');
    }
  });

  test('gmailCommand() answers an unknown or missing subcommand, and a bad run option, with exit code 2', async () => {
    for (
      const [args, expected] of [
        [['watch'], /^hooks-ingress gmail: unknown command "watch"; see hooks-ingress gmail --help\n$/],
        [
          ['rnu'],
          /^hooks-ingress gmail: unknown command "rnu" \(did you mean "run"\?\); see hooks-ingress gmail --help\n$/,
        ],
        [[], /^hooks-ingress gmail: missing command \(setup or run\); see hooks-ingress gmail --help\n$/],
        [
          ['run', '--port', '1'],
          /^hooks-ingress gmail run: unknown option "--port"; see hooks-ingress gmail run --help\n$/,
        ],
      ] as const
    ) {
      const { io, out } = capture();
      assert.equal(await gmailCommand(args, io), 2);
      assert.match(out.stderr, expected);
    }
  });
});
