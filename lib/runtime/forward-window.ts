// Forward mode's heartbeat windows: how many wakes one upstream session has been sent lately, so that none
// goes past what its gateway keeps.

import type { OutboxEntry } from '../store/journal/outbox.ts';

/**
 * Forward mode's heartbeat windows: how many wakes one upstream agent's sessions have been sent
 * lately, and which of them its heartbeat reads.
 *
 * OpenClaw keeps at most 20 pending system events per session, in memory, and drops the oldest
 * past that while still answering 200. A heartbeat reads one session's events (the session a wake
 * with mode "now" asked for), and at most 5 heartbeats start a minute per agent, whichever session
 * they read (its flood guard defers the rest). So an agent can be read once per 60 s / 5 = 12 s:
 * a window is the agent's, opens with the first wake sent to any of its sessions and lasts 12 s;
 * at most `max` wakes go to the agent in it, and at most `max` unread ones to any one session.
 * Wakes that ask for a heartbeat go to one session per window (its reader); another session's
 * wait for the next window. A session's last wake of a window carries the rest (forward.ts merges
 * them) and asks for a heartbeat, so only the reader can take it. A session's wakes sent after its
 * last one that asked for a heartbeat stay unread upstream: the next window opens holding them.
 */
export const HEARTBEAT_WINDOW_MS = 12_000;

/** Where a wake goes upstream: the agent whose heartbeat reads it, and its session (the agent's too). */
export interface WakeTarget {
  agent: string;
  session: string;
}

/** The agent key of a wake that names none when the config does not say which agent the upstream defaults to. */
export const UPSTREAM_DEFAULT_AGENT = '';

/**
 * The upstream agent and session a wake body goes to, without case. A body without `agentId` goes
 * to the upstream's default agent: `defaultAgent` (hooks.forward.agents' first) when the config
 * names it, else one key that stands for it. The gateway re-scopes `agent:<id>:<rest>` to the
 * target agent, so the session is `<rest>`; no key is the agent's main session.
 */
export function wakeTarget(body: Readonly<Record<string, unknown>>, defaultAgent: string | null): WakeTarget {
  const named = typeof body['agentId'] === 'string' ? body['agentId'].trim().toLowerCase() : '';
  const agent = named !== '' ? named : (defaultAgent?.trim().toLowerCase() ?? UPSTREAM_DEFAULT_AGENT);
  const key = typeof body['sessionKey'] === 'string' ? body['sessionKey'].trim().toLowerCase() : '';
  return { agent, session: `${agent}\u0000${key.replace(/^agent:[^:]*:/, '')}` };
}

/** Whether a wake may go now: as it is, as the last its session's window takes (merged, asking for a heartbeat), or not before the agent's next window. */
export type WakeAdmission = 'go' | 'last' | 'wait';

interface _Session {
  /** Wakes this window holds for the session: sent in it, and carried unread from the last. */
  count: number;
  /** Wakes sent since the session's last one that asked for a heartbeat: unread upstream until one runs. */
  unread: number;
}

interface _Window {
  start: number;
  /** Wakes sent to the agent in this window. */
  sent: number;
  /** The session whose heartbeat this window asked for (the agent's one heartbeat per window). */
  reader: string | null;
  sessions: Map<string, _Session>;
}

/** Each upstream agent's current window: when it opened, what went to its sessions, and which one it reads. */
export class WakeWindows {
  max: number;
  readonly #ms: number;
  readonly #open = new Map<string, _Window>();

  constructor(max: number, windowMs = HEARTBEAT_WINDOW_MS) {
    this.max = max;
    this.#ms = windowMs;
  }

  /** Whether a wake to `target` (asking for a heartbeat when `asks`) may go at `now`. */
  admit(target: WakeTarget, asks: boolean, now: number): WakeAdmission {
    const open = this.#current(target.agent, now);
    const reads = open === null || open.reader === null || open.reader === target.session;
    const held = open?.sessions.get(target.session)?.count ?? 0;
    const left = Math.min(this.max - (open?.sent ?? 0), this.max - held);
    if (left <= 0 || (asks && !reads)) return 'wait';
    if (left === 1) return reads ? 'last' : 'wait';
    return 'go';
  }

  /** When `agent`'s window closes (a wake that waits goes then, in the next one). */
  reopensAt(agent: string, now: number): number {
    const open = this.#current(agent, now);
    return open === null ? now : open.start + this.#ms;
  }

  /**
   * A wake (merged or not) went to `target` at `at`: counted in its agent's window, which opens
   * now if none is open. `asks`: it asked for a heartbeat at once (mode "now"), which reads what
   * went to its session before it; the first such session is the window's reader.
   */
  sent(target: WakeTarget, at: number, asks: boolean): void {
    let open = this.#current(target.agent, at);
    if (open === null) {
      open = { start: at, sent: 0, reader: null, sessions: new Map() };
      this.#open.set(target.agent, open);
    }
    const session = open.sessions.get(target.session) ?? { count: 0, unread: 0 };
    open.sessions.set(target.session, session);
    open.sent++;
    session.count++;
    // A second session's heartbeat in one window may be deferred by the flood guard: not counted as read.
    if (asks && (open.reader ?? target.session) === target.session) {
      open.reader = target.session;
      session.unread = 0;
    } else session.unread++;
  }

  /**
   * The windows still open at `now`, from the outbox a previous process left: its wakes sent in
   * the last window's time, a merged one counted once, so a restart does not send an agent
   * another window's worth at once. `targetOf` says where a body went.
   */
  seed(
    outbox: readonly OutboxEntry[],
    now: number,
    targetOf: (body: Readonly<Record<string, unknown>>) => WakeTarget,
  ): void {
    const posts = new Map<string, { target: WakeTarget; at: number; asks: boolean }>();
    for (const entry of outbox) {
      if (entry.target !== 'wake' || entry.state !== 'sent' || entry.sentAt === undefined) continue;
      // A merged wake went as mode now; a single one as its body says.
      posts.set(entry.batch ?? entry.id, {
        target: targetOf(entry.body),
        at: Date.parse(entry.sentAt),
        asks: entry.batch !== undefined || entry.body['mode'] !== 'next-heartbeat',
      });
    }
    for (const { target, at, asks } of [...posts.values()].sort((a, b) => a.at - b.at)) this.sent(target, at, asks);
    for (const agent of [...this.#open.keys()]) this.#current(agent, now);
  }

  #current(agent: string, now: number): _Window | null {
    const open = this.#open.get(agent);
    if (open === undefined) return null;
    if (now - open.start < this.#ms) return open;
    // Closed. Wakes no heartbeat was asked to read are still pending upstream: the next window
    // opens holding them, leaving each session room for the one that asks (a smaller max after a
    // reload, a seed).
    const held = new Map<string, _Session>();
    for (const [key, session] of open.sessions) {
      const unread = Math.min(session.unread, this.max - 1);
      if (unread > 0) held.set(key, { count: unread, unread });
    }
    if (held.size === 0) {
      this.#open.delete(agent);
      return null;
    }
    const next = { start: now, sent: 0, reader: null, sessions: held };
    this.#open.set(agent, next);
    return next;
  }
}
