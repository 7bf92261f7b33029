import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CoalesceWindow } from '../lib/model/coalesce.ts';
import { runPrompt, standsFor } from '../lib/runtime/coalesced.ts';

function window(over: Partial<CoalesceWindow> = {}): CoalesceWindow {
  return {
    group: 'g',
    key: 'k',
    windowSeconds: 30,
    maxWaitSeconds: 300,
    messages: 'latest',
    maxBytes: 100,
    count: 10,
    firstAt: '2026-11-27T12:00:00.000Z',
    lastAt: '2026-11-27T12:00:09.000Z',
    ...over,
  };
}

test('runPrompt(): a run several requests joined opens with how many, when, and which messages follow', () => {
  assert.equal(
    runPrompt({ message: 'latest push', coalesce: window() }),
    'This run stands for 10 requests to this hook with the same coalesce key, accepted from ' +
      "2026-11-27T12:00:00.000Z to 2026-11-27T12:00:09.000Z. The latest request's message follows; the 9 before it " +
      'are not shown.\n\nlatest push',
  );
  assert.match(
    runPrompt({ message: 'm', coalesce: window({ messages: 'all' }) }),
    /Their 10 messages follow, oldest first\.\n\nm$/,
  );
  assert.match(
    runPrompt({ message: 'm', coalesce: window({ messages: 'all', leftOut: 2 }) }),
    /oldest first; 2 of them did not fit within 100 bytes and are not shown\./,
  );
});

test('runPrompt() and standsFor(): a run without a window, or a window of one request, is an ordinary run', () => {
  assert.equal(runPrompt({ message: 'm' }), 'm');
  assert.equal(runPrompt({ message: 'm', coalesce: window({ count: 1 }) }), 'm');
  assert.equal(standsFor({}), '');
  assert.equal(standsFor({ coalesce: window({ count: 1 }) }), '');
  assert.equal(standsFor({ coalesce: window() }), ' (10 requests)');
});
