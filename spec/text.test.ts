import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clip, clipLine, collapseSpace, detail, plainText, show } from '../lib/text.ts';

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
