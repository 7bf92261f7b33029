// Test helper: tables of cases. Each entry of a table is one test, named by its key (the rule its
// cases show); `check` runs over every case in order and names the case in its assertion
// messages, so a failure says which rule and which case.
import { test } from 'node:test';

/** One test per entry of `table`, titled by its key, checking each of its cases in order. */
export function testTable<C>(table: Record<string, readonly C[]>, check: (c: C) => void | Promise<void>): void {
  for (const [title, cases] of Object.entries(table)) {
    test(title, async () => {
      for (const c of cases) await check(c);
    });
  }
}
