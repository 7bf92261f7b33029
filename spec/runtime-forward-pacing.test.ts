import assert from 'node:assert/strict';
import { test } from 'node:test';
import { unframe } from './_fake-openclaw.ts';
import { AUTH, gateway, start } from './_forwarder.ts';
import { post } from './_http.ts';
import { until } from './_until.ts';

// Forward mode's pacing of wakes (lib/runtime/forward-window.ts, forward-merge.ts) against the fake
// gateway on its own clock: the spec moves the clock a heartbeat window at a time and runs the
// heartbeats the gateway would run, and nothing the upstream accepted may be dropped from its queue.

// The texts a heartbeat read, merged wakes unframed.
const read = (texts: readonly string[]) =>
  texts.flatMap((text) => (/^\d+ wake events/.test(text) ? unframe(text) : [text]));

test(
  'forward mode: 200 wakes at line rate all reach a heartbeat: at most 20 go to the session per window, the last merging the rest oldest first',
  { timeout: 120_000 },
  async (t) => {
    let skew = 0;
    const now = () => Date.now() + skew;
    const fake = await gateway(t, 0, { now });
    const h = await start(t, fake.port, { now });
    const texts = Array.from({ length: 200 }, (_, i) => `build ${i + 1} finished`);
    for (const text of texts) {
      assert.equal(
        (await post(h.url, '/hooks/wake', { headers: AUTH, body: { text } })).status,
        200,
      );
    }
    assert.deepEqual(fake.dropped, [], "the upstream's queue never held more than 20 of them");
    // Each window: the upstream's heartbeat reads what is pending, then a window's time passes.
    let windows = 0;
    await until('every wake sent', async () => {
      await until(
        'the forwarder to wait for a window or finish',
        () => (h.store.outbox().every((e) => e.state === 'sent') || fake.received.length >= 20 * (windows + 1)
          ? true
          : undefined),
      );
      assert.deepEqual(fake.dropped, [], `nothing dropped in window ${windows + 1}`);
      fake.runHeartbeats();
      if (h.store.outbox().every((e) => e.state === 'sent')) return true;
      windows++;
      skew += 12_000;
      h.forwarder.kick();
      return false;
    });
    assert.deepEqual(fake.turns.flatMap((turn) => read(turn.texts)), texts, 'every wake read once, in order');
    assert.ok(
      fake.received.length < 200 && fake.received.some((r) => /^\d+ wake events/.test(String(r.body['text']))),
      'the rest went merged',
    );
    assert.ok(fake.received.every((r) => r.body['agentId'] === undefined));
    const merged = h.store.outbox().filter((e) => e.batch !== undefined);
    assert.ok(
      merged.length > 0 && merged.every((e) => h.store.outbox().some((head) => head.id === e.batch)),
      'merged entries name the entry whose wake carried them',
    );
  },
);

test(
  'forward mode: next-heartbeat wakes of a window that never filled still count when the next window opens, so the upstream never holds more than 20 unread',
  { timeout: 120_000 },
  async (t) => {
    let skew = 0;
    const now = () => Date.now() + skew;
    const fake = await gateway(t, 0, { now });
    const h = await start(t, fake.port, { now });
    const texts = Array.from({ length: 25 }, (_, i) => `nightly ${i + 1} finished`);
    // Five wakes that ask for no heartbeat: the window takes them and never fills, so none goes as "now".
    for (const text of texts.slice(0, 5)) {
      assert.equal(
        (await post(h.url, '/hooks/wake', { headers: AUTH, body: { text, mode: 'next-heartbeat' } })).status,
        200,
      );
    }
    await until('the five sent', () => h.store.outbox().every((e) => e.state === 'sent'));
    assert.equal(fake.runHeartbeats(), 0, 'no heartbeat was asked for: the five stay unread upstream');
    // The window closes; twenty more come at line rate.
    skew += 12_000;
    for (const text of texts.slice(5)) {
      assert.equal(
        (await post(h.url, '/hooks/wake', { headers: AUTH, body: { text, mode: 'next-heartbeat' } })).status,
        200,
      );
    }
    await until(
      'the window full or everything sent',
      () => (h.store.outbox().every((e) => e.state === 'sent') || fake.received.length >= 20 ? true : undefined),
    );
    assert.deepEqual(fake.dropped, [], 'the upstream never held more than 20 unread');
    await until('every wake sent', async () => {
      fake.runHeartbeats();
      if (h.store.outbox().every((e) => e.state === 'sent')) return true;
      skew += 12_000;
      h.forwarder.kick();
      return false;
    });
    // The periodic heartbeat reads what asked for none.
    skew += 60_000;
    fake.runHeartbeats(true);
    assert.deepEqual(fake.dropped, []);
    assert.deepEqual(fake.turns.flatMap((turn) => read(turn.texts)), texts, 'every wake read once, in order');
  },
);

test(
  "forward mode: wakes to two sessions of one agent, a window's worth every window for a minute, ask for at most 5 heartbeats a minute and none is dropped",
  { timeout: 120_000 },
  async (t) => {
    let skew = 0;
    const now = () => Date.now() + skew;
    const fake = await gateway(t, 0, { now });
    const h = await start(t, fake.port, {
      now,
      hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:'] },
    });
    const sent = { 'hook:x': [] as string[], 'hook:y': [] as string[] };
    // The forwarder sent what it may and waits for a window (or has sent everything); then the
    // gateway's heartbeats run and a window's time passes.
    const window = async () => {
      await until('the forwarder to wait for a window or finish', () => {
        const due = h.forwarder.dueAt();
        return due === null || due > now();
      });
      fake.runHeartbeats();
      skew += 12_000;
      h.forwarder.kick();
    };
    for (let round = 1; round <= 6; round++) {
      for (const sessionKey of ['hook:x', 'hook:y'] as const) {
        for (let i = 1; i <= 5; i++) {
          const text = `round ${round} ${sessionKey} wake ${i}`;
          sent[sessionKey].push(text);
          assert.equal((await post(h.url, '/hooks/wake', { headers: AUTH, body: { text, sessionKey } })).status, 200);
        }
      }
      await window();
    }
    while (h.forwarder.dueAt() !== null) await window();
    fake.runHeartbeats();
    assert.deepEqual(fake.deferred, [], 'no heartbeat waited for the flood guard (5 a minute per agent)');
    assert.deepEqual(fake.dropped, [], 'no session held more than 20 pending');
    for (const [sessionKey, texts] of Object.entries(sent)) {
      const turns = fake.turns.filter((turn) => turn.session === `agent:main:${sessionKey}`);
      assert.deepEqual(
        turns.flatMap((turn) => read(turn.texts)),
        texts,
        `${sessionKey}: every wake read once, in order, in its own session`,
      );
    }
  },
);
