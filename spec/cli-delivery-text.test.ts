import assert from 'node:assert/strict';
import { test } from 'node:test';
import { printDelivery } from '../lib/cli/delivery-text.ts';
import { captureIo } from './_io.ts';

test('printDelivery prints a delivery on stdout and exits 0', () => {
  const { io, out } = captureIo({});
  assert.equal(printDelivery(io, { status: 'delivered', channel: 'telegram', to: '42', messageIds: ['7', '8'] }), 0);
  assert.deepEqual(out, { stdout: 'delivered to telegram 42 (7, 8)\n', stderr: '' });
});

test('printDelivery prints a failure or a skip with its reason on stderr and exits 1', () => {
  const { io, out } = captureIo({});
  assert.equal(printDelivery(io, { status: 'skipped', reason: 'no recipient' }), 1);
  assert.equal(printDelivery(io, { status: 'failed', channel: 'slack', reason: 'Slack 404: channel_not_found' }), 1);
  assert.equal(out.stdout, '');
  assert.match(out.stderr, /: skipped: no recipient\n.*: failed: Slack 404: channel_not_found\n$/s);
});

test("printDelivery escapes the control characters of the platform's words (alerts test and send)", () => {
  const { io, out } = captureIo({});
  printDelivery(io, { status: 'failed', channel: 'telegram', reason: 'x\x1b]0;t\x07\u202e\r' });
  printDelivery(io, { status: 'delivered', channel: 'telegram', to: '5\x1b[2J', messageIds: ['\x9b1m'] });
  assert.match(out.stderr, /: failed: x\\x1b\]0;t\\x07\\u202e\\r\n$/);
  assert.equal(out.stdout, 'delivered to telegram 5\\x1b[2J (\\x9b1m)\n');
});
