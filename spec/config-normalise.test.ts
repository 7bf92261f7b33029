import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULTS } from '../lib/config/normalise.ts';

test('DEFAULTS holds the documented defaults', () => {
  assert.deepEqual(DEFAULTS, {
    path: '/hooks',
    maxBodyBytes: 262_144,
    maxFailures: 20,
    windowSeconds: 60,
    lockoutSeconds: 60,
    idempotencyTtlSeconds: 86_400,
    forwardMaxAgeSeconds: 86_400,
    bind: '127.0.0.1',
    port: 8789,
    transformTimeoutMs: 5_000,
    transformMaxResultBytes: 1_048_576,
    transformRuntime: 'server',
    maxQueuedRuns: 1_000,
    maxEventBytes: 262_144,
    maxBacklogEvents: 100_000,
    maxBacklogBytes: 67_108_864,
    ledgerMaxEntries: 10_000,
    ledgerMaxBytes: 67_108_864,
    ledgerMaxAgeSeconds: 604_800,
    ledgerMaxBodyBytes: 65_536,
    ledgerCoalesceSeconds: 60,
    ledgerUnauthenticatedMaxEntries: 2_000,
    ledgerUnauthenticatedMaxBytes: 4_194_304,
    ledgerUnauthenticatedMaxBodyBytes: 16_384,
    timeoutSeconds: 600,
    maxConcurrent: 4,
    historyMaxChars: 32_000,
    ackMaxChars: 300,
    inspectorBind: '127.0.0.1',
    inspectorIdleMinutes: 30,
  });
});
