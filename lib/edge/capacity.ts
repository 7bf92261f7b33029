// The edge's capacity, what a request may add before it is recorded: bounds checked at the door,
// so that nothing acknowledged ever has to be dropped later to stay within them.

import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { Store } from '../store/journal/store.ts';
import type { NoticeRecord, RunRecord } from '../model/records.ts';
import { JournalReplacedError } from '../store/journal/journal.ts';
import type { RunSpec } from '../model/actions.ts';
import { workControls, workHook } from '../model/work-hook.ts';

/** The agent runtime's queue as admission sees it. */
export interface RunQueue {
  enqueue(run: RunRecord): void;
  /** Sends a notify mapping's delivery beside the queue (it takes no run slot). */
  notify?(notice: NoticeRecord): void;
  /** Runs waiting plus runs executing. */
  readonly depth: number;
  /** Runs of one work hook (lib/model/work-hook.ts) waiting plus executing. */
  depthOf?(hook: string): number;
}

// Slots held for runs whose commit is still being written, per queue (so they outlive a reload,
// which builds a new commit around the same queue).
const _reserved = new WeakMap<RunQueue, number>();

/**
 * Holds `count` slots of the run queue for a request about to commit its runs, or answers 503
 * when the queue (runs waiting, executing, and held by requests still committing) would pass
 * `hooks.maxQueuedRuns`. Synchronous, so requests arriving together cannot all pass on the same
 * depth. The returned `release` is called once the runs are in the queue or the commit failed.
 */
export function reserveRuns(queue: RunQueue | undefined, count: number, config: Config): () => void {
  if (queue === undefined || count === 0) return () => {};
  const held = _reserved.get(queue) ?? 0;
  if (queue.depth + held + count > config.hooks.maxQueuedRuns) {
    throw new HttpError(503, ErrorCode.Unavailable, 'too many runs queued (hooks.maxQueuedRuns); retry later', {
      headers: { 'retry-after': '30' },
    });
  }
  _reserved.set(queue, held + count);
  return () => void _reserved.set(queue, (_reserved.get(queue) ?? count) - count);
}

// Slots held per work hook, as `_reserved` holds them for the whole queue.
const _reservedByHook = new WeakMap<RunQueue, Map<string, number>>();
const _NOTHING_HELD = () => {};

/**
 * Holds slots of each hook's own backlog for the runs a request is about to commit, or answers 503
 * (`ERR_HOOK_BACKLOG`) when a hook's runs waiting, executing and held would pass its `maxQueued`;
 * other hooks are unaffected. Nothing is counted when no hook sets a `maxQueued`.
 */
export function reserveHookRuns(queue: RunQueue | undefined, runs: readonly RunSpec[], config: Config): () => void {
  if (runs.length === 0 || queue?.depthOf === undefined) return _NOTHING_HELD;
  const controls = workControls(config.hooks);
  if (controls.size === 0) return _NOTHING_HELD;
  const wanted = new Map<string, number>();
  for (const run of runs) {
    const hook = workHook(run, 'agent');
    if (controls.get(hook)?.maxQueued !== undefined) wanted.set(hook, (wanted.get(hook) ?? 0) + 1);
  }
  if (wanted.size === 0) return _NOTHING_HELD;
  const held = _reservedByHook.get(queue) ?? new Map<string, number>();
  _reservedByHook.set(queue, held);
  for (const [hook, count] of wanted) {
    const max = controls.get(hook)!.maxQueued!;
    if (queue.depthOf(hook) + (held.get(hook) ?? 0) + count > max) {
      throw new HttpError(
        503,
        ErrorCode.HookBacklog,
        `too many runs of hook ${JSON.stringify(hook)} queued (its maxQueued, ${max}); retry later`,
        { headers: { 'retry-after': '30' } },
      );
    }
  }
  for (const [hook, count] of wanted) held.set(hook, (held.get(hook) ?? 0) + count);
  return () => {
    for (const [hook, count] of wanted) {
      const left = (held.get(hook) ?? count) - count;
      if (left > 0) held.set(hook, left);
      else held.delete(hook);
    }
  };
}

/**
 * Refuses wake texts past `hooks.maxEventBytes` (413, naming the field), and any new wake while
 * the unconsumed backlog is at `hooks.maxBacklogEvents` or `hooks.maxBacklogBytes` (503 with
 * Retry-After): backpressure instead of dropping events nobody has read yet.
 */
export function admitEvents(
  store: Pick<Store, 'backlog'>,
  config: Config,
  texts: readonly string[],
  field: (index: number) => string,
): void {
  if (texts.length === 0) return;
  const { maxEventBytes, maxBacklogEvents, maxBacklogBytes } = config.hooks;
  let bytes = 0;
  texts.forEach((text, i) => {
    const size = Buffer.byteLength(text);
    if (size > maxEventBytes) {
      throw new HttpError(
        413,
        ErrorCode.FieldTooLarge,
        `${field(i)}: is ${size} bytes; the limit is ${maxEventBytes} (hooks.maxEventBytes)`,
      );
    }
    bytes += size;
  });
  const backlog = store.backlog();
  if (backlog.events + texts.length > maxBacklogEvents || backlog.bytes + bytes > maxBacklogBytes) {
    throw new HttpError(
      503,
      ErrorCode.Unavailable,
      'too many events not yet read by a heartbeat (hooks.maxBacklogEvents, hooks.maxBacklogBytes); retry later',
      {
        headers: { 'retry-after': '30' },
      },
    );
  }
}

/** A commit refused because the journal was gone or replaced: 503, to be retried once it is rewritten. */
export function unavailable(error: unknown): unknown {
  if (!(error instanceof JournalReplacedError)) return error;
  return new HttpError(
    503,
    ErrorCode.Unavailable,
    'the journal is being rewritten; nothing was recorded, retry shortly',
    { headers: { 'retry-after': '1' }, cause: error },
  );
}
