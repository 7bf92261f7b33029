import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Config } from '../lib/config/types.ts';
import type { RunRecord } from '../lib/model/records.ts';
import { windowClosed } from '../lib/runtime/coalesce-wait.ts';

const T0 = Date.UTC(2026, 10, 27, 12);
const view = (now: number) => ({ config: {} as Config, now, busySessions: new Set<string>(), running: new Map() });

const queued = {
  runId: 'r',
  coalesce: {
    group: 'g',
    key: 'k',
    windowSeconds: 30,
    maxWaitSeconds: 300,
    messages: 'latest',
    maxBytes: 100,
    count: 1,
    firstAt: new Date(T0).toISOString(),
    lastAt: new Date(T0).toISOString(),
  },
} as RunRecord;

test('windowClosed(): holds a run until its window closes, as the store has it now (a join keeps it open)', () => {
  const joined = {
    ...queued,
    coalesce: { ...queued.coalesce!, count: 2, lastAt: new Date(T0 + 20_000).toISOString() },
  };
  const rule = windowClosed({ run: () => joined });
  assert.deepEqual(rule(queued, 'pushes', view(T0 + 30_000)), { rule: 'coalesce', until: T0 + 50_000 });
  assert.equal(rule(queued, 'pushes', view(T0 + 50_000)), null);
});

test('windowClosed(): a run with no window, or one the store no longer keeps, is judged as queued', () => {
  const rule = windowClosed({ run: () => null });
  assert.equal(rule({ runId: 'plain' } as RunRecord, 'agent', view(T0)), null);
  assert.deepEqual(rule(queued, 'pushes', view(T0)), { rule: 'coalesce', until: T0 + 30_000 });
});
