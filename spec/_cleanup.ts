// Test helper: cleanups that run last-registered first when a test ends, so a server closes
// before its store, and the store before its directory goes.
import type { TestContext } from 'node:test';

const _stacks = new WeakMap<object, (() => unknown)[]>();

/** Registers `fn` to run after test `t`, before every cleanup registered earlier. */
export function defer(t: TestContext, fn: () => unknown): void {
  let stack = _stacks.get(t);
  if (stack === undefined) {
    const fresh: (() => unknown)[] = [];
    _stacks.set(t, fresh);
    t.after(async () => {
      for (const cleanup of fresh.reverse()) await cleanup();
    });
    stack = fresh;
  }
  stack.push(fn);
}
