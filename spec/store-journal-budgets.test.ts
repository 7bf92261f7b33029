import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { JOURNAL_FILE } from '../lib/store/journal/lines.ts';
import { Budgets } from '../lib/store/journal/budgets.ts';
import { Store } from '../lib/store/journal/store.ts';
import { withDir } from './_dir.ts';

test('Budgets adds the charges of each line per hook and day, marks a day told, and takes back a line never written', () => {
  const budgets = new Budgets();
  budgets.apply([{ hook: 'ci', day: '2026-11-27', runs: 2 }, { hook: 'agent', day: '2026-11-27', runs: 1 }]);
  budgets.apply([{ hook: 'ci', day: '2026-11-27', runs: 1 }, { hook: 'ci', day: '2026-11-27', runs: 0, told: true }]);
  assert.deepEqual([budgets.used('ci', '2026-11-27'), budgets.told('ci', '2026-11-27')], [3, true]);
  assert.deepEqual([budgets.used('agent', '2026-11-27'), budgets.told('agent', '2026-11-27')], [1, false]);
  budgets.forget([{ hook: 'ci', day: '2026-11-27', runs: 1 }]);
  assert.equal(budgets.used('ci', '2026-11-27'), 2);
  assert.equal(budgets.used('ci', '2026-11-28'), 0);
});

test('Budgets keeps the latest three days of a hook', () => {
  const budgets = new Budgets();
  for (const day of ['2026-11-24', '2026-11-25', '2026-11-26', '2026-11-27']) {
    budgets.apply([{ hook: 'ci', day, runs: 1 }]);
  }
  assert.deepEqual(budgets.snapshot().map((c) => c.day), ['2026-11-25', '2026-11-26', '2026-11-27']);
});

test('Store keeps the budgets across a reopen and a compaction: a spent budget does not reset', async () => {
  await withDir(async (dir) => {
    const options = { idempotencyTtlMs: 60_000, compactBytes: 1_500 };
    let store = (await Store.open(dir, options)).store;
    await store.commit({ budget: [{ hook: 'ci', day: '2026-11-27', runs: 3 }] });
    await store.commit({
      events: [{ kind: 'system', text: 'Budget reached', source: 'budget' }],
      budget: [{ hook: 'ci', day: '2026-11-27', runs: 0, told: true }],
    });
    await store.close();
    store = (await Store.open(dir, options)).store;
    assert.deepEqual(store.budget('ci', '2026-11-27'), { used: 3, told: true });
    // Lines enough to compact the journal (more than once), which then holds the budgets as one line.
    let commits = 2;
    for (; store.stats().journalBytes < options.compactBytes * 3 || commits < 60; commits++) {
      await store.commit({ lastRoute: { channel: 'telegram', to: `${commits} ${'x'.repeat(100)}` } });
    }
    await store.close();
    const lines = (await readFile(join(dir, JOURNAL_FILE), 'utf8')).split('\n').filter((l) => l !== '');
    assert.ok(lines.length < commits, `the journal was compacted: ${lines.length} lines for ${commits} commits`);
    store = (await Store.open(dir, options)).store;
    assert.deepEqual(store.budget('ci', '2026-11-27'), { used: 3, told: true });
    await store.close();
  });
});
