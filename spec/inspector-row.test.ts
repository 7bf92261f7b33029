// lib/inspector/row.ts: what a row of the inspector's list says of a ledger entry.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { eventType, outcome, rowFacts } from '../lib/inspector/row.ts';
import type { LedgerEntry } from '../lib/model/ledger-entry.ts';

function entry(over: Partial<LedgerEntry>): LedgerEntry {
  return {
    id: 'e1',
    requestId: 'r1',
    time: '2026-11-27T12:00:00.000Z',
    method: 'POST',
    path: '/hooks/x',
    client: '127.0.0.1',
    lane: 'authenticated',
    auth: 'token',
    headers: {},
    status: 200,
    durationMs: 1,
    ...over,
  };
}

const json = (value: unknown): NonNullable<LedgerEntry['body']> => {
  const data = JSON.stringify(value);
  return { encoding: 'utf8', data, bytes: data.length, truncated: false };
};

test('eventType() reads each provider where it puts the type', () => {
  assert.equal(eventType({ 'x-github-event': 'push' }, {}), 'push');
  assert.equal(eventType({ 'x-gitlab-event': 'Merge Request Hook' }, {}), 'Merge Request Hook');
  assert.equal(eventType({ 'x-shopify-topic': 'orders/create' }, {}), 'orders/create');
  assert.equal(eventType({}, { type: 'invoice.payment_failed', id: 'evt_1' }), 'invoice.payment_failed');
  assert.equal(eventType({}, { type: 'event_callback', event: { type: 'app_mention' } }), 'app_mention');
  assert.equal(eventType({}, { type: 'url_verification' }), 'url_verification');
  assert.equal(
    eventType({}, { object: 'whatsapp_business_account', entry: [{ changes: [{ field: 'messages' }] }] }),
    'whatsapp_business_account messages',
  );
  assert.equal(eventType({}, { MessageStatus: 'delivered' }), 'message delivered');
  assert.equal(eventType({}, { title: 'no type' }), null);
});

test('outcome() says what became of the request in words', () => {
  assert.equal(outcome(entry({})), 'accepted');
  assert.equal(outcome(entry({ became: { ignored: true }, mapping: 'github' })), "ignored by github's filter");
  assert.equal(outcome(entry({ became: { duplicateOf: 'abcdefabcdefabcdef' } })), 'duplicate of abcdefabcdef');
  assert.equal(
    outcome(entry({ status: 401, signature: { scheme: 'github', ok: false, why: 'bad-signature' } })),
    'refused: bad signature',
  );
  assert.equal(outcome(entry({ status: 400, code: 'ERR_INVALID_PAYLOAD' })), 'refused: invalid payload');
  assert.equal(outcome(entry({ status: 502, code: 'ERR_UPSTREAM' })), 'failed: upstream');
  // A hook's limits: dropped by its rate limit, held, refused.
  assert.equal(outcome(entry({ became: { limited: true } })), 'dropped by its rate limit');
  assert.equal(
    outcome(entry({ status: 202, became: { runs: ['r'], heldUntil: '2026-11-28T00:00:00.000Z' } })),
    'accepted, held until 2026-11-28T00:00:00.000Z',
  );
  assert.equal(outcome(entry({ status: 429, code: 'ERR_BUDGET_EXCEEDED' })), 'refused: budget exceeded');
});

test('rowFacts() takes the delivery id by the signature scheme, else from the usual headers, on one bounded line', async () => {
  const github = await rowFacts(
    entry({
      status: 401,
      headers: { 'x-github-event': 'push', 'x-github-delivery': 'gh-1' },
      signature: { scheme: 'github', ok: false, why: 'bad-signature' },
      body: json({ ref: 'main' }),
    }),
  );
  assert.deepEqual(github, { outcome: 'refused: bad signature', event: 'push', delivery: 'gh-1' });
  const stripe = await rowFacts(
    entry({ signature: { scheme: 'stripe', ok: true }, body: json({ id: 'evt_123', type: 'charge.succeeded' }) }),
  );
  assert.deepEqual(stripe, { outcome: 'accepted', event: 'charge.succeeded', delivery: 'evt_123' });
  const hostile = await rowFacts(
    entry({ headers: { 'x-github-event': `a\u202Eb\n${'x'.repeat(500)}`, 'webhook-id': 'msg_1' } }),
  );
  assert.ok(
    hostile.event !== undefined && hostile.event.length <= 120 && !/[\n\u202E]/.test(hostile.event),
    hostile.event,
  );
  assert.equal(hostile.delivery, 'msg_1');
  // A body nested past what JSON.parse takes is no event, not a crash.
  const deep = `{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
  assert.deepEqual(
    await rowFacts(entry({ body: { encoding: 'utf8', data: deep, bytes: deep.length, truncated: false } })),
    { outcome: 'accepted' },
  );
});

test("rowFacts() says the entry's cause on one bounded line without control or bidi characters, and outcome() names the filter from it", async () => {
  const cause = { kind: 'transform' as const, text: `threw: a\u001b[2J\u202eb ${'x'.repeat(500)}`, at: 'ci.mjs:3' };
  const failed = await rowFacts(entry({ status: 500, code: 'ERR_MAPPING_FAILED', mapping: 'ci', cause }));
  assert.equal(failed.outcome, 'failed: mapping failed');
  assert.ok(
    failed.why !== undefined && failed.why.length <= 120 && !/[\u0000-\u001f\u202e]/.test(failed.why),
    failed.why,
  );
  assert.match(failed.why, /^transform ci\.mjs:3 threw: a \[2J b x+…$/);
  const hollow = await rowFacts(entry({ cause: { kind: 'placeholders', text: 'title, author' } }));
  assert.deepEqual(hollow, { outcome: 'accepted', why: 'placeholders resolved to nothing: title, author' });
  const filtered = await rowFacts(
    entry({
      became: { ignored: true },
      cause: { kind: 'filter', text: 'header x-github-event is not "push"', at: 'pushes' },
    }),
  );
  assert.deepEqual(filtered, {
    outcome: "ignored by pushes's filter",
    why: 'ignored by pushes\'s filter: header x-github-event is not "push"',
  });
  assert.deepEqual(await rowFacts(entry({ became: { duplicateOf: 'r0' }, cause: { kind: 'duplicate', text: 'r0' } })), {
    outcome: 'duplicate of r0',
  });
});
