import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Heartbeat, realSchedule } from '../lib/runtime/heartbeat.ts';
import type { HeartbeatOptions, Schedule } from '../lib/runtime/heartbeat.ts';
import type { SessionEvent } from '../lib/model/records.ts';

interface _Timer {
  run: () => void;
  ms: number;
  state: 'waiting' | 'fired' | 'cancelled';
}

// A schedule that only records what was asked; the test fires timers itself.
function fakeSchedule(): { schedule: Schedule; waiting: () => _Timer[]; fire: (timer: _Timer | undefined) => void } {
  const timers: _Timer[] = [];
  const schedule: Schedule = (run, ms) => {
    const timer: _Timer = { run, ms, state: 'waiting' };
    timers.push(timer);
    return () => {
      if (timer.state === 'waiting') timer.state = 'cancelled';
    };
  };
  const waiting = () => timers.filter((t) => t.state === 'waiting');
  const fire = (timer: _Timer | undefined) => {
    assert.ok(timer !== undefined && timer.state === 'waiting', 'a waiting timer');
    timer.state = 'fired';
    timer.run();
  };
  return { schedule, waiting, fire };
}

// The part of the store a heartbeat uses: it records events in memory, or fails with `error`.
function fakeStore(error?: Error): HeartbeatOptions['store'] & { events: SessionEvent[] } {
  const events: SessionEvent[] = [];
  return {
    events,
    addEvent: async (event) => {
      if (error !== undefined) throw error;
      const stored = { seq: events.length + 1, time: '2025-01-01T00:00:00.000Z', ...event };
      events.push(stored);
      return stored;
    },
  };
}

// A heartbeat over a fresh fake store and fake schedule.
function fakeHeartbeat(
  options: Omit<HeartbeatOptions, 'store' | 'schedule'>,
): { store: ReturnType<typeof fakeStore>; clock: ReturnType<typeof fakeSchedule>; heartbeat: Heartbeat } {
  const store = fakeStore();
  const clock = fakeSchedule();
  return { store, clock, heartbeat: new Heartbeat({ store, schedule: clock.schedule, ...options }) };
}

test('heartbeat.request() coalesces requests within the window into one heartbeat listing reasons with counts', async () => {
  const { store, clock, heartbeat } = fakeHeartbeat({ everyMs: 0, coalesceMs: 100 });
  heartbeat.request('wake');
  heartbeat.request('hook:gmail');
  heartbeat.request('wake');
  heartbeat.request('wake');
  assert.deepEqual(clock.waiting().map((t) => t.ms), [100]);
  clock.fire(clock.waiting()[0]);
  await heartbeat.stop();
  assert.deepEqual(store.events, [{
    seq: 1,
    time: '2025-01-01T00:00:00.000Z',
    kind: 'heartbeat',
    text: 'Heartbeat requested (wake x3, hook:gmail)',
    source: 'request',
  }]);

  // A request after the flush opens a new window with fresh counts.
  heartbeat.request('wake');
  clock.fire(clock.waiting()[0]);
  await heartbeat.stop();
  assert.deepEqual(store.events.map((e) => e.text), [
    'Heartbeat requested (wake x3, hook:gmail)',
    'Heartbeat requested (wake)',
  ]);
});

test('heartbeat.request() waits 250 ms by default', async () => {
  const { clock, heartbeat } = fakeHeartbeat({ everyMs: 0 });
  heartbeat.request('wake');
  assert.deepEqual(clock.waiting().map((t) => t.ms), [250]);
  await heartbeat.stop();
});

test('heartbeat.start() records a schedule heartbeat every everyMs', async () => {
  const { store, clock, heartbeat } = fakeHeartbeat({ everyMs: 1_800_000 });
  heartbeat.start();
  heartbeat.start();
  assert.deepEqual(clock.waiting().map((t) => t.ms), [1_800_000], 'a second start() adds no schedule');
  for (let i = 0; i < 3; i++) {
    clock.fire(clock.waiting()[0]);
    assert.deepEqual(clock.waiting().map((t) => t.ms), [1_800_000], 'the next beat is scheduled');
  }
  await heartbeat.stop();
  assert.deepEqual(
    store.events.map((e) => [e.kind, e.source, e.text]),
    Array.from({ length: 3 }, () => ['heartbeat', 'schedule', 'Heartbeat (schedule)']),
  );
});

test('heartbeat.start() schedules nothing when everyMs is 0', async () => {
  const { clock, heartbeat } = fakeHeartbeat({ everyMs: 0 });
  heartbeat.start();
  assert.deepEqual(clock.waiting(), []);
  await heartbeat.stop();
});

test('heartbeat.stop() records a waiting request and cancels the schedule', async () => {
  const { store, clock, heartbeat } = fakeHeartbeat({ everyMs: 60_000 });
  heartbeat.start();
  heartbeat.request('wake');
  assert.equal(clock.waiting().length, 2);
  await heartbeat.stop();
  assert.deepEqual(clock.waiting(), []);
  assert.deepEqual(store.events.map((e) => [e.source, e.text]), [['request', 'Heartbeat requested (wake)']]);
  await heartbeat.stop();
  assert.equal(store.events.length, 1, 'a second stop() records nothing');
});

test('heartbeat.stop() waits for heartbeats still being written', async () => {
  let release = (): void => {};
  const events: string[] = [];
  const store: HeartbeatOptions['store'] = {
    addEvent: (event) =>
      new Promise((resolve) => {
        release = () => {
          events.push(event.text);
          resolve({ seq: 1, time: '2025-01-01T00:00:00.000Z', ...event });
        };
      }),
  };
  const clock = fakeSchedule();
  const heartbeat = new Heartbeat({ store, everyMs: 1_000, schedule: clock.schedule });
  heartbeat.start();
  clock.fire(clock.waiting()[0]);
  let stopped = false;
  const stopping = heartbeat.stop().then(() => {
    stopped = true;
  });
  await Promise.resolve();
  assert.equal(stopped, false);
  release();
  await stopping;
  assert.deepEqual(events, ['Heartbeat (schedule)']);
});

test('heartbeat onBeat is called with each recorded event', async () => {
  const beats: SessionEvent[] = [];
  const { store, clock, heartbeat } = fakeHeartbeat({ everyMs: 1_000, onBeat: (event) => beats.push(event) });
  heartbeat.start();
  clock.fire(clock.waiting()[0]);
  heartbeat.request('wake');
  await heartbeat.stop();
  assert.deepEqual(beats, store.events);
  assert.deepEqual(beats.map((e) => e.source), ['schedule', 'request']);
});

test('heartbeat onError is called when the store rejects', async () => {
  const failure = new Error('disk full');
  const clock = fakeSchedule();
  const errors: unknown[] = [];
  const beats: SessionEvent[] = [];
  const heartbeat = new Heartbeat({
    store: fakeStore(failure),
    everyMs: 1_000,
    schedule: clock.schedule,
    onBeat: (event) => beats.push(event),
    onError: (error) => errors.push(error),
  });
  heartbeat.start();
  clock.fire(clock.waiting()[0]);
  heartbeat.request('wake');
  await heartbeat.stop();
  assert.deepEqual(errors, [failure, failure]);
  assert.deepEqual(beats, []);
});

test('heartbeat without onBeat or onError still records and survives a failing store', async () => {
  const clock = fakeSchedule();
  const heartbeat = new Heartbeat({ store: fakeStore(new Error('disk full')), everyMs: 0, schedule: clock.schedule });
  heartbeat.request('wake');
  await heartbeat.stop();
  const store = fakeStore();
  const quiet = new Heartbeat({ store, everyMs: 0, schedule: clock.schedule });
  quiet.request('wake');
  await quiet.stop();
  assert.equal(store.events.length, 1);
});

test('Heartbeat uses the real timers by default and stop() clears them', async () => {
  const store = fakeStore();
  const heartbeat = new Heartbeat({ store, everyMs: 3_600_000 });
  heartbeat.start();
  heartbeat.request('wake');
  await heartbeat.stop();
  assert.deepEqual(store.events.map((e) => e.text), ['Heartbeat requested (wake)']);
});

test('realSchedule() runs the callback after the delay unless cancelled', async () => {
  let cancelledRan = false;
  const cancel = realSchedule(() => {
    cancelledRan = true;
  }, 1);
  cancel();
  // realSchedule's timers are unref'd; this one keeps the event loop (Deno's too) alive meanwhile.
  const keepAlive = setInterval(() => {}, 1_000);
  try {
    await new Promise<void>((resolve) => {
      realSchedule(resolve, 5);
    });
  } finally {
    clearInterval(keepAlive);
  }
  assert.equal(cancelledRan, false);
});
