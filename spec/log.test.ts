import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import {
  boundWarnings,
  bufferLines,
  createLogger,
  flushOnExit,
  formatJson,
  isoTime,
  LEFT_OUT,
  type LogFields,
  MAX_ALIKE_PER_SECOND,
} from '../lib/log.ts';
import { IS_DENO } from './_cli.ts';
import { tempDir } from './_dir.ts';
import { until } from './_until.ts';

test('createLogger() writes one JSON object per line with time, level, message and fields', () => {
  const lines: string[] = [];
  const log = createLogger((line) => void lines.push(line), () => Date.UTC(2026, 10, 22, 8, 0, 0));
  log.info('request', { id: 'r1', status: 200 });
  log.warn('slow', { ms: 12.5 });
  log.error('broken');
  assert.ok(lines.every((l) => l.endsWith('\n') && !l.slice(0, -1).includes('\n')));
  assert.deepEqual(lines.map((l) => JSON.parse(l)), [
    { time: '2026-11-22T08:00:00.000Z', level: 'info', msg: 'request', id: 'r1', status: 200 },
    { time: '2026-11-22T08:00:00.000Z', level: 'warn', msg: 'slow', ms: 12.5 },
    { time: '2026-11-22T08:00:00.000Z', level: 'error', msg: 'broken' },
  ]);
});

test('createLogger() keeps a field text with a newline on its one line', () => {
  const lines: string[] = [];
  createLogger((line) => void lines.push(line)).error('unexpected error', { error: 'Error: x\n    at y' });
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!.split('\n').length, 2, 'one line and its terminating newline');
});

test('formatJson() writes the same line as stringifying the merged record, also when a field reuses a fixed key', () => {
  const time = Date.UTC(2026, 10, 23, 9, 30, 0, 5);
  const cases: LogFields[] = [
    {},
    { id: 'r1', status: 401, duration: 0.4, client: '127.0.0.1', gone: undefined, none: null, ok: true },
    { msg: 'override', level: 'x' },
    { quote: 'a"b\\c\n\u2028' },
  ];
  for (const fields of cases) {
    const expected = `${
      JSON.stringify({ time: new Date(time).toISOString(), level: 'warn', msg: 'm "q"', ...fields })
    }\n`;
    assert.equal(formatJson(time, 'warn', 'm "q"', fields), expected);
  }
});

test('createLogger() shapes lines with the format it is given', () => {
  const lines: string[] = [];
  const log = createLogger(
    (line) => void lines.push(line),
    () => 0,
    (time, level, message, fields) => `${time} ${level} ${message} ${Object.keys(fields).join(',')}\n`,
  );
  log.warn('slow', { ms: 1, id: 'x' });
  assert.deepEqual(lines, ['0 warn slow ms,id\n']);
});

test("bufferLines() writes a turn's lines as one chunk, in order, after the turn", async () => {
  const chunks: string[] = [];
  const buffer = bufferLines((text) => void chunks.push(text));
  buffer.write('a\n');
  buffer.write('b\n');
  await Promise.resolve();
  buffer.write('c\n');
  assert.deepEqual(chunks, [], 'nothing is written during the turn');
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(chunks, ['a\nb\nc\n']);
  buffer.write('d\n');
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(chunks, ['a\nb\nc\n', 'd\n']);
});

test('bufferLines() writes at once past its size, and flush() writes what it holds', () => {
  const chunks: string[] = [];
  const buffer = bufferLines((text) => void chunks.push(text), 10);
  buffer.write('12345\n');
  assert.deepEqual(chunks, []);
  buffer.write('67890\n');
  assert.deepEqual(chunks, ['12345\n67890\n']);
  buffer.write('x\n');
  buffer.flush();
  buffer.flush();
  assert.deepEqual(chunks, ['12345\n67890\n', 'x\n'], 'a second flush has nothing to write');
});

test('flushOnExit() flushes on exit and before an uncaught error is reported, and can be undone', () => {
  const proc = new EventEmitter();
  const chunks: string[] = [];
  const buffer = bufferLines((text) => void chunks.push(text));
  const release = flushOnExit(buffer, proc as unknown as NodeJS.Process);
  buffer.write('a\n');
  proc.emit('uncaughtExceptionMonitor', new Error('boom'));
  buffer.write('b\n');
  proc.emit('exit', 1);
  assert.deepEqual(chunks, ['a\n', 'b\n']);
  release();
  assert.equal(proc.listenerCount('exit') + proc.listenerCount('uncaughtExceptionMonitor'), 0);
});

// A real process: what reaches its stderr when it exits, dies of an uncaught error, or is killed.
async function _logThenEnd(
  t: TestContext,
  end: 'exit' | 'throw' | 'reject' | 'kill',
): Promise<{ stderr: string; code: number | null; signal: string | null }> {
  const dir = await tempDir(t, 'log-test-');
  const module = IS_DENO
    ? new URL('../lib/log.ts', import.meta.url).href
    : new URL('../dist/log.js', import.meta.url).href;
  const script = join(dir, 'child.mjs');
  await writeFile(
    script,
    `import { bufferLines, createLogger, flushOnExit } from ${JSON.stringify(module)};
const buffer = bufferLines((text) => process.stderr.write(text));
flushOnExit(buffer);
const log = createLogger(buffer.write);
setTimeout(() => {
  log.info('one');
  log.info('two');
  const end = ${JSON.stringify(end)};
  if (end === 'exit') process.exit(3);
  if (end === 'throw') throw new Error('boom');
  if (end === 'reject') void Promise.reject(new Error('boom'));
  if (end === 'kill') process.kill(process.pid, 'SIGKILL');
}, 10);
`,
  );
  const args = IS_DENO ? ['run', '-A', script] : [script];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  const [code, signal] = (await once(child, 'close')) as [number | null, string | null];
  return { stderr, code, signal };
}

for (const end of ['exit', 'throw', 'reject'] as const) {
  test(`a buffered logger loses no line when the process ends by ${end === 'exit' ? 'process.exit()' : end === 'throw' ? 'an uncaught exception' : 'an unhandled rejection'}`, async (t) => {
    const { stderr, code } = await _logThenEnd(t, end);
    assert.notEqual(code, 0);
    const one = stderr.indexOf('"msg":"one"');
    const two = stderr.indexOf('"msg":"two"');
    assert.ok(one !== -1 && two > one, `both lines, in order: ${stderr}`);
    if (end !== 'exit') assert.ok(stderr.indexOf('boom') > two, `the lines come before the error report: ${stderr}`);
  });
}

test('a buffered logger loses the lines of the turn in which the process is killed (SIGKILL): the documented limit', async (t) => {
  const { stderr, signal, code } = await _logThenEnd(t, 'kill');
  assert.ok(signal === 'SIGKILL' || code === 137 || IS_DENO, `killed: ${signal} ${code}`);
  assert.equal(stderr.includes('"msg":"one"'), false, 'written in the turn that was killed');
});

test('formatJson() stamps each line with its own time when times alternate', () => {
  const a = Date.UTC(2026, 0, 1, 0, 0, 0, 1);
  const b = a + 1;
  const stamps = [a, a, b, a, b, b].map((t) => JSON.parse(formatJson(t, 'info', 'm', {}))['time']);
  assert.deepEqual(stamps, [a, a, b, a, b, b].map((t) => new Date(t).toISOString()));
});

// A bounded logger over parsed lines and a clock the test moves.
function _bounded(windowMs?: number) {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger((line) => void lines.push(JSON.parse(line) as Record<string, unknown>));
  const clock = { t: 0 };
  const bounded = boundWarnings(log, { now: () => clock.t, ...(windowMs === undefined ? {} : { windowMs }) });
  return { bounded, lines, clock };
}

const short = (lines: Record<string, unknown>[]) => lines.map(({ time, ...rest }) => rest);

test('boundWarnings() writes at most MAX_ALIKE_PER_SECOND lines of one warning a second and counts the rest into one line at its level', () => {
  const { bounded, lines, clock } = _bounded();
  for (let i = 0; i < 1000; i++) bounded.warn('client locked out', { client: `10.0.0.${i % 256}` });
  assert.equal(lines.length, MAX_ALIKE_PER_SECOND);
  clock.t = 1_000;
  bounded.warn('client locked out', { client: '10.0.9.9' });
  assert.equal(lines.length, MAX_ALIKE_PER_SECOND + 1);
  clock.t = 3_000;
  bounded.flush();
  assert.deepEqual(short(lines).at(-1), {
    level: 'warn',
    msg: LEFT_OUT,
    message: 'client locked out',
    count: 1000 - MAX_ALIKE_PER_SECOND,
    seconds: 3,
  });
});

test('boundWarnings() bounds each message and level on its own: one flooding message leaves the others their lines', () => {
  const { bounded, lines } = _bounded();
  for (let i = 0; i < 100; i++) bounded.error('unexpected error', { id: String(i) });
  bounded.error('reload refused: the config has problems; the old one stays', { problems: 'x' });
  bounded.warn('unexpected error', {});
  bounded.flush();
  assert.deepEqual(
    short(lines).slice(MAX_ALIKE_PER_SECOND),
    [
      { level: 'error', msg: 'reload refused: the config has problems; the old one stays', problems: 'x' },
      { level: 'warn', msg: 'unexpected error' },
      { level: 'error', msg: LEFT_OUT, message: 'unexpected error', count: 100 - MAX_ALIKE_PER_SECOND, seconds: 1 },
    ],
  );
});

test('boundWarnings() passes info lines unbounded, and writes the counts at the end of the window by itself', async () => {
  const { bounded, lines } = _bounded(20);
  for (let i = 0; i < 50; i++) bounded.info('run finished', { i });
  assert.equal(lines.length, 50);
  for (let i = 0; i < MAX_ALIKE_PER_SECOND + 5; i++) bounded.warn('transform output', { line: 'x' });
  const counted = await until('the left-out line', () => lines.find((l) => l['msg'] === LEFT_OUT));
  assert.equal(counted['count'], 5);
  bounded.flush();
  assert.equal(lines.filter((l) => l['msg'] === LEFT_OUT).length, 1);
});

test('isoTime writes a time as ISO 8601, the same text within a millisecond and the right one after it', () => {
  assert.equal(isoTime(1_800_000_000_123), '2027-01-15T08:00:00.123Z');
  assert.equal(isoTime(1_800_000_000_123), new Date(1_800_000_000_123).toISOString());
  assert.equal(isoTime(1_800_000_000_124), '2027-01-15T08:00:00.124Z');
  assert.equal(isoTime(0), '1970-01-01T00:00:00.000Z');
});

test('isoTime writes what toISOString writes: across days both ways, at their edges, fractions, and outside its fast range', () => {
  const day = 86_400_000;
  const d = Date.UTC(2026, 10, 27);
  const times = [
    d,
    d - 1,
    d + 1,
    d + day - 1,
    d + day,
    d - day,
    d + 999,
    d + 1000,
    d + 59_999,
    d + 60_000,
    d + 3_599_999,
    d + 3_600_000,
    d + 0.9,
    d - 0.5,
    Date.UTC(2024, 1, 29, 23, 59, 59, 999),
    Date.UTC(2000, 0, 1),
    1,
    0.5,
    253_402_300_799_999,
    253_402_300_800_000,
    8.64e15,
    -1,
    -day - 1,
    Date.UTC(1969, 11, 31, 23, 59, 59, 999),
  ];
  // A fixed generator: the same sequence every run, jumping between days and years.
  let seed = 42;
  for (let i = 0; i < 20_000; i++) {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    times.push((seed / 2_147_483_648) * 4_102_444_800_000 + (i % 3 === 0 ? 0.25 : 0));
  }
  for (const t of times) assert.equal(isoTime(t), new Date(t).toISOString(), String(t));
});

test('isoTime throws for an invalid time, as toISOString does', () => {
  for (const t of [Number.NaN, Number.POSITIVE_INFINITY, 8.64e15 + 1, -8.64e15 - 1]) {
    assert.throws(() => isoTime(t), RangeError);
  }
});
