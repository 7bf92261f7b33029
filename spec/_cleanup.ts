// Test helper: cleanups that run last-registered first when a test ends, so a server closes
// before its store, and the store before its directory goes.
import type { TestContext } from 'node:test';

const _stacks = new WeakMap<object, (() => unknown)[]>();

/**
 * Registers `fn` to run after test `t`, before every cleanup registered earlier. Every cleanup
 * of a test goes through here rather than `t.after`: the runner runs `after` hooks in the order
 * they were added and skips the rest once one throws, so a directory removed before the server
 * writing into it was stopped both failed and left the server running (the file then waited on
 * it for ever).
 */
export function defer(t: TestContext, fn: () => unknown): void {
  let stack = _stacks.get(t);
  if (stack === undefined) {
    const fresh: (() => unknown)[] = [];
    _stacks.set(t, fresh);
    t.after(() => runCleanups(fresh));
    stack = fresh;
  }
  stack.push(fn);
}

/**
 * Runs `cleanups` last first, each one even when one before it failed, then throws what failed
 * (the one error, or an AggregateError of them all).
 */
export async function runCleanups(cleanups: readonly (() => unknown)[]): Promise<void> {
  const failures: unknown[] = [];
  for (const cleanup of [...cleanups].reverse()) {
    try {
      await cleanup();
    } catch (error) {
      failures.push(error);
    }
  }
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) throw new AggregateError(failures, `${failures.length} cleanups failed`);
}
