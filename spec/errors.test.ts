import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { ErrorCode, HttpError } from '../lib/errors.ts';
import { ROOT } from './_cli.ts';

test('HttpError carries its status, stable code, message and defaults', () => {
  const error = new HttpError(404, ErrorCode.NotFound, 'no hook with this name');
  assert.ok(error instanceof Error);
  assert.deepEqual([error.name, error.status, error.code, error.message, error.headers, error.close], [
    'HttpError',
    404,
    'ERR_NOT_FOUND',
    'no hook with this name',
    {},
    false,
  ]);
});

test('HttpError keeps the headers, close flag and cause it is given', () => {
  const cause = new Error('socket hang up');
  const error = new HttpError(429, ErrorCode.TooManyFailures, 'retry later', {
    headers: { 'retry-after': '7' },
    close: true,
    cause,
  });
  assert.deepEqual(error.headers, { 'retry-after': '7' });
  assert.equal(error.close, true);
  assert.equal(error.cause, cause);
});

test('HttpError captures no stack frames and leaves Error.stackTraceLimit as it was', () => {
  const before = Error.stackTraceLimit;
  const error = new HttpError(401, ErrorCode.Unauthorized, 'invalid hook token');
  assert.equal(Error.stackTraceLimit, before);
  assert.doesNotMatch(error.stack ?? '', /\n\s+at /);
  assert.match(new Error('ordinary').stack ?? '', /\n\s+at /, 'other errors still get their stacks');
});

test('ErrorCode values are unique stable strings', () => {
  const codes = Object.values(ErrorCode);
  assert.equal(new Set(codes).size, codes.length);
  for (const code of codes) assert.match(code, /^ERR_[A-Z_]+$/);
});

/** lib/'s files, as paths from the root, with their text. */
async function libFiles(): Promise<{ file: string; text: string }[]> {
  const entries = await readdir(join(ROOT, 'lib'), { withFileTypes: true, recursive: true });
  const files = entries.filter((e) => e.isFile()).map((e) => relative(ROOT, join(e.parentPath ?? e.path, e.name)));
  return Promise.all(files.map(async (file) => ({ file, text: await readFile(join(ROOT, file), 'utf8') })));
}

// A code in quotes or backticks, comments left out: what a file defines or compares against.
const CODE_LITERAL = /['"`](ERR_[A-Z0-9_]+)['"`]/g;
const codeLiterals = (text: string) =>
  [...text.replace(/\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, '').matchAll(CODE_LITERAL)].map((m) => m[1]!);

test("no ERR_ code is written as a string in lib/ outside lib/errors.ts, but Node's own (ERR_PARSE_ARGS_*): each is ErrorCode's", async () => {
  const offenders: string[] = [];
  for (const { file, text } of await libFiles()) {
    if (file === 'lib/errors.ts' || !file.endsWith('.ts')) continue;
    for (const code of codeLiterals(text)) if (!code.startsWith('ERR_PARSE_ARGS_')) offenders.push(`${file}: ${code}`);
  }
  assert.deepEqual(offenders, []);
});

test('the inspector page (served as it is, it cannot import ErrorCode) compares codes ErrorCode defines', async () => {
  const page = (await libFiles()).filter(({ file }) => !file.endsWith('.ts'));
  assert.ok(page.some(({ file }) => file.endsWith('.js')));
  const known = new Set<string>(Object.values(ErrorCode));
  assert.deepEqual(
    page.flatMap(({ file, text }) =>
      codeLiterals(text).filter((code) => !known.has(code)).map((code) => `${file}: ${code}`)
    ),
    [],
  );
});

test('docs/http-api.md lists every code of ErrorCode, and only those', async () => {
  const doc = await readFile(join(ROOT, 'docs/http-api.md'), 'utf8');
  const start = doc.indexOf('These are all the codes `lib/errors.ts` defines');
  assert.ok(start !== -1, 'the list of codes is in docs/http-api.md');
  const list = doc.slice(start, doc.indexOf('\n\n', doc.indexOf('\n- ', start)));
  const listed = [...list.matchAll(/`(ERR_[A-Z0-9_]+)`/g)].map((m) => m[1]!);
  assert.equal(new Set(listed).size, listed.length, 'each code once');
  assert.deepEqual([...listed].sort(), Object.values(ErrorCode).sort());
});
