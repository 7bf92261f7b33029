// The pool of child processes that runs transforms (its state machine): one module per child, time budget,
// memory watch, result cap.
//
// The pool's state machine, one concern at some 400 lines: its slots, the queue, the calls in flight
// and a child's exit change each other's state, so they stay in one class. What stands alone lives
// beside it: the wire (protocol.ts), the checks before a child starts (loadable.ts), the child
// process (child.ts), the options (pool-options.ts) and the deadline timer (earliest-deadline.ts).

import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { Buffer } from 'node:buffer';
import { realpath } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { setImmediate } from 'node:timers';
import { resolveModule } from '../../guard/contain.ts';
import { type ChildLimits, holdChild, pacedReader, residentBytes, startChild } from './child.ts';
import { EarliestDeadline } from './earliest-deadline.ts';
import { loadRefusal } from './loadable.ts';
import { type PoolSettings, poolSettings, type TransformChildPoolOptions } from './pool-options.ts';
import {
  encodeCall,
  encodeInput,
  frameAt,
  parseAnswer,
  type TransformFailure,
  type TransformInput,
  type TransformRef,
  type TransformResult,
} from './protocol.ts';

/** Runs operator transforms in sandboxed child processes; never throws for a failing transform. */
export interface TransformChildPool {
  run(ref: TransformRef, input: TransformInput): Promise<TransformResult>;
  /** Loads a transform and checks its export is a function, without calling it. */
  probe(ref: TransformRef): Promise<TransformResult>;
  /** The next call of every transform loads its module afresh (in a new child). */
  clearCache(): void;
  close(): Promise<void>;
}

interface Job {
  id: number;
  module: string;
  name: string | null;
  /** `null` for a probe. */
  input: string | null;
  /** When it was queued: the time budget covers the wait for a free child too. */
  queuedAt: number;
  done: (result: TransformResult) => void;
  /** Runs on a child of its own: it was in flight on a child that died of something no one call can be blamed for. */
  alone: boolean;
}

/** A message sent to a child and not yet answered. */
interface InFlight {
  job: Job;
  /** When the child is killed if it has not answered (performance.now()); Infinity while a starting slot checks containment, before anything is sent. */
  deadline: number;
  /** What the call is answered when its deadline passes. */
  late: string;
  then: (result: TransformResult) => void;
}

interface Slot {
  module: string;
  url: string;
  child: ChildProcessWithoutNullStreams | null;
  /** Until the child has imported its module, a slot is starting. */
  ready: boolean;
  /** By job id; more than one once every child of the module is busy (see CALLS_PER_CHILD). */
  calls: Map<number, InFlight>;
  /** Lines for the child's stdin, written together at the end of this turn. */
  out: string;
  /** Bytes of stdout not yet ending in a newline. */
  pending: string;
  /** Why we ended the child, when we did (the exit then reports this), and the call it is about, if one. */
  killed: TransformResult | null;
  /** The call named by the kill, else the only call in flight then; null with several and none named. */
  culprit: number | null;
  stderr: string;
  stale: boolean;
  /** Whether the child's handles keep the process alive (as a new child's do); changed only when it changes. */
  held: boolean;
}

const MiB = 1024 * 1024;
/**
 * Calls one child holds at once. A child takes a second call only when every child the pool may
 * have for its module is busy: then calls share a child, its stdin gets their lines in one write
 * and its answers come back together, instead of a round trip between two processes per call.
 */
export const CALLS_PER_CHILD = 8;
const _closed: TransformResult = Object.freeze({
  ok: false,
  reason: 'crashed',
  detail: 'the transform runner is closed',
});
const _OUTPUT_LINE_MAX = 500;

/**
 * Creates a pool of child processes that load transform modules from `root` and call them. A
 * child serves one module only, so nothing a call of one mapping's module leaves behind
 * (listeners, timers, patched globals) reaches another module's calls; idle children of other
 * modules make room when the pool is full. Containment is checked once, before a child imports
 * its module: a module already imported cannot be swapped under it. A call that overruns its
 * time, a child that passes its memory cap, or one that writes a result over the byte cap is
 * killed and a fresh one started for the next call. Under load, calls of one module share its
 * children (CALLS_PER_CHILD); a call is never answered for what another did: when a child dies
 * with several calls in flight, the one that overran its time gets the answer and the others
 * run again within their own budgets, each on a child of its own when no one call can be blamed.
 */
export function createTransformChildPool(options: TransformChildPoolOptions): TransformChildPool {
  return new _Pool(options);
}

class _Pool implements TransformChildPool {
  readonly #settings: PoolSettings;
  readonly #start: (limits: ChildLimits) => ChildProcessWithoutNullStreams;
  readonly #onOutput: ((module: string, line: string) => void) | undefined;
  readonly #slots: Slot[] = [];
  readonly #queue: Job[] = [];
  // Slots with lines to write at the end of this turn.
  readonly #unwritten = new Set<Slot>();
  #lastId = 0;
  // The transforms root as a real path, once a child was started.
  #realRoot: string | undefined;
  #closed = false;
  #watch: ReturnType<typeof setInterval> | undefined;
  #ticks = 0;
  // One timer for every call in flight; it holds the process open only while some call is in flight.
  readonly #deadlines = new EarliestDeadline((now) => this.#expire(now));

  constructor(options: TransformChildPoolOptions) {
    this.#settings = poolSettings(options);
    this.#start = options.start ?? startChild;
    this.#onOutput = options.onOutput;
  }

  // Arrow properties: callers hand these around detached from the pool.
  readonly run = (ref: TransformRef, input: TransformInput): Promise<TransformResult> => this.#submit(ref, input);
  readonly probe = (ref: TransformRef): Promise<TransformResult> => this.#submit(ref, null);

  clearCache(): void {
    // ESM module records cannot be unloaded, and a `?v=N` import would re-read only the entry
    // file, not what it imports: fresh children do neither.
    for (const slot of [...this.#slots]) {
      if (slot.calls.size === 0) this.#retire(slot);
      else slot.stale = true;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#deadlines.stop();
    for (const job of this.#queue.splice(0)) job.done(_closed);
    const exits = this.#slots.map((slot) => {
      const child = slot.child;
      return child === null || child.exitCode !== null
        ? Promise.resolve()
        : new Promise<void>((resolve) => child.once('exit', () => resolve()));
    });
    for (const slot of [...this.#slots]) {
      const calls = [...slot.calls.values()];
      _hold(slot, true); // held until it has exited
      this.#retire(slot);
      for (const call of calls) call.job.done(_closed);
    }
    await Promise.all(exits);
  }

  #submit(ref: TransformRef, input: TransformInput | null): Promise<TransformResult> {
    if (this.#closed) return Promise.resolve(_closed);
    let json: string | null;
    try {
      // Serialised here, once: an input JSON cannot carry is a caller bug, not a transform failure.
      json = input === null ? null : encodeInput(input);
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise((done) => {
      this.#queue.push({
        id: ++this.#lastId,
        module: ref.module,
        name: ref.export ?? null,
        input: json,
        queuedAt: performance.now(),
        done,
        alone: false,
      });
      this.#pump();
    });
  }

  #pump(): void {
    const { timeoutMs } = this.#settings;
    const queue = this.#queue;
    for (let i = 0; i < queue.length; i++) {
      const job = queue[i]!;
      // Calls that waited out their whole budget behind busy children are answered now, not run late.
      if (performance.now() - job.queuedAt >= timeoutMs) {
        queue.splice(i--, 1);
        job.done(_fail('timeout', `no child was free within ${timeoutMs} ms`));
        continue;
      }
      const slot = this.#slotFor(job);
      if (slot === null) continue;
      queue.splice(i--, 1);
      if (slot.ready) this.#call(slot, job);
      else void this.#open(slot, job);
    }
  }

  // An idle child of the module, else a new one, else a busy one with room for another call.
  #slotFor(job: Job): Slot | null {
    const usable = (s: Slot) => s.ready && !s.stale && s.killed === null && s.module === job.module;
    const idle = this.#slots.find((s) => usable(s) && s.calls.size === 0);
    if (idle !== undefined) return idle;
    const fresh = this.#makeRoom(job.module);
    if (fresh !== null || job.alone) return fresh;
    let least: Slot | null = null;
    for (const s of this.#slots) {
      if (!usable(s) || s.calls.size >= CALLS_PER_CHILD || _holdsAlone(s)) continue;
      if (least === null || s.calls.size < least.calls.size) least = s;
    }
    return least;
  }

  // A new slot for `module` when the pool has room, or when an idle child of another module can go.
  #makeRoom(module: string): Slot | null {
    if (this.#slots.length >= this.#settings.poolSize) {
      if (this.#slots.some((s) => s.module === module)) return null;
      const idle = this.#slots.find((s) => s.calls.size === 0 && s.ready);
      if (idle === undefined) return null;
      this.#retire(idle);
    }
    const slot: Slot = {
      module,
      url: '',
      child: null,
      ready: false,
      calls: new Map(),
      out: '',
      pending: '',
      killed: null,
      culprit: null,
      stderr: '',
      stale: false,
      held: true,
    };
    this.#slots.push(slot);
    return slot;
  }

  // Checks containment, starts the child and has it import the module (its own time bound), then makes the call.
  async #open(slot: Slot, job: Job): Promise<void> {
    // Taken while containment is checked: no other call is placed on a slot that is starting.
    slot.calls.set(job.id, { job, deadline: Infinity, late: '', then: job.done });
    const found = await resolveModule(this.#settings.root, job.module);
    const { root, runtime } = this.#settings;
    // The child imports real paths: where its errors were raised is named from the real root.
    this.#realRoot ??= await realpath(root).catch(() => root);
    const refused = this.#closed ? _closed : loadRefusal(found, root, runtime);
    if (refused !== null || !found.ok) {
      this.#drop(slot);
      job.done(refused ?? _closed);
      return this.#pump();
    }
    slot.calls.delete(job.id);
    slot.url = pathToFileURL(found.path).href;
    this.#spawn(slot);
    const waited = performance.now() - job.queuedAt;
    const { startTimeoutMs } = this.#settings;
    this.#send(
      slot,
      job,
      { probe: true },
      startTimeoutMs,
      `the module did not load within ${startTimeoutMs} ms`,
      (result) => {
        if (!result.ok) {
          job.done(result);
          return this.#retire(slot);
        }
        // Made stale while it started (a reload), and so retired: a fresh child takes the call.
        if (slot.stale) return void this.#queue.unshift(job);
        slot.ready = true;
        if (job.input === null) return job.done(result);
        // The call gets the budget it had left when the child began to start.
        job.queuedAt = performance.now() - waited;
        this.#call(slot, job);
      },
    );
  }

  #call(slot: Slot, job: Job): void {
    const { timeoutMs } = this.#settings;
    const left = Math.max(1, timeoutMs - (performance.now() - job.queuedAt));
    // A probe (no input) that finds its module's child up only loads it there: the transform is not called.
    this.#send(slot, job, { probe: job.input === null }, left, `no answer within ${timeoutMs} ms`, job.done);
  }

  #send(
    slot: Slot,
    job: Job,
    { probe }: { probe: boolean },
    budget: number,
    late: string,
    then: (result: TransformResult) => void,
  ): void {
    const deadline = performance.now() + budget;
    slot.calls.set(job.id, { job, deadline, late, then });
    this.#deadlines.add(deadline);
    _hold(slot, true);
    slot.out += encodeCall({
      id: job.id,
      url: slot.url,
      name: job.name,
      probe,
      max: this.#settings.maxResultBytes,
      input: job.input,
    });
    if (this.#unwritten.size === 0) setImmediate(this.#write);
    this.#unwritten.add(slot);
  }

  // Once per turn: every call placed on a child during the turn reaches it in one write.
  readonly #write = (): void => {
    // Taken before writing: a write that leads to another call on the slot queues that call anew.
    const slots = [...this.#unwritten];
    this.#unwritten.clear();
    for (const slot of slots) {
      const text = slot.out;
      slot.out = '';
      if (text !== '') slot.child?.stdin.write(text);
    }
  };

  #answered(slot: Slot, id: number, result: TransformResult): void {
    const call = slot.calls.get(id);
    if (call === undefined) return;
    slot.calls.delete(id);
    if (slot.stale && slot.calls.size === 0) this.#retire(slot);
    call.then(result);
    this.#pump();
    // An idle child must not keep the process alive; one that took the next call stays held.
    if (slot.calls.size === 0) {
      if (!slot.stale) _hold(slot, false);
      this.#release();
    }
  }

  #spawn(slot: Slot): void {
    const { root, heapMb, runtime } = this.#settings;
    const child = this.#start({ root, heapMb, runtime });
    slot.child = child;
    child.stdin.on('error', () => {}); // a child that died mid-write is reported by its exit
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => this.#read(slot, chunk));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', pacedReader(child.stderr, (chunk: string) => this.#output(slot, chunk)));
    child.on('error', (error) => this.#exited(slot, `the child could not run: ${error.message}`));
    child.on(
      'exit',
      (code, signal) =>
        this.#exited(slot, signal === null ? `the child exited with code ${code}` : `the child was ended by ${signal}`),
    );
    this.#watch ??= setInterval(() => this.#measure(), 25);
    this.#watch.unref?.();
  }

  #read(slot: Slot, chunk: string): void {
    const { maxResultBytes } = this.#settings;
    slot.pending += chunk;
    for (let end = slot.pending.indexOf('\n'); end !== -1; end = slot.pending.indexOf('\n')) {
      const line = slot.pending.slice(0, end);
      slot.pending = slot.pending.slice(end + 1);
      const message = parseAnswer(line);
      if (message === null) {
        return this.#kill(
          slot,
          _fail('crashed', 'the transform wrote to the protocol channel (stdout); use console instead'),
        );
      }
      const { result, where } = message;
      this.#answered(
        slot,
        message.id,
        where === undefined || result.ok
          ? result
          : { ...result, at: frameAt(where, this.#realRoot ?? this.#settings.root) },
      );
    }
    // The cap holds for what arrives, not only for what the child says it sends.
    if (Buffer.byteLength(slot.pending) > maxResultBytes + 1024) {
      this.#kill(slot, _fail('too-large', `the result is larger than ${maxResultBytes} bytes`));
    }
  }

  #output(slot: Slot, chunk: string): void {
    slot.stderr = (slot.stderr + chunk).slice(-4096);
    if (this.#onOutput === undefined) return;
    for (const line of chunk.split('\n')) {
      if (line.trim() !== '') this.#onOutput(slot.module, line.slice(0, _OUTPUT_LINE_MAX));
    }
  }

  #exited(slot: Slot, how: string): void {
    if (!this.#drop(slot)) return; // retired on purpose
    const oom = /out of memory|Array buffer allocation failed/i.test(slot.stderr);
    const result = slot.killed ??
      _fail('crashed', oom ? `ran out of memory (heap limit ${this.#settings.heapMb} MiB)` : how);
    const calls = [...slot.calls.values()];
    slot.calls.clear();
    // One call in flight, or the one that overran its time, gets the answer. The others did not end
    // the child: they go back to the front of the queue, within what is left of their own budgets,
    // and when no one call can be blamed, each runs on a child of its own.
    // A kill is about the call it named (which may have answered in the meantime); an exit nobody
    // asked for, about the call in flight if there is only one.
    const culprit = slot.killed !== null ? slot.culprit : calls.length === 1 ? calls[0]!.job.id : null;
    const blamed = calls.find((c) => c.job.id === culprit);
    const again: Job[] = [];
    for (const call of calls) {
      if (call === blamed) continue;
      if (culprit === null) call.job.alone = true;
      again.push(call.job);
    }
    this.#queue.unshift(...again);
    blamed?.then(result);
    this.#pump();
    this.#release();
  }

  #kill(slot: Slot, why: TransformResult, culprit: number | null = null): void {
    if (slot.killed !== null) return;
    slot.killed = why;
    slot.culprit = culprit ?? (slot.calls.size === 1 ? slot.calls.keys().next().value! : null);
    slot.child?.kill('SIGKILL');
  }

  #drop(slot: Slot): boolean {
    const index = this.#slots.indexOf(slot);
    if (index !== -1) this.#slots.splice(index, 1);
    if (this.#slots.length === 0) {
      clearInterval(this.#watch);
      this.#watch = undefined;
    }
    return index !== -1;
  }

  #retire(slot: Slot): void {
    this.#drop(slot);
    slot.calls.clear();
    slot.child?.kill('SIGKILL');
  }

  // With no call in flight, the deadline timer no longer holds the process open.
  #release(): void {
    if (!this.#slots.some((s) => s.calls.size > 0)) this.#deadlines.idle();
  }

  // Kills the child of every call whose deadline has passed (a killed child's calls are answered
  // at its exit); the earliest deadline left is the next to wait for.
  #expire(now: number): number {
    let next = Infinity;
    for (const slot of [...this.#slots]) {
      if (slot.killed !== null) continue;
      for (const [id, call] of slot.calls) {
        if (call.deadline > now) {
          next = Math.min(next, call.deadline);
          continue;
        }
        this.#kill(slot, _fail('timeout', call.late), id);
        break;
      }
    }
    return next;
  }

  // Busy children every tick, idle ones (a timer of theirs could still allocate) every tenth.
  #measure(): void {
    const { memoryMb } = this.#settings;
    this.#ticks++;
    // A copy: a kill takes its slot out of the list.
    for (const slot of [...this.#slots]) {
      const pid = slot.child?.pid;
      if (pid === undefined || (slot.calls.size === 0 && this.#ticks % 10 !== 0)) continue;
      const bytes = residentBytes(pid);
      if (bytes !== null && bytes > memoryMb * MiB) {
        this.#kill(slot, _fail('crashed', `ran out of memory (resident memory over ${memoryMb} MiB)`));
      }
    }
  }
}

function _holdsAlone(slot: Slot): boolean {
  for (const call of slot.calls.values()) if (call.job.alone) return true;
  return false;
}

function _fail(reason: TransformFailure, detail: string): TransformResult {
  return { ok: false, reason, detail };
}

// An idle child must not hold the event loop open: changed only when the slot's state changes.
function _hold(slot: Slot, on: boolean): void {
  if (slot.held === on || slot.child === null) return;
  slot.held = on;
  holdChild(slot.child, on);
}
