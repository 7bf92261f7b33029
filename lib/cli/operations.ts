import type { ControlHandlers } from '../edge/control.ts';
import type { OutboxState } from '../store/outbox.ts';
import type { Store } from '../store/store.ts';

// What the running server answers on the control channel (lib/edge/control.ts), one handler per
// operation. serve builds the parts; a new operation is one more entry in `serverOperations`, and
// a new piece of the status one more field in `ServerStatus` (null when unknown).

/** A running server's status, as `hooks-ingress status --json` prints it. */
export interface ServerStatus {
  pid: number;
  startedAt: string;
  uptimeSeconds: number;
  /** The listening address (http://127.0.0.1:8789), or `null` before the listener is up. */
  url: string | null;
  stateDir: string;
  /** System events not yet read by a heartbeat, and their text in bytes. */
  backlog: { events: number; bytes: number };
  /** Forward mode's outbox by state; `null` when forward mode is off. */
  outbox: Record<OutboxState, number> | null;
  /** The journal file's size in bytes. */
  journalBytes: number;
  /** The request ledger's size, `null` where there is none. */
  ledger: { entries: number; bytes: number } | null;
  /** The verdict of the last reload since the start, `null` before the first. */
  lastReload: ReloadVerdict | null;
}

/** What a reload came to: applied (with what changed) or refused (with the reasons). */
export type ReloadVerdict =
  | { outcome: 'applied'; at: string; file: string | null; changes: ReloadChanges }
  | { outcome: 'refused'; at: string; file: string | null; problems: string[] };

/** A reload's changes at the level an operator thinks in: names added and removed. */
export interface ReloadChanges {
  hooks: { added: string[]; removed: string[] };
  mappings: { added: string[]; removed: string[] };
  secrets: { added: string[]; removed: string[] };
}

/** What the operations read and act on, handed in by serve. */
export interface OperationParts {
  pid: number;
  startedAt: number;
  now: () => number;
  stateDir: string;
  url: () => string | null;
  store: Pick<Store, 'backlog' | 'outboxCounts' | 'stats'>;
  forward: boolean;
  lastReload: () => ReloadVerdict | null;
}

/** The control channel's operations of a running server. */
export function serverOperations(parts: OperationParts): ControlHandlers {
  return {
    status: () => Promise.resolve(serverStatus(parts)),
  };
}

/** The status of the server `parts` describe, now. */
export function serverStatus(parts: OperationParts): ServerStatus {
  const now = parts.now();
  return {
    pid: parts.pid,
    startedAt: new Date(parts.startedAt).toISOString(),
    uptimeSeconds: Math.max(0, Math.floor((now - parts.startedAt) / 1000)),
    url: parts.url(),
    stateDir: parts.stateDir,
    backlog: parts.store.backlog(),
    outbox: parts.forward ? parts.store.outboxCounts() : null,
    journalBytes: parts.store.stats().journalBytes,
    ledger: null,
    lastReload: parts.lastReload(),
  };
}
