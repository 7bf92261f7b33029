// What the journal holds (its lines, over the records of lib/model/records.ts), and the checks that
// every line read back from disk passes before the store believes it: a line is input like any
// request body (a hand edit, a disk that returned garbage that happens to parse, a file from
// another program).

import { CHANNELS, SESSION_MODES, THINKING_LEVELS, WAKE_MODES } from '../../model/actions.ts';
import {
  array,
  boolean,
  check,
  formatIssue,
  literal,
  number,
  object,
  optional,
  type Report,
  type Schema,
  string,
  typeName,
} from '../../schema.ts';
import type {
  ConsumedSession,
  IdempotencyWrite,
  NoticeRecord,
  NoticeUpdate,
  Route,
  RunRecord,
  RunUpdate,
  SessionEvent,
} from '../../model/records.ts';
import { ROOT_STATES, type RootChange } from '../../model/replays.ts';
import { COALESCE_MESSAGES, type RunJoin } from '../../model/coalesce.ts';
import { joinRun } from './coalesce-windows.ts';
import type { OutboxEntry, OutboxUpdate } from './outbox.ts';
import type { CallbackEntry, CallbackUpdate } from './callbacks.ts';
import type { BudgetCharge } from './budgets.ts';
import type { PauseFields } from './pauses.ts';
import type { JournalContents } from './lines.ts';
import { updated } from '../../object.ts';

/** One journal line is one commit; `idem` and `taken` lines appear only in a compacted journal. */
export type JournalLine =
  | {
    t: 'commit';
    seq: number;
    time: string;
    events?: SessionEvent[];
    runs?: RunRecord[];
    runUpdates?: RunUpdate[];
    /** Requests that joined a pending run's coalescing window. */
    joins?: RunJoin[];
    consumedThrough?: number;
    /** Other sessions' heartbeat turns: what each read (the main session's is `consumedThrough`). */
    consumedSessions?: ConsumedSession[];
    lastRoute?: Route;
    /** Forward mode: actions for the upstream gateway, and changes to earlier ones. */
    outbox?: OutboxEntry[];
    outboxUpdates?: OutboxUpdate[];
    /** Notify mappings' deliveries, and their outcomes. */
    notices?: NoticeRecord[];
    noticeUpdates?: NoticeUpdate[];
    idem?: IdemRecord;
    /** Replayed or resolved requests: a replay's outcome rides on the line of its effects. */
    roots?: RootChange[];
    /** Completion callbacks of runs that settled in this line, and changes to earlier ones. */
    callbacks?: CallbackEntry[];
    callbackUpdates?: CallbackUpdate[];
    /** Runs charged to hooks' daily budgets, and a day's notice posted (budgets.ts). */
    budget?: BudgetCharge[];
  } & PauseFields
  | ({ t: 'idem'; seq: number } & IdemRecord)
  | ({ t: 'taken'; seq: number } & TakenRecord);

/** An idempotency key with its first answer, as stored. */
export interface IdemRecord extends Omit<IdempotencyWrite, 'ttlMs' | 'keepMs'> {
  /** Until when (epoch ms) the first answer is given again. */
  expiresAt: number;
  /** Until when the key stays taken once its answer is no longer kept, when later than `expiresAt`. */
  takenUntil?: number;
}

/** A key that stays taken after its answer is no longer kept: who took it, and until when. */
export interface TakenRecord {
  scope: string;
  key: string;
  takenUntil: number;
  /** The request that took it. */
  requestId?: string;
}

/**
 * The largest sequence number the store accepts: far beyond any real count (a million events a
 * second for a century), and small enough that adding one stays exact.
 */
export const MAX_SEQ = 2 ** 52;

const seq: Schema<number> = number({ integer: true, min: 0, max: MAX_SEQ });
const text = string();
const runStatus = literal('pending', 'running', 'ok', 'error', 'timeout', 'dropped');
const delivery: Schema<unknown> = (value, at, report) => {
  const status = (value as { status?: unknown } | null)?.status;
  if (status === 'delivered' || status === 'skipped' || status === 'failed') return value;
  report.issues.push({ path: at, message: `must be a delivery outcome, got ${typeName(value)}` });
  return undefined;
};

const eventShape = object({
  seq: number({ integer: true, min: 1, max: MAX_SEQ }),
  time: text,
  kind: literal('system', 'heartbeat', 'reply'),
  text,
  source: text,
  mode: optional(literal(...WAKE_MODES)),
  ack: optional(boolean),
  requestId: optional(text),
  agentId: optional(string({ nonEmpty: true })),
  sessionKey: optional(string({ nonEmpty: true })),
});
const consumedShape = object({
  agentId: optional(string({ nonEmpty: true })),
  sessionKey: optional(string({ nonEmpty: true })),
  through: seq,
});

// Every field a run may change after it was accepted.
const runChanges = {
  status: optional(runStatus),
  acceptedAt: optional(text),
  attempts: optional(number({ integer: true, min: 0 })),
  retry: optional(boolean),
  startedAt: optional(text),
  finishedAt: optional(text),
  calls: optional(number({ integer: true, min: 0 })),
  model: optional(text),
  reply: optional(text),
  error: optional(text),
  delivery: optional(delivery),
  retriedBy: optional(string({ nonEmpty: true })),
  redeliveries: optional(array(object({ time: text, delivery }))),
};
const runSpec = {
  runId: string({ nonEmpty: true }),
  hook: text,
  mapping: optional(text),
  name: text,
  untrustedName: optional(boolean),
  message: text,
  sessionKey: text,
  agentId: text,
  wakeMode: literal(...WAKE_MODES),
  deliver: boolean,
  channel: literal(...CHANNELS),
  to: optional(text),
  toConfigured: optional(boolean),
  accountId: optional(text),
  sessionMode: optional(literal(...SESSION_MODES)),
  thinking: optional(literal(...THINKING_LEVELS)),
  timeoutSeconds: optional(number({ above: 0 })),
  requestId: optional(text),
  callback: optional(object({
    url: text,
    mapping: optional(text),
    requested: optional(boolean),
    includeReply: boolean,
    maxAgeSeconds: number({ integer: true, min: 1 }),
  })),
  retryOf: optional(string({ nonEmpty: true })),
  notBefore: optional(text),
  requestKey: optional(boolean),
};
const windowShape = object({
  group: text,
  key: text,
  windowSeconds: number({ above: 0 }),
  maxWaitSeconds: number({ above: 0 }),
  messages: literal(...COALESCE_MESSAGES),
  maxBytes: number({ integer: true, min: 0 }),
  count: number({ integer: true, min: 1 }),
  firstAt: text,
  lastAt: text,
  leftOut: optional(number({ integer: true, min: 0 })),
});
const joinShape = object({
  runId: string({ nonEmpty: true }),
  requestId: optional(text),
  at: text,
  message: optional(text),
});
const runShape = object({
  ...runSpec,
  coalesce: optional(windowShape),
  ...runChanges,
  status: runStatus,
  acceptedAt: text,
  attempts: number({ integer: true, min: 0 }),
});
const updateShape = object({ runId: string({ nonEmpty: true }), ...runChanges });
// The body of a stored answer is any JSON object: only its being an object is checked.
const anyObject: Schema<Record<string, unknown>> = (value, at, report) => {
  if (typeName(value) === 'object') return value as Record<string, unknown>;
  report.issues.push({ path: at, message: `must be an object, got ${typeName(value)}` });
  return undefined;
};
const idemFields = {
  scope: text,
  key: text,
  status: number({ integer: true, min: 100, max: 599 }),
  body: anyObject,
  expiresAt: number(),
  takenUntil: optional(number()),
  waitFor: optional(array(string({ nonEmpty: true }))),
  requestId: optional(text),
};
// Every field of an outbox entry that changes as delivery goes on.
const outboxChanges = {
  state: optional(literal('pending', 'sent', 'dead', 'dropped')),
  acceptedAt: optional(text),
  attempts: optional(number({ integer: true, min: 0 })),
  nextAttemptAt: optional(text),
  lastError: optional(text),
  refusedField: optional(text),
  batch: optional(text),
  upstreamRunId: optional(text),
  sentAt: optional(text),
  deadAt: optional(text),
  retriedAt: optional(text),
};
const outboxShape = object({
  id: string({ nonEmpty: true }),
  target: literal('wake', 'agent'),
  body: anyObject,
  hook: text,
  mapping: optional(string({ nonEmpty: true })),
  requestId: optional(text),
  runId: optional(text),
  ...outboxChanges,
  state: literal('pending', 'sent', 'dead', 'dropped'),
  acceptedAt: text,
  attempts: number({ integer: true, min: 0 }),
});
// Every field of a notify delivery that changes once it was accepted.
const noticeChanges = {
  status: optional(literal('pending', 'delivered', 'failed', 'skipped')),
  acceptedAt: optional(text),
  attempts: optional(number({ integer: true, min: 0 })),
  finishedAt: optional(text),
  delivery: optional(delivery),
};
const noticeShape = object({
  kind: literal('notify'),
  deliveryId: string({ nonEmpty: true }),
  hook: text,
  name: text,
  channel: literal(...CHANNELS.filter((c) => c !== 'last')),
  to: optional(text),
  text,
  requestId: optional(text),
  ...noticeChanges,
  status: literal('pending', 'delivered', 'failed', 'skipped'),
  acceptedAt: text,
  attempts: number({ integer: true, min: 0 }),
});
// Every field of a callback that changes as delivery goes on.
const callbackChanges = {
  state: optional(literal('pending', 'sent', 'dead')),
  acceptedAt: optional(text),
  attempts: optional(number({ integer: true, min: 0 })),
  nextAttemptAt: optional(text),
  lastError: optional(text),
  status: optional(number({ integer: true, min: 100, max: 599 })),
  sentAt: optional(text),
  deadAt: optional(text),
  retriedAt: optional(text),
};
const callbackShape = object({
  id: string({ nonEmpty: true }),
  runId: string({ nonEmpty: true }),
  hook: text,
  url: string({ nonEmpty: true }),
  origin: string({ nonEmpty: true }),
  mapping: optional(text),
  maxAgeSeconds: number({ integer: true, min: 1 }),
  body: anyObject,
  ...callbackChanges,
  state: literal('pending', 'sent', 'dead'),
  acceptedAt: text,
  attempts: number({ integer: true, min: 0 }),
});
const callbackUpdateShape = object({ id: string({ nonEmpty: true }), ...callbackChanges });
const noticeUpdateShape = object({ deliveryId: string({ nonEmpty: true }), ...noticeChanges });
const outboxUpdateShape = object({ id: string({ nonEmpty: true }), ...outboxChanges });
const idemShape = object(idemFields);
const attemptShape = object({
  entry: optional(string({ nonEmpty: true })),
  requestId: text,
  status: number({ integer: true, min: 100, max: 599 }),
  time: text,
});
const retryShape = object({
  run: string({ nonEmpty: true }),
  as: string({ nonEmpty: true }),
  time: text,
});
const rootShape = object({
  root: string({ nonEmpty: true }),
  state: literal(...ROOT_STATES),
  replays: optional(array(attemptShape)),
  retries: optional(array(retryShape)),
  resolvedAt: optional(text),
  time: text,
});
const budgetShape = object({
  hook: text,
  day: string({ pattern: { regex: /^\d{4}-\d{2}-\d{2}$/, rule: 'must be a date YYYY-MM-DD' } }),
  runs: number({ integer: true, min: 0 }),
  told: optional(boolean),
});
const pauseShape = object({
  hook: string({ nonEmpty: true }),
  paused: boolean,
  since: optional(text),
  until: optional(text),
});
const heldShape = object({
  id: number({ integer: true, min: 1, max: MAX_SEQ }),
  hook: string({ nonEmpty: true }),
  heldAt: text,
  kind: literal('system'),
  text,
  source: text,
  mode: optional(literal(...WAKE_MODES)),
  requestId: optional(text),
  agentId: optional(string({ nonEmpty: true })),
  sessionKey: optional(string({ nonEmpty: true })),
});
const dropShape = object({ requestId: string({ nonEmpty: true }), hook: string({ nonEmpty: true }), time: text });
const commitShape = object({
  t: literal('commit'),
  seq,
  time: text,
  events: optional(_list),
  runs: optional(_list),
  runUpdates: optional(_list),
  joins: optional(_list),
  consumedThrough: optional(seq),
  consumedSessions: optional(array(consumedShape)),
  lastRoute: optional(object({ channel: text, to: text })),
  outbox: optional(_list),
  outboxUpdates: optional(_list),
  notices: optional(_list),
  noticeUpdates: optional(_list),
  idem: optional(idemShape),
  roots: optional(_list),
  callbacks: optional(_list),
  callbackUpdates: optional(_list),
  budget: optional(_list),
  pauses: optional(_list),
  held: optional(_list),
  released: optional(array(seq)),
  drops: optional(_list),
});
const idemLine = object({ t: literal('idem'), seq, ...idemFields });
const takenLine = object({
  t: literal('taken'),
  seq,
  scope: text,
  key: text,
  takenUntil: number(),
  requestId: optional(text),
});

function _list(value: unknown, at: string, report: Report): unknown[] | undefined {
  if (Array.isArray(value)) return value;
  report.issues.push({ path: at, message: `must be an array, got ${typeName(value)}` });
  return undefined;
}

/** A line read back: the checked line (with bad entries left out) and what was wrong, if anything. */
export interface CheckedLine {
  line: JournalLine | null;
  problems: string[];
}

/**
 * Checks one record read from the journal. A record of the wrong shape gives `line: null`; an
 * entry of the wrong shape inside a sound commit (an event, a run, a run update) is left out and
 * named in `problems`, and the rest of the line stands.
 */
export function checkLine(record: unknown): CheckedLine {
  const kind = (record as { t?: unknown } | null)?.t;
  if (kind === 'idem' || kind === 'taken') {
    const checked = kind === 'idem' ? check(idemLine, record) : check(takenLine, record);
    return checked.ok
      ? { line: record as JournalLine, problems: [] }
      : { line: null, problems: checked.issues.map(formatIssue) };
  }
  const checked = check(commitShape, record);
  if (!checked.ok) return { line: null, problems: checked.issues.map(formatIssue) };
  // The checked copy holds exactly the known keys; the entries are checked one by one below.
  const line = checked.value as JournalLine & { t: 'commit' };
  const problems: string[] = [];
  const keep = (
    name:
      | 'events'
      | 'runs'
      | 'runUpdates'
      | 'joins'
      | 'outbox'
      | 'outboxUpdates'
      | 'notices'
      | 'noticeUpdates'
      | 'roots'
      | 'callbacks'
      | 'callbackUpdates'
      | 'budget'
      | 'pauses'
      | 'held'
      | 'drops',
    shape: Schema<unknown>,
  ): void => {
    const entries = line[name] as unknown[] | undefined;
    if (entries === undefined) return;
    const good = entries.filter((entry, i) => {
      const result = check(shape, entry, `${name}[${i}]`);
      if (!result.ok) problems.push(...result.issues.map(formatIssue));
      return result.ok;
    });
    (line as unknown as Record<string, unknown>)[name] = good;
  };
  keep('events', eventShape);
  keep('runs', runShape);
  keep('runUpdates', updateShape);
  keep('joins', joinShape);
  keep('outbox', outboxShape);
  keep('outboxUpdates', outboxUpdateShape);
  keep('notices', noticeShape);
  keep('noticeUpdates', noticeUpdateShape);
  keep('roots', rootShape);
  keep('callbacks', callbackShape);
  keep('callbackUpdates', callbackUpdateShape);
  keep('budget', budgetShape);
  keep('pauses', pauseShape);
  keep('held', heldShape);
  keep('drops', dropShape);
  return { line, problems };
}

/** A journal line (or an entry in one) that was left out on reading, and why. */
export interface Rejected {
  line: number;
  problem: string;
}

/** The journal's lines that pass their shape check, and the ones left out, by line: nothing believes a record before it passes. */
export function checkedLines(contents: JournalContents): { lines: JournalLine[]; rejected: Rejected[] } {
  const lines: JournalLine[] = [];
  const rejected: Rejected[] = contents.unreadable.map((line) => ({ line, problem: 'not JSON' }));
  contents.records.forEach((record, i) => {
    const { line, problems } = checkLine(record);
    const number = contents.lines[i]!;
    if (line !== null) lines.push(line);
    if (problems.length > 0) {
      rejected.push({
        line: number,
        problem: `${line === null ? '' : 'entry left out: '}${problems.slice(0, 3).join('; ')}`,
      });
    }
  });
  return { lines, rejected: rejected.sort((a, b) => a.line - b.line) };
}

/** The one rule for replaying runs from a commit line: new runs as recorded, the requests that joined them, then their updates. */
export function replayRuns(
  line: Pick<Extract<JournalLine, { t: 'commit' }>, 'runs' | 'runUpdates' | 'joins'>,
  get: (runId: string) => RunRecord | undefined,
  set: (runId: string, run: RunRecord) => void,
): void {
  for (const run of line.runs ?? []) set(run.runId, run);
  for (const join of line.joins ?? []) {
    const run = get(join.runId);
    if (run !== undefined) set(join.runId, joinRun(run, join));
  }
  for (const { runId, ...change } of line.runUpdates ?? []) {
    const run = get(runId);
    if (run !== undefined) set(runId, updated(run, change));
  }
}
