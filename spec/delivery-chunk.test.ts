import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chunkText } from '../lib/delivery/chunk.ts';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

// A small seeded generator, so a failing case can be replayed.
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function words(text: string): string[] {
  return text.split(/\s+/).filter((w) => w !== '');
}

test('chunkText() returns text that fits as one chunk, unchanged', () => {
  assert.deepEqual(chunkText('hello', 5), ['hello']);
  assert.deepEqual(chunkText('  indented\n', 20), ['  indented\n']);
});

test('chunkText() returns no chunks for empty or blank text', () => {
  assert.deepEqual(chunkText('', 10), []);
  assert.deepEqual(chunkText(' \n\n\t ', 10), []);
  assert.deepEqual(chunkText(' '.repeat(25), 10), []);
  assert.deepEqual(chunkText('\t'.repeat(25), 10), []);
});

test('chunkText() cuts at a paragraph break before a line break that would fill more', () => {
  assert.deepEqual(chunkText('aa\n\nbb\ncc\ndd', 10), ['aa', 'bb\ncc\ndd']);
  assert.deepEqual(chunkText('first para\n\nsecond para\n\nthird', 25), ['first para\n\nsecond para', 'third']);
});

test('chunkText() cuts at a line break when no paragraph break fits', () => {
  assert.deepEqual(chunkText('l1l1\nl2l2\nl3l3', 10), ['l1l1\nl2l2', 'l3l3']);
  assert.deepEqual(chunkText('aaaa\nbbbb\n\ncccc', 10), ['aaaa\nbbbb', 'cccc']);
});

test('chunkText() cuts at a space or tab when no line break fits', () => {
  assert.deepEqual(chunkText('alpha\tbeta', 6), ['alpha', 'beta']);
  assert.deepEqual(chunkText('alpha beta gamma delta', 11), ['alpha beta', 'gamma delta']);
  assert.deepEqual(chunkText('abcd efgh', 4), ['abcd', 'efgh']);
});

test('chunkText() hard-splits only a single word longer than maxLength', () => {
  assert.deepEqual(chunkText('x'.repeat(25), 10), ['x'.repeat(10), 'x'.repeat(10), 'x'.repeat(5)]);
  assert.deepEqual(chunkText(`ab ${'y'.repeat(12)} cd`, 10), ['ab', 'y'.repeat(10), 'yy cd']);
});

test('chunkText() drops the separator and the blank lines or spaces around a cut', () => {
  assert.deepEqual(chunkText('a\n\n\n\n\nb', 3), ['a', 'b']);
  assert.deepEqual(chunkText('one   \n\ntwo', 6), ['one', 'two']);
  assert.deepEqual(chunkText('one     two', 5), ['one', 'two']);
  assert.deepEqual(chunkText('a\r\n\r\nb', 3), ['a', 'b']);
});

test('chunkText() keeps the indentation of a line that opens a chunk', () => {
  assert.deepEqual(chunkText('line one\n    indented', 12), ['line one', '    indented']);
});

test('chunkText() counts UTF-16 code units and never splits a surrogate pair', () => {
  assert.deepEqual(chunkText('😀😀😀', 4), ['😀😀', '😀']);
  assert.deepEqual(chunkText('a😀😀😀', 4), ['a😀', '😀😀']);
  assert.deepEqual(chunkText('😀😀😀', 3), ['😀', '😀', '😀']);
  assert.deepEqual(chunkText('é'.repeat(5), 4), ['éééé', 'é']);
});

test('chunkText() keeps every word whole and in order, each chunk within maxLength (seeded random texts)', () => {
  const next = random(20261122);
  const wordPieces = ['word', 'longerword', 'é', '😀', 'a', 'mid-size', '😀é😀'];
  const gaps = [' ', ' ', '  ', '\n', '\n', '\n\n', '\n\n\n', '\t', ' \n  '];
  const pick = (list: string[]): string => list[Math.floor(next() * list.length)]!;
  for (let round = 0; round < 400; round++) {
    const max = 10 + Math.floor(next() * 60);
    let text = '';
    const count = Math.floor(next() * 120);
    for (let i = 0; i < count; i++) text += (next() < 0.3 ? pick(gaps) : '') + pick(wordPieces) + pick(gaps);
    const chunks = chunkText(text, max);
    for (const chunk of chunks) {
      assert.ok(chunk.length <= max, `chunk of ${chunk.length} over ${max}`);
      assert.notEqual(chunk.trim(), '');
      assert.doesNotMatch(chunk, LONE_SURROGATE);
    }
    // No word here is longer than 10, so no word may be cut.
    assert.deepEqual(chunks.flatMap(words), words(text), `seed round ${round}`);
  }
});

test('chunkText() loses no character but whitespace when words are longer than maxLength', () => {
  const next = random(7);
  for (let round = 0; round < 200; round++) {
    const max = 2 + Math.floor(next() * 8);
    let text = '';
    for (let i = 0; i < 30; i++) text += next() < 0.2 ? ' ' : next() < 0.5 ? '😀' : 'z';
    const chunks = chunkText(text, max);
    for (const chunk of chunks) {
      assert.ok(chunk.length <= max);
      assert.doesNotMatch(chunk, LONE_SURROGATE);
    }
    assert.equal(chunks.join('').replace(/\s/g, ''), text.replace(/\s/g, ''));
  }
});

test('chunkText() rejects a maxLength below 2 or not an integer, and text that is not a string', () => {
  assert.throws(() => chunkText('abc', 1), {
    name: 'RangeError',
    message: 'Invalid maxLength: must be an integer of at least 2, got 1',
  });
  assert.throws(() => chunkText('abc', 2.5), RangeError);
  assert.throws(() => chunkText('abc', Number.NaN), RangeError);
  assert.throws(() => chunkText(42 as unknown as string, 10), {
    name: 'TypeError',
    message: 'Invalid text: must be a string',
  });
});
