// tools/function-lengths.ts reads functions from a file's text with no parser: its cases here are
// the shapes lib/ writes (declarations, methods, arrows, return types, generics) and the text that
// could mislead a scanner (braces in strings, templates, regular expressions and comments).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { join } from 'node:path';
import { functionSpans, longFunctions } from '../tools/function-lengths.ts';
import { ROOT } from './_cli.ts';

const spans = (source: string): string[] => functionSpans(source).map((s) => `${s.name}@${s.line}:${s.lines}`);

test('functionSpans() counts a declaration from its signature to its closing brace, nested functions included', () => {
  const source = [
    'export async function load(',
    '  path: string,',
    '): Promise<void> {',
    '  const read = () => {',
    '    return 1;',
    '  };',
    '}',
  ].join('\n');
  assert.deepEqual(spans(source), ['load@1:7', 'read@4:3']);
});

test('functionSpans() finds methods, accessors, constructors, generics and object-literal methods', () => {
  const source = [
    'class A {',
    '  constructor(x: number) {',
    '  }',
    '  get size(): number {',
    '    return 1;',
    '  }',
    '  static of<T>(x: T): A {',
    '    return new A(1);',
    '  }',
    '}',
    'const o = {',
    '  run(argv: string[]) {',
    '    return argv;',
    '  },',
    '};',
  ].join('\n');
  assert.deepEqual(spans(source), ['constructor@2:2', 'size@4:3', 'of@7:3', 'run@12:3']);
});

test('functionSpans() reads return types with type literals, function types and arrows with typed parameters', () => {
  const source = [
    'function a(): { ok: boolean } {',
    '  return { ok: true };',
    '}',
    'function b(x: number): () => void {',
    '  return () => {};',
    '}',
    'const c = async (x: number): Promise<{ y: number }> => {',
    '  return { y: x };',
    '};',
    'const d = x => {',
    '  return x;',
    '};',
  ].join('\n');
  assert.deepEqual(spans(source), ['a@1:3', 'b@4:3', '<anonymous>@5:1', 'c@7:3', 'd@10:3']);
});

test('functionSpans() counts no block, object literal, interface, class or expression-bodied arrow', () => {
  const source = [
    'interface I {',
    '  run(): void;',
    '}',
    'if (x) {',
    '  for (const y of z) {',
    '  }',
    '}',
    'const o = { a: 1, b: (x: number) => x + 1 };',
    'try {',
    '} catch (error) {',
    '}',
    'switch (x) {',
    '}',
  ].join('\n');
  assert.deepEqual(spans(source), []);
});

test('functionSpans() is not misled by braces in strings, templates, regular expressions and comments', () => {
  const source = [
    'function f() {',
    '  const s = \'}\' + "{";',
    '  const t = `}${ { a: 1 }.a }{`;',
    '  const r = /[}{]\\}/g;',
    '  // }',
    '  /* { */',
    '  return x.toString() / 2;',
    '}',
  ].join('\n');
  assert.deepEqual(spans(source), ['f@1:8']);
});

test('no function in lib/ is over 60 lines: a longer one reads as a few named steps', async () => {
  assert.deepEqual(await longFunctions([join(ROOT, 'lib')], 60), []);
});
