import type { OutboxEntry } from '../store/journal/outbox.ts';
import { wakeSession } from './forward-merge.ts';

/**
 * Forward mode's heartbeat windows: how many wakes one upstream session has been sent lately.
 *
 * OpenClaw keeps at most 20 pending system events per session, in memory, and drops the oldest
 * past that while still answering 200; they are read by a heartbeat, and it starts at most 5 of
 * those a minute per agent (its flood guard). So a session can take 20 wakes per heartbeat, and a
 * heartbeat per 60 s / 5 = 12 s: a window opens with the first wake sent to a session and lasts
 * 12 s, and at most `max` wakes go to the session in it. The last of them carries the rest
 * (forward.ts merges them) and asks for a heartbeat now, so the upstream reads the window's wakes
 * before the next window opens. A window that closes without a wake that asked for a heartbeat
 * after its last `next-heartbeat` wakes leaves those unread upstream: the next window opens
 * holding them, so the session's unread wakes never pass `max`.
 */
export const HEARTBEAT_WINDOW_MS = 12_000;

interface _Window {
  start: number;
  sent: number;
  /** Wakes sent since the session's last one that asked for a heartbeat now: unread upstream until one runs. */
  unread: number;
}

/** Each upstream session's current window: when it opened and how many wakes went in it. */
export class WakeWindows {
  max: number;
  readonly #ms: number;
  readonly #open = new Map<string, _Window>();

  constructor(max: number, windowMs = HEARTBEAT_WINDOW_MS) {
    this.max = max;
    this.#ms = windowMs;
  }

  /** How many more wakes `session` may be sent at `now`. */
  room(session: string, now: number): number {
    const open = this.#current(session, now);
    return open === null ? this.max : Math.max(0, this.max - open.sent);
  }

  /** When `session`'s window closes (a full one takes wakes again then). */
  reopensAt(session: string, now: number): number {
    const open = this.#current(session, now);
    return open === null ? now : open.start + this.#ms;
  }

  /**
   * A wake (merged or not) went to `session` at `at`: counted in its window, which opens now if none
   * is open. `now`: it asked for a heartbeat at once (mode "now"), which reads what went before it.
   */
  sent(session: string, at: number, now: boolean): void {
    const open = this.#current(session, at);
    if (open === null) this.#open.set(session, { start: at, sent: 1, unread: now ? 0 : 1 });
    else {
      open.sent++;
      open.unread = now ? 0 : open.unread + 1;
    }
  }

  /**
   * The windows still open at `now`, from the outbox a previous process left: its wakes sent in
   * the last window's time, a merged one counted once, so a restart does not send a session
   * another window's worth at once.
   */
  seed(outbox: readonly OutboxEntry[], now: number): void {
    const posts = new Map<string, { session: string; at: number; now: boolean }>();
    for (const entry of outbox) {
      if (entry.target !== 'wake' || entry.state !== 'sent' || entry.sentAt === undefined) continue;
      const at = Date.parse(entry.sentAt);
      // A merged wake went as mode now; a single one as its body says.
      posts.set(entry.batch ?? entry.id, { session: wakeSession(entry.body), at, now: entry.batch !== undefined || entry.body['mode'] !== 'next-heartbeat' });
    }
    for (const { session, at, now: asked } of [...posts.values()].sort((a, b) => a.at - b.at)) this.sent(session, at, asked);
    for (const session of [...this.#open.keys()]) this.#current(session, now);
  }

  #current(session: string, now: number): _Window | null {
    const open = this.#open.get(session);
    if (open === undefined) return null;
    if (now - open.start < this.#ms) return open;
    if (open.unread === 0) {
      this.#open.delete(session);
      return null;
    }
    // Closed with wakes no heartbeat was asked to read: the next window starts with them, leaving
    // room for at least the one that asks for a heartbeat (a smaller max after a reload, a seed).
    const held = Math.min(open.unread, this.max - 1);
    const next = { start: now, sent: held, unread: held };
    this.#open.set(session, next);
    return next;
  }
}
