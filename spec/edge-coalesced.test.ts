import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RunRecord } from '../lib/model/records.ts';
import { coalescedAnswer, joinedIds, joinedRuns } from '../lib/edge/coalesced.ts';

const pending = {
  runId: 'held',
  sessionKey: 'hook:held',
  agentId: 'main',
  channel: 'telegram',
} as RunRecord;

test('coalescedAnswer(): the joined run in place of the planned one, with coalesced: true; nothing joined leaves it', () => {
  const answer = {
    status: 202,
    body: { ok: true, runId: 'planned', sessionKey: 'hook:planned', agentId: 'main', channel: 'last' },
  };
  assert.equal(coalescedAnswer(answer, new Map()), answer);
  assert.deepEqual(coalescedAnswer(answer, new Map([['planned', pending]])).body, {
    ok: true,
    runId: 'held',
    sessionKey: 'hook:held',
    agentId: 'main',
    channel: 'telegram',
    coalesced: true,
  });
  const batch = { status: 202, body: { ok: true, runIds: ['a', 'planned'] } };
  assert.deepEqual(coalescedAnswer(batch, new Map([['planned', pending]])).body, {
    ok: true,
    runIds: ['a', 'held'],
    coalesced: true,
  });
});

test('joinedIds() and joinedRuns(): each joined run once', () => {
  const joined = new Map([['p1', pending], ['p2', pending]]);
  assert.deepEqual(joinedIds(['a', 'p1', 'p2'], joined), ['a', 'held']);
  assert.deepEqual(joinedRuns(joined), ['held']);
});
