// Test helper: the parts the control channel's operations read, as plain values, for the
// operations' spec and for formatStatus()'s, and a reload that changed nothing.
import type { OperationParts } from '../lib/control/operations.ts';

/** A reload's changes when it changed nothing. */
export const NO_CHANGES = {
  hooks: { added: [], removed: [] },
  mappings: { added: [], removed: [], changed: [] },
  transforms: { added: [], removed: [], changed: [] },
  secrets: { added: [], removed: [], changed: [] },
};

/** A running server's parts an hour and a bit after its start, outside forward mode; `over` replaces any of them. */
export function operationParts(over: Partial<OperationParts> = {}): OperationParts {
  return {
    pid: 4242,
    startedAt: Date.parse('2026-01-01T00:00:00Z'),
    now: () => Date.parse('2026-01-01T01:02:03Z'),
    stateDir: '/var/lib/hooks-ingress',
    url: () => 'http://127.0.0.1:8789',
    store: {
      backlog: () => ({ events: 3, bytes: 120 }),
      outboxCounts: () => ({ pending: 1, sent: 5, dead: 2, dropped: 0 }),
      callbackCounts: () => ({ pending: 0, sent: 3, dead: 1 }),
      stats: () => ({
        idempotencyKeys: 0,
        runs: 0,
        events: 0,
        journalBytes: 999,
        fsyncMs: 0,
        flushes: 0,
        compactionFailures: 0,
      }),
    },
    reload: () => Promise.resolve({ outcome: 'applied', at: 'now', file: null, changes: NO_CHANGES }),
    lastReload: () => null,
    reloading: () => ({ running: false, pending: false, requests: 0 }),
    retryOutbox: null,
    ...over,
  };
}
