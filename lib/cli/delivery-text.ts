// What `send` and `alerts test` print of a delivery's outcome: where it went, or why it did not.

import type { DeliveryOutcome } from '../model/records.ts';
import { FAILURE, type Io, messagePrefix } from './io.ts';
import { escapeControls } from '../text.ts';

/**
 * Prints a delivery's outcome, delivered on stdout and anything else on stderr, and returns the
 * exit status. The platform chose the reason's text, the message ids and the address it echoes:
 * their control characters are escaped, so an error page cannot drive the terminal.
 */
export function printDelivery(io: Io, outcome: DeliveryOutcome): number {
  if (outcome.status === 'delivered') {
    const ids = outcome.messageIds.length > 0 ? ` (${outcome.messageIds.join(', ')})` : '';
    io.stdout(`delivered to ${escapeControls(`${outcome.channel} ${outcome.to}${ids}`, false)}\n`);
    return 0;
  }
  io.stderr(`${messagePrefix(io)}: ${outcome.status}: ${escapeControls(outcome.reason, false)}\n`);
  return FAILURE;
}
