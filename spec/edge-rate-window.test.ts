import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RateWindow } from '../lib/edge/rate-window.ts';

// Times are plain numbers (ms): the window takes the time it is asked at, so no clock is faked.

test('RateWindow lets max requests through at once, then names the time the oldest leaves the window', () => {
  const w = new RateWindow(3, 60_000);
  for (const t of [0, 1_000, 2_000]) {
    assert.equal(w.next(t), t);
    w.take(t);
  }
  assert.equal(w.next(3_000), 60_000, 'the fourth waits until the first has left');
  assert.equal(w.next(59_999), 60_000);
  assert.equal(w.next(60_000), 60_000, 'a time exactly a window after the first is out of its window');
});

test('RateWindow slides: the window is any interval of its length, not a calendar slot', () => {
  const w = new RateWindow(2, 10_000);
  w.take(w.next(9_000));
  w.take(w.next(9_500));
  // A fixed window starting at 10 000 would let two more through at 10 001: a sliding one does not.
  assert.equal(w.next(10_001), 19_000);
  w.take(19_000);
  assert.equal(w.next(19_000), 19_500);
});

test('RateWindow in queue mode hands out places ahead, each a window after the max-th before it', () => {
  const w = new RateWindow(2, 10_000);
  const places = [0, 0, 0, 0, 0].map((now) => {
    const at = w.next(now);
    w.take(at);
    return at;
  });
  assert.deepEqual(places, [0, 0, 10_000, 10_000, 20_000]);
  // No interval of 10 s (open at its start) holds more than 2 of them.
  for (const end of places) assert.ok(places.filter((t) => t > end - 10_000 && t <= end).length <= 2);
});

test('RateWindow gives a place back: a request refused after it took one leaves room for the next', () => {
  const w = new RateWindow(1, 60_000);
  const giveBack = w.take(w.next(0));
  assert.equal(w.next(1), 60_000);
  giveBack();
  giveBack(); // twice is once
  assert.equal(w.next(1), 1);
});

test('RateWindow starts from the times it is given, in order, and drops those that left', () => {
  const w = new RateWindow(2, 1_000, [5_500, 4_000, 5_000]);
  assert.deepEqual(w.times(), [4_000, 5_000, 5_500]);
  assert.equal(w.next(5_600), 6_000);
  assert.deepEqual(w.times(), [5_000, 5_500], 'the time a window before was dropped');
});
