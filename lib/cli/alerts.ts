// `hooks-ingress alerts test`: one message through the configured alerts' channel and recipient,
// so the owner knows alerts will arrive before anything goes wrong.
import type { Logger } from '../log.ts';
import { Alerter } from '../runtime/alerts.ts';
import { buildDeliver } from '../server/service.ts';
import { runGroup } from './group.ts';
import { FAILURE, type Io, messagePrefix } from './io.ts';
import { loadConfigFor } from './load-config.ts';
import { printDelivery } from './delivery-text.ts';
import { parseCommand } from './usage.ts';

/** Help for `hooks-ingress alerts`. */
export const ALERTS_HELP = `Usage: hooks-ingress alerts COMMAND [options]

The owner's alerts (the config's "alerts" section).

Commands:
  test      send one test alert

Run "hooks-ingress alerts COMMAND --help" for a command's options.
`;

const TEST_HELP = `Usage: hooks-ingress alerts test [options]

Send one test message through the channel and recipient the config's "alerts"
section names, as an alert would go. Exits 0 when it was delivered, 1 when it
was not or alerts are not configured.

Options:
  -c, --config PATH     config file
  -h, --help            show this help
`;

const TEST_OPTIONS = { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } } as const;

// The command waits for its one message: fewer attempts than the server's alerts make.
const _RETRY = { maxAttempts: 3, baseDelayMs: 1_000, maxDelayMs: 10_000 };

/** `hooks-ingress alerts COMMAND`; resolves to the exit code. */
export function alertsCommand(argv: readonly string[], io: Io): Promise<number> {
  return runGroup(
    { name: 'alerts', help: ALERTS_HELP, commands: { test: { options: TEST_OPTIONS, run: _test } } },
    argv,
    io,
  );
}

async function _test(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('alerts test', argv, { options: TEST_OPTIONS, help: TEST_HELP }, io);
  if (typeof parsed === 'number') return parsed;
  const config = await loadConfigFor(parsed.values, io);
  if (config === null) return FAILURE;
  if (config.alerts === null) {
    io.stderr(`${messagePrefix(io)}: alerts are not configured (add an "alerts" section with a channel)\n`);
    return FAILURE;
  }
  const log: Logger = { info() {}, warn() {}, error() {} };
  const alerter = new Alerter({ config: config.alerts, deliver: await buildDeliver(config, () => null, _RETRY), log });
  const outcome = await alerter.test();
  await alerter.stop();
  return printDelivery(io, outcome);
}
