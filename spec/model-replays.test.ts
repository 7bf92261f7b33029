import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  describeResolution,
  replayedChange,
  resolutionOf,
  resolved,
  resolvedChange,
  retriedChange,
  rootOf,
  type RootRecord,
  succeeded,
} from '../lib/model/replays.ts';

const failedOnce = { entry: 'r1', requestId: 'q1', status: 401, time: 't1' };
const fixed = { entry: 'r2', requestId: 'q2', status: 200, time: 't2' };

test('succeeded(): an answer below 400 (200 ignored, 204 skipped included)', () => {
  assert.deepEqual([200, 202, 204, 399, 400, 401, 503].map(succeeded), [true, true, true, true, false, false, false]);
});

test('rootOf(): the entry a replay replays, else the entry itself', () => {
  assert.deepEqual([rootOf({ id: 'a' }), rootOf({ id: 'b', replayOf: 'a' })], ['a', 'a']);
});

test('replayedChange() and resolvedChange(): the state after a replay or a resolution by hand', () => {
  assert.deepEqual(replayedChange('a', null, failedOnce), {
    root: 'a',
    state: 'failed',
    replays: [failedOnce],
    time: 't1',
  });
  assert.equal(replayedChange('a', { state: 'failed' }, fixed).state, 'succeeded');
  assert.equal(replayedChange('a', { state: 'succeeded' }, failedOnce).state, 'succeeded');
  assert.equal(replayedChange('a', { state: 'resolved' }, failedOnce).state, 'resolved');
  assert.equal(replayedChange('a', { state: 'resolved' }, fixed).state, 'succeeded');
  assert.deepEqual(resolvedChange('a', 't9'), { root: 'a', state: 'resolved', resolvedAt: 't9', time: 't9' });
});

test('resolutionOf() and describeResolution(): what a list line and show say of a root', () => {
  const record: RootRecord = { root: 'a', state: 'succeeded', replays: [failedOnce, fixed], time: 't2' };
  assert.deepEqual(resolutionOf(record), { root: 'a', state: 'succeeded', by: fixed, replays: [failedOnce, fixed] });
  assert.equal(describeResolution(resolutionOf(record)), 'resolved by replay r2 (200)');
  assert.equal(
    describeResolution(resolutionOf({ ...record, replays: [{ requestId: 'q3', status: 202, time: 't3' }] })),
    'resolved by replay request q3 (202)',
  );
  assert.equal(
    describeResolution(
      resolutionOf({ root: 'a', state: 'resolved', replays: [failedOnce], resolvedAt: 't5', time: 't5' }),
    ),
    'resolved by hand',
  );
  assert.equal(
    describeResolution(resolutionOf({ root: 'a', state: 'failed', replays: [failedOnce, failedOnce], time: 't1' })),
    'replayed 2x, not resolved (last 401)',
  );
  assert.deepEqual([
    resolved(null),
    resolved({ state: 'failed' }),
    resolved({ state: 'succeeded' }),
    resolved({ state: 'resolved' }),
  ], [false, false, true, true]);
});

test('retriedChange() and describeResolution(): a root whose run was retried reads as resolved by that retry', () => {
  assert.deepEqual(retriedChange('e', { run: 'r1', as: 'r2', time: 't' }), {
    root: 'e',
    state: 'succeeded',
    retries: [{ run: 'r1', as: 'r2', time: 't' }],
    time: 't',
  });
  const record: RootRecord = {
    root: 'e',
    state: 'succeeded',
    replays: [],
    retries: [{ run: 'r1', as: 'r2', time: 't' }],
    time: 't',
  };
  assert.equal(describeResolution(resolutionOf(record)), 'resolved by retry: run r1 retried as r2');
  const chain = { ...record, retries: [...record.retries!, { run: 'r2', as: 'r3', time: 't' }] };
  assert.equal(describeResolution(resolutionOf(chain)), 'resolved by retry: run r1 retried as r2 (retried 2x)');
  assert.equal(resolutionOf({ ...record, retries: [] }).retries, undefined);
  // A replay that succeeded is what a line names first.
  assert.match(describeResolution(resolutionOf({ ...record, replays: [fixed] })), /^resolved by replay r2 \(200\)$/);
});
