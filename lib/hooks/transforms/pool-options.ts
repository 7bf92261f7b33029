// What a transform child pool is built with: each option checked once, when the pool is made,
// then defaulted.

import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { type ChildLimits, currentRuntime, type Runtime } from './child.ts';

/** Where transforms live and what each call may spend. */
export interface TransformChildPoolOptions {
  root: string;
  /** Per call, from the moment it is queued until its answer; a child's start is bounded apart. */
  timeoutMs?: number;
  /** How long starting a child and importing its module may take. */
  startTimeoutMs?: number;
  /** V8 heap cap of each child, in MiB. */
  heapMb?: number;
  /** Resident memory (heap, Buffers, ArrayBuffers, code) a child may hold before it is killed, in MiB. */
  memoryMb?: number;
  /** Bytes of one call's result, as JSON. */
  maxResultBytes?: number;
  /** Children alive at once, across all modules. */
  poolSize?: number;
  /** The runtime children run on; the server's own by default. */
  runtime?: Runtime;
  /** What a child writes on stderr (its console), one line at a time. */
  onOutput?: (module: string, line: string) => void;
  /** Starts a child; tests hand in their own. */
  start?: (limits: ChildLimits) => ChildProcessWithoutNullStreams;
}

/** The pool's limits with their defaults applied. */
export type PoolSettings = ReturnType<typeof poolSettings>;

const _MiB = 1024 * 1024;

/** Checks the options a pool is built with (a TypeError or RangeError names the one that is wrong) and applies the defaults. */
export function poolSettings(options: TransformChildPoolOptions) {
  const {
    root,
    timeoutMs = 5000,
    heapMb = 64,
    memoryMb = 256,
    maxResultBytes = _MiB,
    poolSize = 4,
    runtime = currentRuntime(),
  } = options;
  const startTimeoutMs = options.startTimeoutMs ?? Math.max(timeoutMs, 10_000);
  if (typeof root !== 'string' || root === '') {
    throw new TypeError(`Invalid transforms root: expected a non-empty string, got ${String(root)}`);
  }
  for (
    const [name, value] of Object.entries({ timeoutMs, startTimeoutMs, heapMb, memoryMb, maxResultBytes, poolSize })
  ) _requirePositive(name, value);
  if (!Number.isInteger(poolSize)) {
    throw new RangeError(`Invalid transform runner option poolSize: expected an integer, got ${poolSize}`);
  }
  return { root, timeoutMs, startTimeoutMs, heapMb, memoryMb, maxResultBytes, poolSize, runtime };
}

function _requirePositive(name: string, value: number): void {
  if (!(Number.isFinite(value) && value > 0)) {
    throw new RangeError(`Invalid transform runner option ${name}: expected a positive number, got ${String(value)}`);
  }
}
