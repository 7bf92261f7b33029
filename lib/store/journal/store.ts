// The writer: events, run records, idempotency keys, heartbeat progress, the last route and the outgoing
// queues (forward mode's outbox, completion callbacks) over the journal, one line per commit; compaction.

import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { NoticeSpec, RunSpec } from '../../model/actions.ts';
import { workHook } from '../../model/work-hook.ts';
import { extend } from '../../object.ts';
import { isoTime } from '../../log.ts';
import {
  type ConsumedSession,
  type IdempotencyWrite,
  type NoticeRecord,
  type NoticeUpdate,
  type Route,
  type RunRecord,
  type RunUpdate,
  type SessionEvent,
  type StoredAnswer,
  targetOf,
} from '../../model/records.ts';
import { Journal, JournalReplacedError } from './journal.ts';
import { JOURNAL_FILE } from './lines.ts';
import {
  applyOutbox,
  countOutbox,
  headOf,
  newEntries,
  type OutboxEntry,
  type OutboxSpec,
  type OutboxState,
  type OutboxUpdate,
  trimOutbox,
} from './outbox.ts';
import { IdempotencyKeys } from './idempotency-keys.ts';
import {
  applyCallbacks,
  type CallbackEntry,
  callbackHeads,
  type CallbackState,
  type CallbackUpdate,
  countCallbacks,
  type NewCallback,
  newCallbacks,
  trimCallbacks,
} from './callbacks.ts';
import { type BudgetCharge, Budgets } from './budgets.ts';
import { applyNotices, newNotices, trimNotices } from './notices.ts';
import type { RootChange, RootRecord } from '../../model/replays.ts';
import { rootBound, Roots } from './replays.ts';
import { checkedLines, type IdemRecord, type JournalLine, type Rejected, replayRuns } from './records.ts';
import { joinsUndo, Windows } from './coalesce-windows.ts';
import { type EventOutcome, type NewEvent, planEvents, recordedEvent, SessionEvents } from './session-events.ts';
import { type DropRecord, hasPauseFields, type HeldWake, type Pause, Pauses } from './pauses.ts';

export interface StoreOptions {
  now?: () => number;
  idempotencyTtlMs: number;
  /** How many idempotency keys are kept at most with their answer; the oldest go first. */
  maxIdempotencyKeys?: number;
  /** How many keys are kept at most as taken once their answer is no longer kept (100,000); the oldest go first. */
  maxTakenKeys?: number;
  /** Past this size the journal is rewritten with only what is still live. */
  compactBytes?: number;
  /** How many consumed main-session events survive a compaction (unconsumed ones always do). */
  retainEvents?: number;
  /** And at most this much consumed event text (UTF-16 code units), so history cannot fill memory. */
  retainEventBytes?: number;
  /** How many finished runs are kept for `hooks-ingress runs`. */
  retainRuns?: number;
  /** How long a replayed root's record outlives its last change (the ledger's age bound: then no entry of it is left). */
  retainRootsMs?: number;
  /** How many entries the request ledger holds at most: at least that many roots' records are kept. */
  ledgerEntries?: number;
}

/** By a planned run's id, the pending run it joined instead (coalescing), as it stands after the commit. */
export type Joined = ReadonlyMap<string, RunRecord>;

/** What one request (or one heartbeat) adds: session events and runs to execute. */
export interface Effects {
  /** A wake marked `coalesce` adds no event when its text is already its session's newest unread one. */
  events?: NewEvent[];
  runs?: RunSpec[];
  runUpdates?: RunUpdate[];
  /** Main-session events up to this seq have been read by a finished heartbeat turn. */
  consumedThrough?: number;
  /** Heartbeat turns of other agents or sessions read theirs up to these seqs. */
  consumedSessions?: ConsumedSession[];
  lastRoute?: Route;
  /** Forward mode: actions for the upstream gateway, and changes to earlier ones. */
  outbox?: OutboxSpec[];
  outboxUpdates?: OutboxUpdate[];
  /** Notify mappings' deliveries to send, and their outcomes. */
  notices?: NoticeSpec[];
  noticeUpdates?: NoticeUpdate[];
  /** A replay's outcome for its root (or roots resolved by hand), durable with the replay's effects. */
  roots?: RootChange[];
  /** Completion callbacks of runs that settled, in the line that settles them, and changes to earlier ones. */
  callbacks?: NewCallback[];
  callbackUpdates?: CallbackUpdate[];
  /** Runs charged to hooks' daily budgets (with the runs that spend them), or a day's notice posted. */
  budget?: BudgetCharge[];
  /** Hooks paused (or paused again, with a new end): their wakes are held from this line on. */
  pause?: Pause[];
  /** Hooks resumed: their held wakes join their sessions in this line, oldest first. */
  resume?: string[];
  /** Held wakes dropped (their ids), and the requests whose waiting work was. */
  dropHeld?: number[];
  drops?: DropRecord[];
}

/** What a commit recorded: its events, runs and deliveries, the wakes it held, what became of each wake, the runs joined. */
export interface Committed {
  events: SessionEvent[];
  runs: RunRecord[];
  notices: NoticeRecord[];
  held: HeldWake[];
  outcomes: EventOutcome[];
  joined: Joined;
}

// One journal line is one commit: all of a request's effects and its idempotency key, durable
// together or not at all (the line's shape and its checks live in records.ts).
type _Line = JournalLine;

/**
 * The state directory's one writer. Every acknowledged effect is one journal line, written
 * and fsync'd before the answer goes out; a request's idempotency record rides on the same
 * line, so an effect and its key are durable together or not at all.
 */
export class Store {
  readonly #journal: Journal;
  readonly #now: () => number;
  readonly #ttlMs: number;
  readonly #compactBytes: number;
  readonly #session: SessionEvents;
  readonly #keys: IdempotencyKeys;
  #seq = 0;
  #runs = new Map<string, RunRecord>();
  readonly #windows = new Windows();
  #runWatchers = new Set<(run: RunRecord) => void>();
  // The journal writes still under way, by the seq of each event they carry: a wake that coalesces
  // into one of those events is answered only once that event is on disk.
  #inflight = new Map<number, Promise<void>>();
  #outbox = new Map<string, OutboxEntry>();
  #notices = new Map<string, NoticeRecord>();
  #callbacks = new Map<string, CallbackEntry>();
  readonly #roots: Roots;
  readonly #budgets = new Budgets();
  readonly #pauses = new Pauses();
  readonly #retainRootsMs: number;
  #compacting: Promise<void> | null = null;
  #compactAt: number;
  #lastWriteFailed = false;
  #lastRoute: Route | null = null;
  readonly #retainRuns: number;
  /** How many runs in #runs are finished. */
  #finished = 0;
  #compactionFailures = 0;
  // A compaction is queued behind the running one; its snapshot is taken when its turn comes.
  #compactQueued = false;
  // While the journal is replayed at open the backlog is counted once, at the end.
  #replaying = false;
  // Moves with every line applied or taken back: what was read from the store is current while it holds.
  #changes = 0;

  private constructor(journal: Journal, options: StoreOptions) {
    this.#journal = journal;
    this.#now = options.now ?? Date.now;
    this.#ttlMs = options.idempotencyTtlMs;
    this.#keys = new IdempotencyKeys(this.#now, options.maxIdempotencyKeys ?? 10_000, options.maxTakenKeys ?? 100_000);
    this.#compactBytes = options.compactBytes ?? 8 * 1024 * 1024;
    this.#compactAt = this.#compactBytes;
    this.#session = new SessionEvents(options.retainEvents ?? 2_000, options.retainEventBytes ?? 16 * 1024 * 1024);
    this.#retainRuns = options.retainRuns ?? 1_000;
    this.#retainRootsMs = options.retainRootsMs ?? Number.POSITIVE_INFINITY;
    this.#roots = new Roots(rootBound(options.ledgerEntries ?? 0));
  }

  /** Opens (or creates, mode 0700) the state directory and replays its journal. */
  static async open(
    dir: string,
    options: StoreOptions,
  ): Promise<{ store: Store; skipped: number; tornBytes: number; rejected: Rejected[] }> {
    const opened = await Journal.open(join(dir, JOURNAL_FILE));
    const store = new Store(opened.journal, options);
    const { lines, rejected } = checkedLines(opened);
    store.#replaying = true;
    for (const line of lines) store.#apply(line);
    store.#replaying = false;
    store.#session.settle();
    return { store, skipped: opened.skipped, tornBytes: opened.tornBytes, rejected };
  }

  /**
   * Writes a request's effects (and its idempotency key) as one line; resolves once it is on disk.
   * Whether a wake coalesces is decided here, with no await between the decision and the line's
   * place in memory, so two equal wakes at once cannot both be queued (nor two runs of one
   * coalescing group open two windows); `idem` may be made from the outcomes and the runs joined,
   * so a retry is answered what the first request was.
   */
  async commit(
    effects: Effects,
    idem?: IdempotencyWrite | ((outcomes: readonly EventOutcome[], joined: Joined) => IdempotencyWrite),
  ): Promise<Committed> {
    // A wake equal to an event whose line is still being written waits for that line: if it fails,
    // the event is gone and the wake is queued after all, never answered "coalesced" into nothing.
    // A run that would join a window whose opening line is still being written waits for it likewise.
    let planned = planEvents(this.#session, effects.events ?? []);
    for (
      let writing = this.#writing(planned.matched, effects.runs);
      writing.length > 0;
      writing = this.#writing(planned.matched, effects.runs)
    ) {
      await Promise.allSettled(writing);
      planned = planEvents(this.#session, effects.events ?? []);
    }
    // From here to the line's place in memory, no await: a pause or resume is decided in order with it.
    const time = isoTime(this.#now());
    const wakes = this.#pauses.size === 0 && effects.resume === undefined ? null : this.#planWakes(effects, time);
    const events = wakes?.events ?? planned.added.map((e) => recordedEvent(++this.#seq, time, e));
    const outcomes = wakes?.outcomes ?? planned.outcomes;
    const held: HeldWake[] = wakes?.held ?? _NONE;
    // A run of a coalescing group joins its open window instead, decided here as a wake's coalescing is.
    const { runs, joins, joined } = this.#windows.admit(
      effects.runs ?? _NONE,
      time,
      this.#now(),
      (id) => this.#runs.get(id),
    );
    const notices = effects.notices === undefined || effects.notices.length === 0
      ? _NONE
      : newNotices(effects.notices, time);
    const line: _Line = { t: 'commit', seq: held.at(-1)?.id ?? events.at(-1)?.seq ?? ++this.#seq, time };
    if (held.length > 0) line.held = held;
    if (_pausing(effects)) _pauseFields(line, effects, wakes?.joining ?? _NONE);
    if (events.length > 0) line.events = events;
    if (runs.length > 0) line.runs = runs;
    if (joins.length > 0) line.joins = [...joins];
    _changes(line, effects);
    if (notices.length > 0) line.notices = notices;
    _queues(line, effects, time);
    if (idem !== undefined) line.idem = this.#idemRecord(typeof idem === 'function' ? idem(outcomes, joined) : idem);
    // Every wake coalesced into an event already on disk, and there is nothing else to keep.
    if (events.length === 0 && (effects.events?.length ?? 0) > 0 && _bare(line)) {
      return { events, runs, notices, held, outcomes, joined };
    }
    // Tracked as a whole: #write settles after a failed line is taken back out of memory.
    const writing = this.#write(line);
    if (events.length > 0) this.#track(events, writing);
    if (runs.length > 0) this.#windows.writing(runs, writing);
    await writing;
    if (line.runUpdates !== undefined && this.#runWatchers.size > 0) this.#notify(line.runUpdates);
    return { events, runs, notices, held, outcomes, joined };
  }

  // An idempotency key as the line keeps it: until when its answer is given again, and its key taken.
  #idemRecord({ ttlMs, keepMs, ...answer }: IdempotencyWrite): IdemRecord {
    const expiresAt = this.#now() + (ttlMs ?? this.#ttlMs);
    const takenUntil = keepMs === undefined ? expiresAt : this.#now() + keepMs;
    const record: IdemRecord = extend(answer, { expiresAt });
    if (takenUntil > expiresAt) record.takenUntil = takenUntil;
    return record;
  }

  // A commit's wakes: the events it adds (or coalesces), the wakes a paused hook holds, and the held
  // wakes of the hooks it resumes, which join as events after its own.
  #planWakes(
    effects: Effects,
    time: string,
  ): { events: SessionEvent[]; held: HeldWake[]; joining: readonly HeldWake[]; outcomes: EventOutcome[] } {
    const { live, hold, joining } = _divert(this.#pauses, effects);
    const planned = planEvents(this.#session, joining.length === 0 ? live : [...live, ...joining.map(_joined)]);
    const events = planned.added.map((e) => recordedEvent(++this.#seq, time, e));
    const held = hold.map(({ coalesce: _, workHook, ...e }): HeldWake => ({
      ...e,
      kind: 'system',
      id: ++this.#seq,
      hook: workHook!,
      heldAt: time,
    }));
    const outcomes = held.length === 0 ? planned.outcomes : [...planned.outcomes, ...held.map(() => 'held' as const)];
    return { events, held, joining, outcomes };
  }

  /** Calls `listener` with a run each time a change to it is on disk; returns the function that stops it. */
  watchRuns(listener: (run: RunRecord) => void): () => void {
    this.#runWatchers.add(listener);
    return () => this.#runWatchers.delete(listener);
  }

  #notify(updates: readonly RunUpdate[]): void {
    for (const { runId } of updates) {
      const run = this.#runs.get(runId);
      if (run !== undefined) { for (const listener of [...this.#runWatchers]) listener(run); }
    }
  }

  /** Appends one event to the main session; resolves once it is on disk. */
  async addEvent(event: Omit<SessionEvent, 'seq' | 'time'>, idem?: IdempotencyWrite): Promise<SessionEvent> {
    // Never a coalescing wake: a heartbeat or note is always added.
    return (await this.commit({ events: [event] }, idem)).events[0]!;
  }

  /** The first answer to an earlier request with this key, while it is remembered. */
  replay(scope: string, key: string): StoredAnswer | null {
    return this.#keys.replay(scope, key);
  }

  /** A number that moves whenever the state changes (a line applied or taken back): a view built from the store is current while it holds. */
  changes(): number {
    return this.#changes;
  }

  /** A replayed (or resolved) root's record: what a replay claims it against. */
  root(root: string): RootRecord | null {
    return this.#roots.get(root);
  }

  /** Every kept root's record, the one changed longest ago first. */
  roots(): RootRecord[] {
    return this.#roots.list();
  }

  /** The runs charged to a hook's budget for a day (`YYYY-MM-DD` in the budget's zone), and whether its notice was posted. */
  budget(hook: string, day: string): { used: number; told: boolean } {
    return { used: this.#budgets.used(hook, day), told: this.#budgets.told(hook, day) };
  }

  /** The main session's retained events, oldest first. */
  events(): readonly SessionEvent[] {
    return this.#session.list;
  }

  /**
   * Whether the journal can be written: the open file is the journal at its path, it is writable
   * and the last write did not fail. A journal found gone or replaced is rewritten from memory.
   */
  async writable(): Promise<boolean> {
    if (!this.#journal.isCurrent()) {
      this.#recover();
      return false;
    }
    if (this.#lastWriteFailed) return false;
    try {
      await access(this.#journal.file, constants.W_OK);
      return true;
    } catch {
      return false;
    }
  }

  /** Every retained run, oldest first. */
  runs(): RunRecord[] {
    return [...this.#runs.values()];
  }

  /** Notify mappings' retained deliveries, oldest first: every pending one, and the newest finished ones. */
  notices(): NoticeRecord[] {
    return [...this.#notices.values()];
  }

  /** One delivery of a notify mapping, if it is retained. */
  notice(deliveryId: string): NoticeRecord | null {
    return this.#notices.get(deliveryId) ?? null;
  }

  /** The runs (by their planned ids) that would join an open coalescing window now, adding no run to the queue. */
  joining(specs: readonly RunSpec[]): ReadonlySet<string> {
    if (!specs.some((spec) => spec.coalesce !== undefined)) return _NOBODY;
    const time = isoTime(this.#now());
    return new Set(this.#windows.admit(specs, time, this.#now(), (id) => this.#runs.get(id)).joined.keys());
  }

  /** The coalescing windows open (pending runs still taking requests), by work hook. */
  openWindows(): Map<string, number> {
    return this.#windows.open((id) => this.#runs.get(id), this.#now());
  }

  /** One run, if it is retained. */
  run(runId: string): RunRecord | null {
    return this.#runs.get(runId) ?? null;
  }

  /** The main session's events (or, given its agent and session, another target's) up to this seq were read by a finished heartbeat turn. */
  consumedThrough(target?: Pick<SessionEvent, 'agentId' | 'sessionKey'>): number {
    return target === undefined ? this.#session.consumedThrough : this.#session.consumedFor(targetOf(target));
  }

  /** The channel and recipient of the most recent successful delivery to a configured recipient. */
  lastRoute(): Route | null {
    return this.#lastRoute;
  }

  /** Whether a `now` wake is on record with no heartbeat after it (the process died in between). */
  heartbeatOwed(): boolean {
    // Owed until a finished heartbeat turn consumed it: a turn cut short by a stop or a crash does not count.
    return this.#session.owed();
  }

  /** Forward mode's outbox entries, oldest first: every pending and dead one, and recent sent ones. */
  outbox(): OutboxEntry[] {
    return [...this.#outbox.values()];
  }

  /** The oldest pending outbox entry not waiting for its paused hook: the one forward mode sends next. */
  outboxHead(): OutboxEntry | null {
    return headOf(this.#outbox, this.#pauses.size === 0 ? undefined : this.#outboxWaits);
  }

  /** Whether a pending outbox entry waits because its hook is paused. */
  outboxWaits(entry: OutboxEntry): boolean {
    return this.#pauses.size > 0 && this.#outboxWaits(entry);
  }

  readonly #outboxWaits = (entry: OutboxEntry): boolean => this.#pauses.paused(workHook(entry, entry.target)) !== null;

  /** One outbox entry, if it is retained. */
  outboxEntry(id: string): OutboxEntry | null {
    return this.#outbox.get(id) ?? null;
  }

  /** Completion callbacks, in the order their runs settled: every pending and dead one, and recent sent ones. */
  callbacks(): CallbackEntry[] {
    return [...this.#callbacks.values()];
  }

  /** The oldest pending callback of each receiver origin: the ones that go next. */
  callbackHeads(): CallbackEntry[] {
    return callbackHeads(this.#callbacks);
  }

  /** One callback, if it is retained. */
  callback(id: string): CallbackEntry | null {
    return this.#callbacks.get(id) ?? null;
  }

  /** Callbacks by state. */
  callbackCounts(): Record<CallbackState, number> {
    return countCallbacks(this.#callbacks);
  }

  /** Outbox entries by state, for metrics. */
  outboxCounts(): Record<OutboxState, number> {
    return countOutbox(this.#outbox);
  }

  /** Unconsumed system events and held wakes, and their text in UTF-8 bytes: what the backlog bound counts. */
  backlog(): { events: number; bytes: number } {
    const session = this.#session.backlog();
    // Nothing more is made while nothing is held: this is asked on the path of every wake.
    if (this.#pauses.heldCount === 0) return session;
    const held = this.#pauses.backlog();
    return { events: session.events + held.events, bytes: session.bytes + held.bytes };
  }

  /** A hook's pause, or `null` while it is not paused (model/work-hook.ts names hooks). */
  paused(hook: string): Pause | null {
    return this.#pauses.size === 0 ? null : this.#pauses.paused(hook);
  }

  /** Every paused hook, in the order they were paused. */
  pauses(): Pause[] {
    return this.#pauses.list();
  }

  /** The wakes held by paused hooks (one hook's, or all), oldest first. */
  held(hook?: string): HeldWake[] {
    return this.#pauses.held(hook);
  }

  /** Whether a request's waiting work was dropped (`hooks-ingress drop`), while the record is kept. */
  dropped(requestId: string): DropRecord | null {
    return this.#pauses.dropped(requestId);
  }

  /** Counters for metrics and tests. */
  stats(): {
    idempotencyKeys: number;
    runs: number;
    events: number;
    journalBytes: number;
    fsyncMs: number;
    flushes: number;
    compactionFailures: number;
  } {
    const journal = this.#journal.stats();
    return {
      idempotencyKeys: this.#keys.size,
      runs: this.#runs.size,
      events: this.#session.list.length,
      journalBytes: this.#journal.size,
      fsyncMs: journal.lastFsyncMs,
      flushes: journal.flushes,
      compactionFailures: this.#compactionFailures,
    };
  }

  /** Waits for any compaction, flushes what is queued and closes the journal. */
  async close(): Promise<void> {
    await this.#compacting;
    await this.#journal.close();
  }

  // Memory is updated before the line is queued, so a compaction snapshot taken at any time
  // holds every line queued ahead of it: the journal writes those first, then the snapshot.
  async #write(line: _Line): Promise<void> {
    const roots = line.t === 'commit' ? this.#roots.before(line.roots) : null;
    const unjoin = line.t === 'commit'
      ? joinsUndo(line.joins, (id) => this.#runs.get(id), (id, run) => this.#setRun(id, run))
      : null;
    // A held wake alone is taken back by its id; a change to the pauses, by the state before it.
    const pauses = line.t === 'commit' && _changesPauses(line) ? this.#pauses.save() : null;
    this.#apply(line);
    unjoin?.applied();
    const written = this.#journal.append(line);
    if (this.#journal.size > this.#compactAt && this.#compacting === null) this.#compactSoon();
    try {
      await written;
      this.#lastWriteFailed = false;
    } catch (error) {
      this.#lastWriteFailed = true;
      // The line never reached the disk, so nothing may vouch for it: a retry must run again, not replay.
      this.#forget(line);
      if (roots !== null) this.#roots.restore(roots);
      unjoin?.undo();
      if (pauses !== null) this.#pauses.restore(pauses);
      else if (line.t === 'commit' && line.held !== undefined) this.#pauses.unhold(line.held);
      // A compaction queued behind it took its snapshot with the line in it: write a fresh one after.
      if (this.#compacting !== null) this.#compactSoon();
      if (error instanceof JournalReplacedError) this.#recover();
      throw error;
    }
  }

  #track(events: readonly SessionEvent[], written: Promise<void>): void {
    for (const e of events) this.#inflight.set(e.seq, written);
    // Whether it is written or fails, a wake waiting on it goes on (Promise.allSettled); the commit awaits `written` itself.
    const done = () => {
      for (const e of events) if (this.#inflight.get(e.seq) === written) this.#inflight.delete(e.seq);
    };
    written.then(done, done);
  }

  // The writes still under way of the events some wakes coalesce into (none, nearly always).
  // (The opening lines still being written of the windows some runs would join: none, nearly always.)
  #writing(matched: readonly SessionEvent[], runs: readonly RunSpec[] | undefined): Promise<void>[] {
    const opening = this.#windows.unwritten(runs);
    if ((matched.length === 0 || this.#inflight.size === 0) && opening.length === 0) return _NONE;
    return [...matched.flatMap((e) => this.#inflight.get(e.seq) ?? []), ...opening];
  }

  // The journal at the path is gone or another file: everything retained goes into a fresh one.
  #recover(): void {
    if (this.#compacting === null) this.#compactSoon();
  }

  // Compactions run one after another, each snapshot taken when its turn comes (so it holds exactly
  // the lines queued ahead of it). The next one waits until the file doubles what the last one left,
  // so a large retained set is not rewritten on every append.
  #compactSoon(): void {
    if (this.#compactQueued) return; // the queued one takes its snapshot later, so it serves this call too
    const start = () => {
      this.#compactQueued = false;
      return this.#journal.compact(this.#snapshot());
    };
    if (this.#compacting !== null) this.#compactQueued = true;
    const next: Promise<void> = (this.#compacting === null ? start() : this.#compacting.then(start))
      .then(() => {
        this.#compactAt = Math.max(this.#compactBytes, 2 * this.#journal.size);
        this.#lastWriteFailed = false;
      })
      // A failed compaction leaves the old journal in place, complete; a later append tries again.
      .catch(() => {
        this.#compactionFailures++;
      })
      .finally(() => {
        if (this.#compacting === next) this.#compacting = null;
      });
    this.#compacting = next;
  }

  #forget(line: _Line): void {
    this.#changes++;
    if (line.t !== 'commit') return;
    this.#session.forget(new Set(line.events?.map((e) => e.seq)));
    for (const run of line.runs ?? []) if (this.#runs.get(run.runId) === run) this.#setRun(run.runId, undefined);
    for (const entry of line.outbox ?? []) if (this.#outbox.get(entry.id) === entry) this.#outbox.delete(entry.id);
    for (const notice of line.notices ?? []) {
      if (this.#notices.get(notice.deliveryId) === notice) this.#notices.delete(notice.deliveryId);
    }
    for (const entry of line.callbacks ?? []) {
      if (this.#callbacks.get(entry.id) === entry) this.#callbacks.delete(entry.id);
    }
    if (line.idem !== undefined) this.#keys.forget(line.idem);
    this.#budgets.forget(line.budget);
  }

  #apply(line: _Line): void {
    this.#changes++;
    this.#seq = Math.max(this.#seq, line.seq);
    if (line.t === 'commit') {
      if (line.events !== undefined) this.#session.add(line.events);
      if (line.consumedThrough !== undefined) this.#session.consume(line.consumedThrough, !this.#replaying);
      if (line.consumedSessions !== undefined) this.#session.consumeSessions(line.consumedSessions, !this.#replaying);
      this.#session.trim();
      replayRuns(line, (id) => this.#runs.get(id), (id, run) => this.#setRun(id, run));
      if (line.lastRoute !== undefined) this.#lastRoute = line.lastRoute;
      if (line.outbox !== undefined || line.outboxUpdates !== undefined) {
        applyOutbox(this.#outbox, line.outbox, line.outboxUpdates);
        trimOutbox(this.#outbox, this.#retainRuns);
      }
      if (line.notices !== undefined || line.noticeUpdates !== undefined) {
        applyNotices(this.#notices, line.notices, line.noticeUpdates);
        trimNotices(this.#notices, this.#retainRuns);
      }
      if (line.callbacks !== undefined || line.callbackUpdates !== undefined) {
        applyCallbacks(this.#callbacks, line.callbacks, line.callbackUpdates);
        trimCallbacks(this.#callbacks, this.#retainRuns);
      }
      this.#trimRuns();
      this.#roots.apply(line.roots);
      this.#budgets.apply(line.budget);
      if (hasPauseFields(line)) this.#pauses.apply(line);
    }
    if (line.t === 'taken') return this.#keys.take(line);
    const idem = line.t === 'idem' ? line : line.idem;
    if (idem !== undefined) this.#keys.remember(idem);
  }

  // Finished runs are history: the newest `retainRuns` of them are kept, trimmed in batches.
  // The count of finished runs is kept as runs change, so a commit does not scan every run: with
  // many runs queued, that scan made accepting each one cost more than the one before.
  #trimRuns(): void {
    if (this.#runs.size <= this.#retainRuns * 1.25 || this.#finished <= this.#retainRuns) return;
    for (const [id, run] of this.#runs) {
      if (this.#finished <= this.#retainRuns) break;
      if (!_unfinished(run)) this.#setRun(id, undefined);
    }
  }

  // Every change to #runs goes through here, keeping #finished exact; `undefined` removes the run.
  #setRun(id: string, run: RunRecord | undefined): void {
    const old = this.#runs.get(id);
    if (old?.coalesce !== undefined || run?.coalesce !== undefined) this.#windows.track(id, old, run);
    if (old !== undefined && !_unfinished(old)) this.#finished--;
    if (run === undefined) {
      this.#runs.delete(id);
      return;
    }
    this.#runs.set(id, run);
    if (!_unfinished(run)) this.#finished++;
  }

  // What a compacted journal holds: retained events, unfinished runs, live idempotency keys, the roots' records.
  #snapshot(): _Line[] {
    const now = this.#now();
    const lines: _Line[] = this.#session.retained().map((e) => ({
      t: 'commit',
      seq: e.seq,
      time: e.time,
      events: [e],
    }));
    for (const run of this.#runs.values()) lines.push({ t: 'commit', seq: 0, time: run.acceptedAt, runs: [run] });
    lines.push({
      t: 'commit',
      seq: 0,
      time: new Date(now).toISOString(),
      consumedThrough: this.#session.consumedThrough,
      ...(this.#session.consumedSessions().length === 0 ? {} : { consumedSessions: this.#session.consumedSessions() }),
      ...(this.#lastRoute === null ? {} : { lastRoute: this.#lastRoute }),
    });
    for (const entry of this.#outbox.values()) {
      lines.push({ t: 'commit', seq: 0, time: entry.acceptedAt, outbox: [entry] });
    }
    for (const notice of this.#notices.values()) {
      lines.push({ t: 'commit', seq: 0, time: notice.acceptedAt, notices: [notice] });
    }
    for (const entry of this.#callbacks.values()) {
      lines.push({ t: 'commit', seq: 0, time: entry.acceptedAt, callbacks: [entry] });
    }
    const budget = this.#budgets.snapshot();
    if (budget.length > 0) lines.push({ t: 'commit', seq: 0, time: new Date(now).toISOString(), budget });
    for (const idem of this.#keys.live(now)) lines.push({ t: 'idem', seq: 0, ...idem });
    for (const taken of this.#keys.takenOnly(now)) lines.push({ t: 'taken', seq: 0, ...taken });
    this.#roots.trim(now - this.#retainRootsMs);
    for (const root of this.#roots.changes()) lines.push({ t: 'commit', seq: 0, time: root.time, roots: [root] });
    const time = new Date(now).toISOString();
    for (const fields of this.#pauses.snapshot()) {
      lines.push({ t: 'commit', seq: fields.held?.[0]?.id ?? 0, time, ...fields });
    }
    return lines;
  }
}

// The outgoing queues' new entries and changes, and the roots' records, that a commit carries.
function _queues(line: _Line & { t: 'commit' }, effects: Effects, time: string): void {
  if (effects.outbox !== undefined && effects.outbox.length > 0) line.outbox = newEntries(effects.outbox, time);
  if (effects.outboxUpdates !== undefined && effects.outboxUpdates.length > 0) {
    line.outboxUpdates = effects.outboxUpdates;
  }
  if (effects.noticeUpdates !== undefined && effects.noticeUpdates.length > 0) {
    line.noticeUpdates = effects.noticeUpdates;
  }
  if (effects.roots !== undefined && effects.roots.length > 0) line.roots = effects.roots;
  if (effects.callbacks !== undefined && effects.callbacks.length > 0) {
    line.callbacks = newCallbacks(effects.callbacks, time);
  }
  if (effects.callbackUpdates !== undefined && effects.callbackUpdates.length > 0) {
    line.callbackUpdates = effects.callbackUpdates;
  }
  if (effects.budget !== undefined && effects.budget.length > 0) line.budget = effects.budget;
}

const _NOBODY: ReadonlySet<string> = new Set();
// The changes a line carries as they were given: to runs, to what heartbeats read, the last route.
function _changes(line: _Line & { t: 'commit' }, effects: Effects): void {
  if (effects.runUpdates !== undefined && effects.runUpdates.length > 0) line.runUpdates = effects.runUpdates;
  if (effects.consumedThrough !== undefined) line.consumedThrough = effects.consumedThrough;
  if (effects.consumedSessions !== undefined && effects.consumedSessions.length > 0) {
    line.consumedSessions = effects.consumedSessions;
  }
  if (effects.lastRoute !== undefined) line.lastRoute = effects.lastRoute;
}

// Whether a commit pauses, resumes or drops: nothing of that is looked at on a request's commit.
function _pausing(effects: Effects): boolean {
  return effects.pause !== undefined || effects.resume !== undefined || effects.dropHeld !== undefined ||
    effects.drops !== undefined;
}

function _changesPauses(line: _Line & { t: 'commit' }): boolean {
  return line.pauses !== undefined || line.released !== undefined || line.drops !== undefined;
}

// A commit's wakes split: those of a paused hook are held; and the held wakes of the hooks it resumes, which join.
function _divert(pauses: Pauses, effects: Effects): { live: NewEvent[]; hold: NewEvent[]; joining: HeldWake[] } {
  const live: NewEvent[] = [];
  const hold: NewEvent[] = [];
  for (const event of effects.events ?? []) {
    const hook = event.workHook;
    (hook !== undefined && event.kind === 'system' && pauses.paused(hook) !== null ? hold : live).push(event);
  }
  const resumed = new Set(effects.resume ?? []);
  const joining = resumed.size === 0 ? _NONE : pauses.held().filter((h) => resumed.has(h.hook));
  return { live, hold, joining };
}

// A held wake as the event it becomes when its hook resumes: never coalesced, each was acknowledged as its own.
function _joined({ id: _, hook: __, heldAt: ___, ...event }: HeldWake): NewEvent {
  return event;
}

// The line's pause changes: pauses, resumes (their held wakes released, their events in the line), drops.
function _pauseFields(line: _Line & { t: 'commit' }, effects: Effects, joining: readonly HeldWake[]): void {
  const changes = [
    ...(effects.pause ?? []).map((p) => ({ ...p, paused: true as const })),
    ...(effects.resume ?? []).map((hook) => ({ hook, paused: false as const })),
  ];
  if (changes.length > 0) line.pauses = changes;
  const released = [...joining.map((h) => h.id), ...(effects.dropHeld ?? [])];
  if (released.length > 0) line.released = released;
  if (effects.drops !== undefined && effects.drops.length > 0) line.drops = effects.drops;
}

function _unfinished(run: RunRecord): boolean {
  return run.status === 'pending' || run.status === 'running';
}

// What a commit made none of (shared: nearly every commit makes no run and no notice).
const _NONE: never[] = Object.freeze([]) as unknown as never[];

// A commit line with nothing in it but its kind, seq and time.
function _bare(line: _Line): boolean {
  for (const key in line) if (key !== 't' && key !== 'seq' && key !== 'time') return false;
  return true;
}
