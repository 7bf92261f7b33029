import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hookLines } from '../lib/cli/hooks-text.ts';
import type { HookStatus } from '../lib/model/hook-status.ts';

const hook = (name: string, over: Partial<HookStatus> = {}): HookStatus => ({
  hook: name,
  running: 0,
  queued: 0,
  concurrency: null,
  maxQueued: null,
  ...over,
});

test('hookLines() says what each busy or controlled hook does and sets, and counts the idle rest', () => {
  assert.deepEqual(
    hookLines([
      hook('agent', { running: 2 }),
      hook('wake'),
      hook('ci', { running: 1, queued: 3, concurrency: 1, maxQueued: 20 }),
      hook('quiet', { maxQueued: 5 }),
      hook('other'),
    ]),
    [
      'agent: 2 running',
      'ci: 1 running, 3 queued (concurrency 1, maxQueued 20)',
      'quiet: idle (maxQueued 5)',
      '2 other hooks idle, no control set',
    ],
  );
  assert.deepEqual(hookLines([hook('agent', { queued: 1 }), hook('wake')]), [
    'agent: 1 queued',
    '1 other hook idle, no control set',
  ]);
});

test('hookLines() says how many coalescing windows a hook has open, and the coalesce it sets', () => {
  const coalesce = { windowSeconds: 30, maxWaitSeconds: 300, messages: 'all' };
  assert.deepEqual(hookLines([hook('pushes', { queued: 1, coalescing: 1, coalesce }), hook('idle', { coalesce })]), [
    'pushes: 1 queued, 1 coalescing window open (coalesce 30s quiet, at most 300s, all messages)',
    'idle: idle (coalesce 30s quiet, at most 300s, all messages)',
  ]);
  assert.deepEqual(hookLines([hook('two', { coalescing: 2 })]), ['two: 2 coalescing windows open']);
});

test('hookLines() with every hook idle says so in one line, and nothing for no hooks', () => {
  assert.deepEqual(hookLines([hook('agent'), hook('wake')]), ['all 2 hooks idle, no control set']);
  assert.deepEqual(hookLines([hook('agent')]), ['the one hook idle, no control set']);
  assert.deepEqual(hookLines([]), []);
});

test('hookLines() says of a paused hook since and until when, its runs queued, wakes held, outbox entries waiting and its oldest', () => {
  const now = Date.parse('2026-01-01T01:00:00Z');
  const paused = {
    hook: 'ci',
    running: 0,
    queued: 3,
    concurrency: null,
    maxQueued: null,
    paused: { since: 'S', until: 'U', wakes: 2, outbox: 1, oldest: '2026-01-01T00:55:50Z' },
  };
  assert.deepEqual(hookLines([paused], now), [
    'ci: paused since S until U, 3 queued, 2 wakes held, 1 outbox entry waiting, oldest waiting 4m 10s',
  ]);
  const { until: _, oldest: __, ...bare } = paused.paused;
  assert.deepEqual(hookLines([{ ...paused, queued: 0, paused: { ...bare, wakes: 0, outbox: 0 } }], now), [
    'ci: paused since S',
  ]);
});
