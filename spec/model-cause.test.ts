import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CAUSE_AT_MAX, CAUSE_TEXT_MAX, describeCause, firstLine, isCause, makeCause } from '../lib/model/cause.ts';

test('makeCause() keeps the first line of the text, trimmed, whatever line break ends it', () => {
  assert.deepEqual(makeCause('transform', 'threw: boom\n    at x (file:///a.mjs:1:2)', 'ci.mjs:4'), {
    kind: 'transform',
    text: 'threw: boom',
    at: 'ci.mjs:4',
  });
  for (const end of ['\r\n', '\r', '\u2028', '\u2029', '\u0085', '\v', '\f']) {
    assert.equal(makeCause('policy', ` one${end}two`).text, 'one', JSON.stringify(end));
  }
});

test('makeCause() bounds the text and at, and leaves an empty at out', () => {
  const cause = makeCause('transform', 'x'.repeat(10_000), 'y'.repeat(10_000));
  assert.equal(cause.text.length, CAUSE_TEXT_MAX);
  assert.equal(cause.at?.length, CAUSE_AT_MAX);
  assert.ok(cause.text.endsWith('…'));
  assert.deepEqual(makeCause('filter', 'header x is missing', ''), { kind: 'filter', text: 'header x is missing' });
});

test('makeCause() keeps control and bidi characters other than line breaks as they are: they are escaped where shown', () => {
  assert.equal(makeCause('transform', 'threw: a\u001b[31mb\u202ec').text, 'threw: a\u001b[31mb\u202ec');
});

test('firstLine() of an empty text is empty', () => {
  assert.equal(firstLine('', 10), '');
  assert.equal(firstLine('\nsecond', 10), '');
});

test('describeCause() says each kind in words', () => {
  assert.equal(describeCause(makeCause('transform', 'threw: boom', 'ci.mjs:4')), 'transform ci.mjs:4 threw: boom');
  assert.equal(describeCause(makeCause('transform', 'timeout: over 5000 ms')), 'transform timeout: over 5000 ms');
  assert.equal(
    describeCause(makeCause('placeholders', 'payload.title, sender.login')),
    'placeholders resolved to nothing: payload.title, sender.login',
  );
  assert.equal(
    describeCause(makeCause('filter', 'header x-github-event is not one of "push"', 'github')),
    'ignored by github\'s filter: header x-github-event is not one of "push"',
  );
  assert.equal(
    describeCause(makeCause('filter', 'payload action is missing')),
    'ignored by a filter: payload action is missing',
  );
  assert.equal(
    describeCause(makeCause('policy', 'agentId: agent "ops" is not in hooks.allowedAgentIds')),
    'refused by policy: agentId: agent "ops" is not in hooks.allowedAgentIds',
  );
  assert.equal(describeCause(makeCause('duplicate', 'req-1')), 'duplicate of request req-1');
  assert.equal(describeCause(makeCause('duplicate', '')), 'duplicate of an earlier request');
});

test('isCause() takes a cause of a known kind and nothing else', () => {
  assert.equal(isCause(makeCause('policy', 'rule')), true);
  for (
    const value of [undefined, null, 'policy: rule', { kind: 'whim', text: 'x' }, { kind: 'policy' }, {
      kind: 'policy',
      text: 1,
    }]
  ) assert.equal(isCause(value), false, JSON.stringify(value));
});
