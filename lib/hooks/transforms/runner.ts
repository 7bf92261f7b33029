import { extname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { resolveModule } from '../../guard/contain.ts';
import { WORKER_SOURCE } from './worker-source.ts';

/** Which transform a mapping calls: a module (a real path inside the root) and an optional export name. */
export interface TransformRef {
  module: string;
  export?: string;
}

/** What a transform receives, deep-frozen. */
export interface TransformInput {
  payload: unknown;
  headers: Record<string, string>;
  query: Record<string, string>;
  path: string;
}

/** Why a transform call produced no value. */
export type TransformFailure =
  | 'threw'
  | 'timeout'
  | 'crashed'
  | 'not-a-function'
  | 'load-failed'
  | 'unsupported-ts'
  | 'escaped';

/** The transform's return value (`null` or `undefined` mean skip), or why there is none. */
export type TransformResult =
  | { ok: true; value: unknown }
  | { ok: false; reason: TransformFailure; detail: string };

/** Where transforms live and what each call may spend. */
export interface TransformRunnerOptions {
  root: string;
  /** Per call, from the moment a worker takes it (module loading included). */
  timeoutMs?: number;
  maxOldGenerationSizeMb?: number;
  poolSize?: number;
}

/** Runs operator transforms in worker threads; never throws for a failing transform. */
export interface TransformRunner {
  run(ref: TransformRef, input: TransformInput): Promise<TransformResult>;
  /** Loads a transform and checks its export is a function, without calling it. */
  probe(ref: TransformRef): Promise<TransformResult>;
  /** The next call of every transform re-imports its module (and everything it imports). */
  clearCache(): void;
  close(): Promise<void>;
}

interface Job {
  id: number;
  url: string;
  name: string | null;
  input: TransformInput | null;
  /** When it was queued: the time budget covers the wait for a free worker too. */
  queuedAt: number;
  done: (result: TransformResult) => void;
  fail: (error: unknown) => void;
}

interface Slot {
  worker: Worker;
  job: Job | null;
  timer: ReturnType<typeof setTimeout> | undefined;
  error: unknown;
  stale: boolean;
}

const _closed: TransformResult = Object.freeze({
  ok: false,
  reason: 'crashed',
  detail: 'the transform runner is closed',
});

/**
 * Creates a pool of worker threads that load transform modules from `root` and call them. Each
 * worker takes one call at a time; further calls wait in order. A call that overruns its time,
 * or a worker that runs out of memory or exits, costs that worker: it is terminated and a fresh
 * one is started for the next call.
 */
export function createTransformRunner(options: TransformRunnerOptions): TransformRunner {
  const { root, timeoutMs = 5000, maxOldGenerationSizeMb = 64, poolSize = 2 } = options;
  if (typeof root !== 'string' || root === '') {
    throw new TypeError(`Invalid transforms root: expected a non-empty string, got ${String(root)}`);
  }
  _requirePositive('timeoutMs', timeoutMs);
  _requirePositive('maxOldGenerationSizeMb', maxOldGenerationSizeMb);
  _requirePositive('poolSize', poolSize);
  if (!Number.isInteger(poolSize)) {
    throw new RangeError(`Invalid transform runner option poolSize: expected an integer, got ${poolSize}`);
  }

  const slots: Slot[] = [];
  const queue: Job[] = [];
  let lastId = 0;
  let closed = false;

  function spawn(): Slot {
    // env: {} keeps the server's environment (tokens, keys) out of operator code.
    const resourceLimits = { maxOldGenerationSizeMb };
    const worker = new Worker(WORKER_SOURCE, { eval: true, env: {}, resourceLimits });
    const slot: Slot = { worker, job: null, timer: undefined, error: undefined, stale: false };
    worker.on('message', (message: { id: number; result: TransformResult }) => {
      if (slot.job?.id === message.id) settle(slot, slot.job, message.result);
    });
    worker.on('error', (error) => {
      slot.error = error;
    });
    worker.on('exit', (code) => {
      if (!drop(slot)) return; // retired on purpose
      const detail = _exitDetail(slot.error, code, maxOldGenerationSizeMb);
      slot.job?.done({ ok: false, reason: 'crashed', detail });
      pump();
    });
    slots.push(slot);
    return slot;
  }

  function drop(slot: Slot): boolean {
    clearTimeout(slot.timer);
    const index = slots.indexOf(slot);
    if (index !== -1) slots.splice(index, 1);
    return index !== -1;
  }

  function retire(slot: Slot): Promise<unknown> {
    drop(slot);
    slot.job = null;
    return slot.worker.terminate();
  }

  function settle(slot: Slot, job: Job, result: TransformResult): void {
    clearTimeout(slot.timer);
    slot.job = null;
    if (slot.stale) void retire(slot);
    else slot.worker.unref(); // an idle worker must not keep the process alive
    job.done(result);
    pump();
  }

  function pump(): void {
    // Calls that waited out their whole budget behind busy workers are answered now, not run late.
    while (queue.length > 0 && performance.now() - queue[0]!.queuedAt >= timeoutMs) {
      queue.shift()!.done({ ok: false, reason: 'timeout', detail: `no worker was free within ${timeoutMs} ms` });
    }
    while (queue.length > 0) {
      const slot = slots.find((candidate) => candidate.job === null && !candidate.stale)
        ?? (slots.length < poolSize ? spawn() : undefined);
      if (slot === undefined) return;
      dispatch(slot, queue.shift() as Job);
    }
  }

  function dispatch(slot: Slot, job: Job): void {
    slot.job = job;
    slot.worker.ref();
    const left = Math.max(1, timeoutMs - (performance.now() - job.queuedAt));
    slot.timer = setTimeout(() => {
      void retire(slot);
      job.done({ ok: false, reason: 'timeout', detail: `no answer within ${timeoutMs} ms` });
      pump();
    }, left);
    try {
      slot.worker.postMessage({ id: job.id, url: job.url, name: job.name, input: job.input, probe: job.input === null });
    } catch (error) {
      // An input that cannot be cloned is a caller bug, not a transform failure.
      clearTimeout(slot.timer);
      slot.job = null;
      slot.worker.unref();
      job.fail(error);
    }
  }

  const submit = async (ref: TransformRef, input: TransformInput | null): Promise<TransformResult> => {
    if (closed) return _closed;
    const found = await resolveModule(root, ref.module);
    if (!found.ok) {
      return { ok: false, reason: found.code === 'outside' ? 'escaped' : 'load-failed', detail: found.reason };
    }
    const unsupported = _unsupported(found.path);
    if (unsupported !== null) return unsupported;
    if (closed) return _closed;
    return new Promise((done, fail) => {
      const name = ref.export ?? null;
      queue.push({ id: ++lastId, url: pathToFileURL(found.path).href, name, input, queuedAt: performance.now(), done, fail });
      pump();
    });
  };

  return {
    run: (ref, input) => submit(ref, input),
    probe: (ref) => submit(ref, null),

    clearCache() {
      // ESM module records cannot be unloaded, and a `?v=N` import would re-read only the entry
      // file, not what it imports, and keep every old version in memory: fresh workers do neither.
      for (const slot of [...slots]) {
        if (slot.job === null) void retire(slot);
        else slot.stale = true;
      }
    },

    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.done(_closed);
      await Promise.all(
        [...slots].map((slot) => {
          slot.job?.done(_closed);
          return retire(slot);
        }),
      );
    },
  };
}

function _unsupported(path: string): TransformResult | null {
  const extension = extname(path);
  if (extension === '.js' || extension === '.mjs') return null;
  if (extension === '.ts' || extension === '.mts') {
    if (_canStripTypes()) return null;
    const detail = `this runtime cannot load TypeScript (Node ${process.versions.node}): `
      + 'precompile the transform to .js, or run on Node >= 22.18 or Deno';
    return { ok: false, reason: 'unsupported-ts', detail };
  }
  const detail = `only .js, .mjs and .ts modules can be transforms, not ${extension || 'a file without extension'}`;
  return { ok: false, reason: 'load-failed', detail };
}

function _canStripTypes(): boolean {
  // process.features.typescript (Node >= 22.10) says whether stripping is on, which the version
  // alone does not: 22.6 to 22.17 need --experimental-strip-types, and it can be turned off.
  const features = process.features as { typescript?: unknown };
  return 'Deno' in globalThis || Boolean(features.typescript);
}

function _exitDetail(error: unknown, code: number, limitMb: number): string {
  if (!(error instanceof Error)) return `the worker exited with code ${code}`;
  const oom = (error as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY';
  return oom ? `ran out of memory (limit ${limitMb} MB)` : `the worker stopped: ${error.message}`;
}

function _requirePositive(name: string, value: number): void {
  if (!(Number.isFinite(value) && value > 0)) {
    throw new RangeError(`Invalid transform runner option ${name}: expected a positive number, got ${String(value)}`);
  }
}
