import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HEARTBEAT_OK, isAck } from '../lib/runtime/ack.ts';

const MAX = 300;

test('HEARTBEAT_OK is the token a main agent acknowledges with', () => {
  assert.equal(HEARTBEAT_OK, 'HEARTBEAT_OK');
});

test('isAck() takes the token alone, with surrounding whitespace, as an ack', () => {
  assert.equal(isAck('HEARTBEAT_OK', MAX), true);
  assert.equal(isAck('  \n HEARTBEAT_OK \n', MAX), true);
});

test('isAck() takes an empty or blank reply as an ack', () => {
  assert.equal(isAck('', MAX), true);
  assert.equal(isAck(' \n\t ', MAX), true);
});

test('isAck() removes the token at the start and counts what remains', () => {
  assert.equal(isAck('HEARTBEAT_OK. Nothing new since the last check.', MAX), true);
  assert.equal(isAck('HEARTBEAT_OK! All quiet.', MAX), true);
});

test('isAck() removes the token at the end and counts what remains', () => {
  assert.equal(isAck('Checked the inbox, nothing urgent. HEARTBEAT_OK', MAX), true);
  assert.equal(isAck('Nothing urgent.\n\nHEARTBEAT_OK.', MAX), true);
});

test('isAck() sees the token inside simple markdown markup', () => {
  for (const reply of ['**HEARTBEAT_OK**', '__HEARTBEAT_OK__', '*HEARTBEAT_OK*', '_HEARTBEAT_OK_', '`HEARTBEAT_OK`', 'All quiet. **HEARTBEAT_OK**']) {
    assert.equal(isAck(reply, MAX), true, reply);
  }
});

test('isAck() sees the token inside simple HTML markup', () => {
  for (const reply of ['<b>HEARTBEAT_OK</b>', '<strong>HEARTBEAT_OK</strong>', '<code>HEARTBEAT_OK</code>', 'Nothing new. <b>HEARTBEAT_OK</b>']) {
    assert.equal(isAck(reply, MAX), true, reply);
  }
});

test('isAck() accepts a remainder of exactly ackMaxChars and refuses one a character longer', () => {
  const exact = 'x'.repeat(20);
  assert.equal(isAck(`HEARTBEAT_OK ${exact}`, 20), true);
  assert.equal(isAck(`HEARTBEAT_OK ${exact}x`, 20), false);
  assert.equal(isAck(`${exact}x HEARTBEAT_OK`, 20), false);
});

test('isAck() with ackMaxChars 0 takes only the bare token as an ack', () => {
  assert.equal(isAck('**HEARTBEAT_OK**', 0), true);
  assert.equal(isAck('HEARTBEAT_OK.', 0), true);
  assert.equal(isAck('HEARTBEAT_OK ok', 0), false);
});

test('isAck() is false for a long message that merely starts with the token', () => {
  const message = `HEARTBEAT_OK\n\n${'Your flight was moved to 7am and the hotel needs a new card. '.repeat(6)}`;
  assert.equal(isAck(message, MAX), false);
});

test('isAck() is false when the token stands in the middle of the reply', () => {
  assert.equal(isAck('I would say HEARTBEAT_OK but the server is down', MAX), false);
});

test('isAck() is false for a reply without the token', () => {
  assert.equal(isAck('Your package arrives today.', MAX), false);
  assert.equal(isAck('heartbeat_ok', MAX), false);
});

// Regression: the token was matched as a prefix or suffix of a longer word.
test('isAck() does not take a longer word that contains the token for the token', () => {
  assert.equal(isAck('HEARTBEAT_OKAY so the backup failed', MAX), false);
  assert.equal(isAck('HEARTBEAT_OK_BUT the backup failed', MAX), false);
  assert.equal(isAck('The backup failed: NOT_HEARTBEAT_OK', MAX), false);
});
