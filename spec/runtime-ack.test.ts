import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isAck } from '../lib/runtime/ack.ts';

const MAX = 300;

const exact = 'x'.repeat(20);

/** Each case: what isAck() answers for each reply, with ackMaxChars `max` (300 unless the case says). */
const cases: { name: string; max?: number; replies: [reply: string, ack: boolean][] }[] = [
  {
    name: 'takes the token alone, with surrounding whitespace, as an ack',
    replies: [['HEARTBEAT_OK', true], ['  \n HEARTBEAT_OK \n', true]],
  },
  { name: 'takes an empty or blank reply as an ack', replies: [['', true], [' \n\t ', true]] },
  {
    name: 'removes the token at the start and counts what remains',
    replies: [['HEARTBEAT_OK. Nothing new since the last check.', true], ['HEARTBEAT_OK! All quiet.', true]],
  },
  {
    name: 'removes the token at the end and counts what remains',
    replies: [['Checked the inbox, nothing urgent. HEARTBEAT_OK', true], ['Nothing urgent.\n\nHEARTBEAT_OK.', true]],
  },
  {
    name: 'sees the token inside simple markdown markup',
    replies: [
      '**HEARTBEAT_OK**',
      '__HEARTBEAT_OK__',
      '*HEARTBEAT_OK*',
      '_HEARTBEAT_OK_',
      '`HEARTBEAT_OK`',
      'All quiet. **HEARTBEAT_OK**',
    ].map((r) => [r, true]),
  },
  {
    name: 'sees the token inside simple HTML markup',
    replies: [
      '<b>HEARTBEAT_OK</b>',
      '<strong>HEARTBEAT_OK</strong>',
      '<code>HEARTBEAT_OK</code>',
      'Nothing new. <b>HEARTBEAT_OK</b>',
    ].map((r) => [r, true]),
  },
  {
    name: 'accepts a remainder of exactly ackMaxChars and refuses one a character longer',
    max: 20,
    replies: [[`HEARTBEAT_OK ${exact}`, true], [`HEARTBEAT_OK ${exact}x`, false], [`${exact}x HEARTBEAT_OK`, false]],
  },
  {
    name: 'with ackMaxChars 0 takes only the bare token as an ack',
    max: 0,
    replies: [['**HEARTBEAT_OK**', true], ['HEARTBEAT_OK.', true], ['HEARTBEAT_OK ok', false]],
  },
  {
    name: 'is false for a long message that merely starts with the token',
    replies: [[`HEARTBEAT_OK\n\n${'Your flight was moved to 7am and the hotel needs a new card. '.repeat(6)}`, false]],
  },
  {
    name: 'is false when the token stands in the middle of the reply',
    replies: [['I would say HEARTBEAT_OK but the server is down', false]],
  },
  {
    name: 'is false for a reply without the token',
    replies: [['Your package arrives today.', false], ['heartbeat_ok', false]],
  },
  // Regression: the token was matched as a prefix or suffix of a longer word.
  {
    name: 'does not take a longer word that contains the token for the token',
    replies: [['HEARTBEAT_OKAY so the backup failed', false], ['HEARTBEAT_OK_BUT the backup failed', false], [
      'The backup failed: NOT_HEARTBEAT_OK',
      false,
    ]],
  },
];

for (const c of cases) {
  test(`isAck() ${c.name}`, () => {
    for (const [reply, ack] of c.replies) assert.equal(isAck(reply, c.max ?? MAX), ack, JSON.stringify(reply));
  });
}
