import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SessionEvent } from '../lib/model/records.ts';
import { planEvents, recordedEvent, SessionEvents } from '../lib/store/journal/session-events.ts';

test('recordedEvent keeps every field of an event, adds its seq and time, and drops the coalesce flag', () => {
  // Typed as every field required: a field added to SessionEvent fails this spec until recordedEvent copies it.
  const full = {
    seq: 7,
    time: '2026-01-01T00:00:00.000Z',
    kind: 'system',
    text: 'a wake',
    source: 'hook:ci',
    mode: 'now',
    ack: false,
    requestId: 'r-1',
    agentId: 'ops',
    sessionKey: 'hook:ci:1',
  } satisfies Required<SessionEvent>;
  const { seq, time, ...rest } = full;
  assert.deepEqual(recordedEvent(seq, time, { ...rest, coalesce: true }), full);
  const bare = recordedEvent(1, time, { kind: 'system', text: 't', source: 'wake' });
  assert.deepEqual(Object.keys(bare), ['seq', 'time', 'kind', 'text', 'source']);
});

test("planEvents coalesces a wake into the newest unread one of its session, the commit's own included", () => {
  const session = new SessionEvents(100, 1_000_000);
  session.add([recordedEvent(1, 't', { kind: 'system', text: 'same', source: 'wake' })]);
  const wake = (text: string, agentId?: string) => ({
    kind: 'system' as const,
    text,
    source: 'wake',
    coalesce: true,
    ...(agentId === undefined ? {} : { agentId }),
  });
  const one = planEvents(session, [wake('same')]);
  assert.deepEqual([one.added.length, one.outcomes, one.matched.map((e) => e.seq)], [0, ['coalesced'], [1]]);
  const several = planEvents(session, [wake('new'), wake('new'), wake('same', 'ops'), wake('same')]);
  assert.deepEqual(several.outcomes, ['queued', 'coalesced', 'queued', 'queued']);
  assert.deepEqual(several.added.map((e) => [e.text, e.agentId]), [['new', undefined], ['same', 'ops'], [
    'same',
    undefined,
  ]]);
});
