// The session events in memory (the main session's, and those a wake addressed to another agent or session):
// the backlog counted, what each session's heartbeat read, consumed events kept within their bounds, which
// wakes coalesce.

import { type ConsumedSession, type SessionEvent, targetOf } from '../../model/records.ts';

/**
 * The session events in memory, oldest first: the main session's, and the wakes addressed to
 * another agent or session (each such target has its own heartbeat turn and its own mark of what
 * it read). The backlog (system events no finished heartbeat turn has read yet) is counted as
 * events come and go, and is never trimmed: it is bounded at the door. Of the consumed events,
 * the newest within both bounds are kept: `retainEvents` of them, `retainEventBytes` of text
 * (UTF-16 code units).
 */
export class SessionEvents {
  readonly #retainEvents: number;
  readonly #retainEventBytes: number;
  #events: SessionEvent[] = [];
  #eventBytes = 0;
  #consumedThrough = 0;
  // What each other target's heartbeat turns read, by targetOf(); a target with no retained event is forgotten at a compaction.
  #consumedBy = new Map<string, ConsumedSession>();
  // The newest system event of each target: the one a wake of the same text coalesces with while it is unread.
  #lastSystem = new Map<string, SessionEvent>();
  #backlogEvents = 0;
  #backlogBytes = 0;

  constructor(retainEvents: number, retainEventBytes: number) {
    this.#retainEvents = retainEvents;
    this.#retainEventBytes = retainEventBytes;
  }

  /** The retained events, oldest first. */
  get list(): readonly SessionEvent[] {
    return this.#events;
  }

  /** The main session's events up to this seq were read by a finished heartbeat turn. */
  get consumedThrough(): number {
    return this.#consumedThrough;
  }

  /** The events of `target` (targetOf()) up to this seq were read by a finished heartbeat turn. */
  consumedFor(target: string): number {
    return target === '' ? this.#consumedThrough : (this.#consumedBy.get(target)?.through ?? 0);
  }

  /** What the heartbeat turns outside the main session read, one entry per target. */
  consumedSessions(): ConsumedSession[] {
    return [...this.#consumedBy.values()];
  }

  /** The newest system event of the event's target while no finished heartbeat turn read it. */
  latestUnread(target: string): SessionEvent | null {
    const event = this.#lastSystem.get(target);
    return event !== undefined && this.#unconsumed(event) ? event : null;
  }

  /** Unconsumed system events and their text in UTF-8 bytes: what the backlog bound counts. */
  backlog(): { events: number; bytes: number } {
    return { events: this.#backlogEvents, bytes: this.#backlogBytes };
  }

  /** Whether a `now` wake is here that no finished heartbeat turn consumed. */
  owed(): boolean {
    return this.#events.some((e) => e.mode === 'now' && this.#unconsumed(e));
  }

  /** Events committed (or replayed from the journal). */
  add(events: readonly SessionEvent[]): void {
    this.#events.push(...events);
    this.#eventBytes += _textBytes(events);
    for (const e of events) {
      if (e.kind === 'system') this.#lastSystem.set(targetOf(e), e);
      if (!this.#unconsumed(e)) continue;
      this.#backlogEvents++;
      this.#backlogBytes += Buffer.byteLength(e.text);
    }
  }

  /** A finished heartbeat turn read the events up to `through`; `recount` is false while the journal is replayed (counted once, by settle()). */
  consume(through: number, recount: boolean): void {
    if (through <= this.#consumedThrough) return;
    this.#consumedThrough = through;
    if (recount) this.#recount();
  }

  /** Heartbeat turns outside the main session read their targets' events up to each `through`. */
  consumeSessions(sessions: readonly ConsumedSession[], recount: boolean): void {
    for (const session of sessions) {
      const target = targetOf(session);
      if (target === '') this.consume(session.through, false);
      else if (session.through > this.consumedFor(target)) this.#consumedBy.set(target, session);
    }
    if (recount) this.#recount();
  }

  /**
   * Drops consumed events past the bounds. Trimmed in batches, at twice the bounds, so a
   * long-running process does not shift the array on every event; only consumed events count, as
   * only they can go.
   */
  trim(): void {
    if (
      this.#events.length - this.#backlogEvents > this.#retainEvents * 2 ||
      this.#eventBytes - this.#backlogBytes > this.#retainEventBytes * 2
    ) this.#keepRetained();
  }

  /** Takes back the events with these seqs (their line never reached the disk). */
  forget(seqs: ReadonlySet<number>): void {
    this.#events = this.#events.filter((e) => !seqs.has(e.seq));
    this.#eventBytes = _textBytes(this.#events);
    this.#lastSystem.clear();
    for (const e of this.#events) if (e.kind === 'system') this.#lastSystem.set(targetOf(e), e);
    this.#recount();
  }

  /**
   * After the journal is replayed: the backlog counted, and what it still held of read events past
   * the bounds (a compaction had not dropped it yet) dropped, as a running store would have.
   */
  settle(): void {
    this.#recount();
    this.#keepRetained();
  }

  /** Every unconsumed event, and of the others the newest within both bounds. */
  retained(): SessionEvent[] {
    let count = 0;
    let bytes = 0;
    let full = false;
    const kept: SessionEvent[] = [];
    for (let i = this.#events.length - 1; i >= 0; i--) {
      const e = this.#events[i]!;
      if (!this.#unconsumed(e)) {
        full ||= count + 1 > this.#retainEvents || bytes + e.text.length > this.#retainEventBytes;
        if (full) continue;
        count++;
        bytes += e.text.length;
      }
      kept.push(e);
    }
    return kept.reverse();
  }

  #keepRetained(): void {
    this.#events = this.retained();
    this.#eventBytes = _textBytes(this.#events);
    // A mark is needed only while an event of its target is kept.
    const kept = new Set(this.#events.map(targetOf));
    for (const target of this.#consumedBy.keys()) if (!kept.has(target)) this.#consumedBy.delete(target);
    for (const target of this.#lastSystem.keys()) if (!kept.has(target)) this.#lastSystem.delete(target);
  }

  // A system event no finished heartbeat turn of its target has read yet.
  #unconsumed(e: SessionEvent): boolean {
    return e.kind === 'system' && e.seq > this.consumedFor(targetOf(e));
  }

  #recount(): void {
    this.#backlogEvents = 0;
    this.#backlogBytes = 0;
    for (const e of this.#events) {
      if (!this.#unconsumed(e)) continue;
      this.#backlogEvents++;
      this.#backlogBytes += Buffer.byteLength(e.text);
    }
  }
}

function _textBytes(events: readonly SessionEvent[]): number {
  return events.reduce((sum, e) => sum + e.text.length, 0);
}

/**
 * What became of a wake: a new event, none because the same text is its target's newest unread
 * event, or held because its hook is paused (store/journal/pauses.ts).
 */
export type EventOutcome = 'queued' | 'coalesced' | 'held';

/**
 * An event a commit adds; `coalesce` (wakes) lets it merge into an equal unread one, and `workHook`
 * (wakes) names the hook whose pause holds it (model/work-hook.ts).
 */
export type NewEvent = Omit<SessionEvent, 'seq' | 'time'> & { coalesce?: boolean; workHook?: string };

/**
 * Decides which of a commit's events are added and which coalesce (as OpenClaw's gateway does,
 * with the newest unread system event of the same session and the same text, the commit's own
 * earlier events included). `matched` holds the existing events some coalesced into.
 */
export function planEvents(
  session: SessionEvents,
  events: readonly NewEvent[],
): { added: NewEvent[]; outcomes: EventOutcome[]; matched: SessionEvent[] } {
  const added: NewEvent[] = [];
  const outcomes: EventOutcome[] = [];
  const matched: SessionEvent[] = [];
  // The commit's own newest system event per target, which an equal wake after it in the commit
  // coalesces into (made only for a commit of several events: most carry one).
  const own = events.length > 1 ? new Map<string, NewEvent>() : null;
  for (const event of events) {
    const target = targetOf(event);
    if (event.coalesce === true && event.kind === 'system') {
      const newest = own?.get(target) ?? session.latestUnread(target);
      if (newest !== null && newest.text === event.text) {
        outcomes.push('coalesced');
        if ('seq' in newest) matched.push(newest as SessionEvent);
        continue;
      }
    }
    if (event.kind === 'system') own?.set(target, event);
    added.push(event);
    outcomes.push('queued');
  }
  return { added, outcomes, matched };
}

/** An added event as the journal and the session keep it: its seq and time, without the commit's `coalesce` flag. */
export function recordedEvent(seq: number, time: string, event: NewEvent): SessionEvent {
  // Field by field, in one order: every event has the same shape, and its line the same key order.
  const e: SessionEvent = { seq, time, kind: event.kind, text: event.text, source: event.source };
  if (event.mode !== undefined) e.mode = event.mode;
  if (event.ack !== undefined) e.ack = event.ack;
  if (event.requestId !== undefined) e.requestId = event.requestId;
  if (event.agentId !== undefined) e.agentId = event.agentId;
  if (event.sessionKey !== undefined) e.sessionKey = event.sessionKey;
  return e;
}
