import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../lib/log.ts';

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
