import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  clip,
  clipLine,
  collapseSpace,
  detail,
  escapeControls,
  hideUrlCredentials,
  plainText,
  shellWord,
  show,
} from '../lib/text.ts';
test('collapseSpace() joins lines and runs of whitespace with one space, trimmed', () => {
  assert.equal(collapseSpace('  first\r\n\tsecond   third \n'), 'first second third');
});

test('clip() keeps text up to max and cuts longer text to max with the ellipsis last', () => {
  assert.equal(clip('abcde', 5), 'abcde');
  assert.equal(clip('abcdef', 5), 'abcd…');
  assert.equal(clip('x'.repeat(1000), 300).length, 300);
});

test('clip() never keeps half a surrogate pair', () => {
  assert.equal(clip('abc😀def', 5), 'abc…');
  assert.equal(clip('ab😀def', 5), 'ab😀…');
});

test('show() quotes a value as JSON and cuts it after 64 characters', () => {
  assert.equal(show('general'), '"general"');
  assert.equal(show(12), '12');
  assert.equal(show(undefined), 'undefined');
  assert.equal(show('x'.repeat(100)), `"${'x'.repeat(63)}…`);
});

test('plainText() passes a short text on and names an empty body or an HTML page', () => {
  assert.equal(plainText('  limit exceeded\n'), 'limit exceeded');
  assert.equal(plainText(' \n'), 'no error description');
  assert.equal(plainText('<html><body>502</body></html>'), 'no error description');
});

test('detail() answers ": text" for a body with something in it, else nothing', () => {
  assert.equal(detail(' upstream down \n'), ': upstream down');
  assert.equal(detail('  '), '');
});

test('clipLine() puts a text on one line, then clips it', () => {
  assert.equal(clipLine(' a\n\n b  c ', 5), 'a b c');
  assert.equal(clipLine('one two three', 8), 'one two…');
});

test('hideUrlCredentials() hides the user:password (or user) of every URL in a text, and leaves the rest as it was', () => {
  assert.equal(
    hideUrlCredentials('cannot reach https://bob:s3cret@example.test:8443/hooks?x=1'),
    'cannot reach https://[redacted]@example.test:8443/hooks?x=1',
  );
  assert.equal(
    hideUrlCredentials('a http://tok@h/ and "ws://u:p@q@h2#f"'),
    'a http://[redacted]@h/ and "ws://[redacted]@h2#f"',
  );
  assert.equal(
    hideUrlCredentials('mail bob@example.test, see https://example.test/a@b'),
    'mail bob@example.test, see https://example.test/a@b',
  );
  const plain = 'no URL here';
  assert.equal(hideUrlCredentials(plain), plain);
});

test('hideUrlCredentials() takes linear time on text made to make a scan backtrack', () => {
  const started = performance.now();
  for (const text of ['a'.repeat(250_000), 'a://'.repeat(62_500), `${'x'.repeat(250_000)}://${'@'.repeat(250_000)}`]) {
    hideUrlCredentials(text);
  }
  // A quadratic scan of 250 KB takes tens of seconds; a linear one, milliseconds.
  assert.ok(performance.now() - started < 2000);
});

test('shellWord() leaves plain words alone and single-quotes the rest', () => {
  assert.equal(shellWord('me+tag@example.com'), 'me+tag@example.com');
  assert.equal(shellWord('http://127.0.0.1:8789/hooks/gmail'), 'http://127.0.0.1:8789/hooks/gmail');
  assert.equal(shellWord("o'brien @x"), `'o'\\''brien @x'`);
  assert.equal(shellWord('$(reboot)'), `'$(reboot)'`);
});

test('escapeControls() escapes \\n too unless it is kept, and leaves other text alone', () => {
  assert.equal(escapeControls('a\nb', false), 'a\\nb');
  assert.equal(escapeControls('a\nb', true), 'a\nb');
  assert.equal(escapeControls('Grüße 🙂 \\x1b', true), 'Grüße 🙂 \\x1b');
  assert.equal(escapeControls('\u202eevil\u2066', true), '\\u202eevil\\u2066');
});
