// The state directory read without opening it for writing: what the CLI's listings show while the
// server, the one writer (store.ts), may be running.

import { join } from 'node:path';
import type { NoticeRecord, Route, RunRecord, SessionEvent } from '../../model/records.ts';
import { JOURNAL_FILE, readJournal } from './lines.ts';
import { applyNotices } from './notices.ts';
import { applyOutbox, type OutboxEntry } from './outbox.ts';
import { applyCallbacks, type CallbackEntry } from './callbacks.ts';
import { checkedLines, type JournalLine, type Rejected, replayRuns } from './records.ts';
import type { RootRecord } from '../../model/replays.ts';
import { rootsOf } from './replays.ts';
import { type DropRecord, Pauses } from './pauses.ts';

/** Reads the main session's events from a state directory without opening it for writing. */
export async function readEvents(dir: string, onRejected?: (rejected: Rejected) => void): Promise<SessionEvent[]> {
  const events: SessionEvent[] = [];
  for (const record of await _read(dir, onRejected)) {
    if (record.t === 'commit' && record.events !== undefined) events.push(...record.events);
  }
  return events;
}

/** Reads forward mode's outbox from a state directory without opening it for writing. */
export async function readOutbox(dir: string, onRejected?: (rejected: Rejected) => void): Promise<OutboxEntry[]> {
  const outbox = new Map<string, OutboxEntry>();
  for (const record of await _read(dir, onRejected)) {
    if (record.t === 'commit') applyOutbox(outbox, record.outbox, record.outboxUpdates);
  }
  return [...outbox.values()];
}

/** Reads the completion callbacks from a state directory without opening it for writing. */
export async function readCallbacks(dir: string, onRejected?: (rejected: Rejected) => void): Promise<CallbackEntry[]> {
  const callbacks = new Map<string, CallbackEntry>();
  for (const record of await _read(dir, onRejected)) {
    if (record.t === 'commit') applyCallbacks(callbacks, record.callbacks, record.callbackUpdates);
  }
  return [...callbacks.values()];
}

/** Reads the runs recorded in a state directory without opening it for writing. */
export async function readRuns(dir: string, onRejected?: (rejected: Rejected) => void): Promise<RunRecord[]> {
  const runs = new Map<string, RunRecord>();
  for (const record of await _read(dir, onRejected)) {
    if (record.t === 'commit') replayRuns(record, (id) => runs.get(id), (id, run) => void runs.set(id, run));
  }
  return [...runs.values()];
}

/** Reads notify mappings' deliveries recorded in a state directory without opening it for writing. */
export async function readNotices(dir: string, onRejected?: (rejected: Rejected) => void): Promise<NoticeRecord[]> {
  const notices = new Map<string, NoticeRecord>();
  for (const record of await _read(dir, onRejected)) {
    if (record.t === 'commit') applyNotices(notices, record.notices, record.noticeUpdates);
  }
  return [...notices.values()];
}

/** Reads the records of replayed and resolved requests (by root) without opening the journal for writing. */
export async function readRoots(
  dir: string,
  onRejected?: (rejected: Rejected) => void,
): Promise<Map<string, RootRecord>> {
  return new Map(rootsOf(await _read(dir, onRejected)).list().map((r) => [r.root, r]));
}

/** Reads the records of requests whose waiting work was dropped (`hooks-ingress drop`), by request id. */
export async function readDrops(dir: string): Promise<Map<string, DropRecord>> {
  const pauses = new Pauses();
  for (const record of await _read(dir)) if (record.t === 'commit' && record.drops !== undefined) pauses.apply(record);
  return new Map(pauses.drops().map((d) => [d.requestId, d]));
}

/** The route of the last successful delivery recorded in a state directory, read without opening it for writing. */
export async function readLastRoute(dir: string): Promise<Route | null> {
  let route: Route | null = null;
  for (const record of await _read(dir)) {
    if (record.t === 'commit' && record.lastRoute !== undefined) route = record.lastRoute;
  }
  return route;
}

async function _read(dir: string, onRejected?: (rejected: Rejected) => void): Promise<JournalLine[]> {
  const { lines, rejected } = checkedLines(await readJournal(join(dir, JOURNAL_FILE)));
  if (onRejected !== undefined) rejected.forEach(onRejected);
  return lines;
}
