import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dayAt, dayStart, isTimeZone, nextDate } from '../lib/day.ts';

const H = 3_600_000;
const at = (iso: string) => Date.parse(iso);

test('dayAt() in UTC: the date, its midnight and the next one', () => {
  const day = dayAt(at('2026-11-27T16:30:00Z'), 'UTC');
  assert.deepEqual(day, { day: '2026-11-27', start: at('2026-11-27T00:00:00Z'), end: at('2026-11-28T00:00:00Z') });
  // The last millisecond is still the day; the next one is the next day.
  assert.equal(dayAt(at('2026-11-27T23:59:59.999Z'), 'UTC').day, '2026-11-27');
  assert.equal(dayAt(at('2026-11-28T00:00:00Z'), 'UTC').day, '2026-11-28');
});

test('dayAt() in a zone ahead of UTC: 23:30 UTC is already the next day in Berlin', () => {
  const day = dayAt(at('2026-11-27T23:30:00Z'), 'Europe/Berlin');
  assert.deepEqual(day, { day: '2026-11-28', start: at('2026-11-27T23:00:00Z'), end: at('2026-11-28T23:00:00Z') });
});

test('dayAt() across the spring DST change in Berlin: the day has 23 hours', () => {
  const day = dayAt(at('2026-03-29T12:00:00Z'), 'Europe/Berlin');
  assert.equal(day.day, '2026-03-29');
  assert.equal(day.start, at('2026-03-28T23:00:00Z'), 'midnight at +01:00');
  assert.equal(day.end, at('2026-03-29T22:00:00Z'), 'the next midnight at +02:00');
  assert.equal(day.end - day.start, 23 * H);
});

test('dayAt() across the autumn DST change in New York: the day has 25 hours', () => {
  const day = dayAt(at('2026-11-01T12:00:00Z'), 'America/New_York');
  assert.equal(day.day, '2026-11-01');
  assert.equal(day.start, at('2026-11-01T04:00:00Z'), 'midnight at -04:00');
  assert.equal(day.end, at('2026-11-02T05:00:00Z'), 'the next midnight at -05:00');
  assert.equal(day.end - day.start, 25 * H);
});

test('dayStart() where the clocks skip midnight (Santiago, spring): the day begins at the change, 01:00 local', () => {
  // 2026-09-06: at 00:00 (-04:00) the clocks go to 01:00 (-03:00), i.e. 04:00 UTC.
  assert.equal(dayStart('2026-09-06', 'America/Santiago'), at('2026-09-06T04:00:00Z'));
  const day = dayAt(at('2026-09-06T12:00:00Z'), 'America/Santiago');
  assert.equal(day.end - day.start, 23 * H);
});

test('dayAt() where the clocks go back at midnight (Santiago, autumn): the day before has 25 hours', () => {
  // 2026-04-04 at 24:00 (-03:00, 03:00 UTC) the clocks go back to 23:00 (-04:00): the 5th begins an hour later.
  const day = dayAt(at('2026-04-05T03:30:00Z'), 'America/Santiago');
  assert.equal(day.day, '2026-04-04', 'the hour shown again is still the 4th');
  assert.equal(day.start, at('2026-04-04T03:00:00Z'));
  assert.equal(day.end, at('2026-04-05T04:00:00Z'));
  assert.equal(day.end - day.start, 25 * H);
});

test('dayAt() in zones with half-hour offsets and DST (Kolkata, Lord Howe)', () => {
  assert.deepEqual(dayAt(at('2026-06-01T20:00:00Z'), 'Asia/Kolkata'), {
    day: '2026-06-02',
    start: at('2026-06-01T18:30:00Z'),
    end: at('2026-06-02T18:30:00Z'),
  });
  // Lord Howe moves by 30 minutes: 2026-04-05 at 02:00 (+11) back to 01:30 (+10:30).
  const day = dayAt(at('2026-04-05T06:00:00Z'), 'Australia/Lord_Howe');
  assert.equal(day.end - day.start, 24.5 * H);
});

test('dayAt() asked out of order gives each instant its own day', () => {
  const zone = 'Europe/Berlin';
  assert.equal(dayAt(at('2026-05-02T10:00:00Z'), zone).day, '2026-05-02');
  assert.equal(dayAt(at('2026-05-01T10:00:00Z'), zone).day, '2026-05-01');
  assert.equal(dayAt(at('2026-05-02T21:59:59Z'), zone).day, '2026-05-02');
  assert.equal(dayAt(at('2026-05-02T22:00:00Z'), zone).day, '2026-05-03');
});

test('nextDate() by the calendar: month and year ends, a leap day', () => {
  assert.equal(nextDate('2026-11-30'), '2026-12-01');
  assert.equal(nextDate('2026-12-31'), '2027-01-01');
  assert.equal(nextDate('2028-02-28'), '2028-02-29');
});

test('isTimeZone() knows IANA names and UTC, and refuses the rest', () => {
  assert.equal(isTimeZone('UTC'), true);
  assert.equal(isTimeZone('Europe/Berlin'), true);
  assert.equal(isTimeZone('Mars/Olympus_Mons'), false);
  assert.equal(isTimeZone(''), false);
  assert.throws(() => dayAt(0, 'Mars/Olympus_Mons'), RangeError);
});
