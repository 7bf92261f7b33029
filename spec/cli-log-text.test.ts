import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../lib/log.ts';
import { chooseLogFormat, formatRecord, jsonLinesToText } from '../lib/cli/log-text.ts';

test('chooseLogFormat() picks text on a terminal and JSON elsewhere, unless one is asked for', () => {
  assert.equal(chooseLogFormat(undefined, true), 'text');
  assert.equal(chooseLogFormat(undefined, false), 'json');
  assert.equal(chooseLogFormat('json', true), 'json');
  assert.equal(chooseLogFormat('text', false), 'text');
});

test("jsonLinesToText() turns the logger's lines into time, level, message and key=value fields", () => {
  let out = '';
  const log = createLogger((line) => void (out += line), () => Date.parse('2026-11-22T08:02:51.101Z'));
  log.info('request', {
    id: 'ci-run-17',
    method: 'POST',
    path: '/hooks/wake',
    status: 200,
    duration: 1.9,
    client: '127.0.0.1',
  });
  log.warn('possible prompt injection (content wrapped)', { hook: 'ci', kinds: 'fake-role-tag,destructive-command' });
  log.error('reload failed', { error: 'Error: two words' });
  assert.equal(
    jsonLinesToText(out),
    [
      '2026-11-22T08:02:51.101Z info  request  id=ci-run-17 method=POST path=/hooks/wake status=200 duration=1.9 client=127.0.0.1',
      '2026-11-22T08:02:51.101Z warn  possible prompt injection (content wrapped)  hook=ci kinds=fake-role-tag,destructive-command',
      '2026-11-22T08:02:51.101Z error reload failed  error="Error: two words"',
      '',
    ].join('\n'),
  );
});

test('jsonLinesToText() escapes control characters, so a field cannot add a line or drive the terminal', () => {
  const text = jsonLinesToText(
    `${
      JSON.stringify({ time: 't', level: 'error', msg: 'unexpected error', stack: 'Error: x\n    at y \u001b[31m' })
    }\n`,
  );
  assert.equal(text, 't error unexpected error  stack="Error: x\\n    at y \\u001b[31m"\n');
  assert.equal(formatRecord({ time: 't', level: 'info', msg: 'a\u2028b' }), 't info  a\\u2028b');
});

test('jsonLinesToText() passes anything that is not a JSON object unchanged, and empty fields are left out', () => {
  assert.equal(jsonLinesToText('listening on http://127.0.0.1:1\n[1]\n'), 'listening on http://127.0.0.1:1\n[1]\n');
  assert.equal(
    formatRecord({ time: 't', level: 'info', msg: 'stopped', signal: undefined, n: null, ok: true }),
    't info  stopped  n=null ok=true',
  );
});

test('formatRecord() reads the counts of alike refusals and of lines left out as a sentence, the other fields after it', () => {
  assert.equal(
    formatRecord({
      time: 't',
      level: 'info',
      msg: 'refused alike',
      status: 503,
      code: 'ERR_UNAVAILABLE',
      hook: 'wake',
      client: '127.0.0.1',
      count: 41_233,
      seconds: 10,
    }),
    't info  refused alike  503 ERR_UNAVAILABLE ×41,233 from 127.0.0.1 in 10 s  hook=wake',
  );
  assert.equal(
    formatRecord({
      time: 't',
      level: 'info',
      msg: 'request lines left out',
      status: 202,
      count: 1_234_567,
      seconds: 9,
    }),
    't info  request lines left out  202 ×1,234,567 in 9 s',
  );
  // A record that is not one of the server's counts keeps the key=value form.
  assert.equal(
    formatRecord({ time: 't', level: 'info', msg: 'refused alike', status: '503' }),
    't info  refused alike  status=503',
  );
});
