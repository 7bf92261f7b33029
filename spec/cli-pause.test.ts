import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDuration } from '../lib/cli/pause.ts';
import { pausedLine, waitedFor } from '../lib/cli/pause-text.ts';
import { main } from '../lib/cli/main.ts';
import { captureIo } from './_io.ts';

test('parseDuration() takes seconds or parts (30s, 10m, 2h, 1d, 1h30m) and nothing else', () => {
  const cases: [string, number | null][] = [
    ['90', 90],
    ['30s', 30],
    ['10m', 600],
    ['2h', 7200],
    ['1d', 86_400],
    ['1h30m', 5400],
    ['0', null],
    ['0s', null],
    ['', null],
    ['1.5h', null],
    ['-1', null],
    ['1 h', null],
    ['h', null],
    ['1w', null],
  ];
  for (const [text, seconds] of cases) assert.equal(parseDuration(text), seconds, text);
});

test('pausedLine() says since when, until when, what the hook holds and how long its oldest has waited', () => {
  const now = Date.parse('2026-01-01T01:00:00Z');
  assert.equal(
    pausedLine({
      hook: 'ci',
      since: '2026-01-01T00:00:00Z',
      runs: 1,
      wakes: 2,
      outbox: 0,
      oldest: '2026-01-01T00:55:50Z',
    }, now),
    'ci: paused since 2026-01-01T00:00:00Z; 1 run, 2 wakes, 0 outbox entries waiting, oldest waiting 4m 10s',
  );
  assert.equal(
    pausedLine({ hook: 'x', since: 's', until: 'u', runs: 0, wakes: 0, outbox: 1 }, now),
    'x: paused since s until u; 0 runs, 0 wakes, 1 outbox entry waiting',
  );
  assert.equal(waitedFor('2025-12-31T22:58:00Z', now), '2h 2m');
  assert.equal(waitedFor('2026-01-01T00:59:59Z', now), '1s');
});

test('pause, resume and drop refuse what they cannot ask before contacting any server', async () => {
  const cases: [string[], RegExp][] = [
    [['pause', 'ci', '--for', 'soon'], /--for must be a duration/],
    [['pause', 'ci', '--for', '367d'], /at most 366d/],
    [['pause', 'a', 'b'], /name one hook/],
    [['resume'], /name one hook, or --all/],
    [['resume', 'ci', '--all'], /name one hook, or --all/],
    [['drop'], /name one paused hook/],
  ];
  for (const [argv, said] of cases) {
    const { io, out } = captureIo({});
    assert.equal(await main([...argv, '--state-dir', '/nonexistent/pause-spec'], io), 2, argv.join(' '));
    assert.match(out.stderr, said);
  }
});
