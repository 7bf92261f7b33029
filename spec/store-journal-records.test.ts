import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkLine, MAX_SEQ } from '../lib/store/journal/records.ts';

const time = '2026-01-01T00:00:00.000Z';
const event = { seq: 1, time, kind: 'system', text: 'hi', source: 'wake', mode: 'now' };
const run = {
  runId: 'r1',
  hook: 'agent',
  name: 'Hook',
  message: 'm',
  sessionKey: 'hook:r1',
  agentId: 'main',
  wakeMode: 'now',
  deliver: false,
  channel: 'last',
  status: 'pending',
  acceptedAt: time,
  attempts: 0,
};

test('checkLine() accepts every line the store writes, unchanged', () => {
  const lines = [
    {
      t: 'commit',
      seq: 1,
      time,
      events: [event],
      runs: [run],
      runUpdates: [{ runId: 'r1', status: 'ok', reply: 'done', delivery: { status: 'skipped', reason: 'x' } }],
      consumedThrough: 1,
      lastRoute: { channel: 'slack', to: 'C1' },
      idem: { scope: 'agent', key: 'k', status: 202, body: { ok: true }, expiresAt: 5 },
    },
    { t: 'idem', seq: 0, scope: 'wake', key: 'k', status: 200, body: { ok: true }, expiresAt: 5 },
    {
      t: 'commit',
      seq: 2,
      time,
      runs: [{ ...run, runId: 'r2', retryOf: 'r1' }],
      runUpdates: [{ runId: 'r1', retriedBy: 'r2' }, {
        runId: 'r3',
        delivery: { status: 'delivered', channel: 'slack', to: 'C1', messageIds: [] },
        redeliveries: [{ time, delivery: { status: 'delivered', channel: 'slack', to: 'C1', messageIds: [] } }],
      }],
    },
  ];
  for (const line of lines) assert.deepEqual(checkLine(line), { line, problems: [] });
});

test('checkLine() refuses a line of the wrong shape and names the field', () => {
  for (
    const [record, problem] of [
      [null, /must be an object/],
      [{ events: 'x' }, /t: is required/],
      [{ t: 'commit', seq: 1e308, time }, /seq: must be at most/],
      [{ t: 'commit', seq: MAX_SEQ + 2, time }, /seq: must be at most/],
      [{ t: 'commit', seq: 1, time, events: 'x' }, /events: must be an array/],
      [{ t: 'commit', seq: 1, time, extra: 1 }, /extra: unknown key/],
      [{ t: 'idem', seq: 0, scope: 'wake', key: 'k', status: 200, body: [], expiresAt: 5 }, /body: must be an object/],
    ] as const
  ) {
    const checked = checkLine(record);
    assert.equal(checked.line, null, JSON.stringify(record));
    assert.match(checked.problems.join('; '), problem);
  }
});

test('checkLine() leaves out entries of the wrong shape and keeps the rest of the line', () => {
  const checked = checkLine({
    t: 'commit',
    seq: 2,
    time,
    events: [null, event, { ...event, seq: 0 }],
    runs: [{ ...run, status: 'lost' }, run],
    runUpdates: [{ status: 'ok' }, { runId: 'r1', delivery: 3 }],
  });
  assert.deepEqual(checked.line, { t: 'commit', seq: 2, time, events: [event], runs: [run], runUpdates: [] });
  assert.deepEqual(checked.problems.map((p) => p.split(':')[0]), [
    'events[0]',
    'events[2].seq',
    'runs[0].status',
    'runUpdates[0].runId',
    'runUpdates[1].delivery',
  ]);
});
