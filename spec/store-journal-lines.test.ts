import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { readJournal } from '../lib/store/journal/lines.ts';
import { withDir } from './_dir.ts';

test('readJournal() applies the torn-line rule without writing and reads a missing file as empty', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'journal.jsonl');
    const text = '{"n":1}\nbad\n{"n":2}\n{"n"';
    await writeFile(file, text);
    assert.deepEqual(await readJournal(file), {
      records: [{ n: 1 }, { n: 2 }],
      lines: [1, 3],
      skipped: 1,
      unreadable: [2],
    });
    assert.equal(await readFile(file, 'utf8'), text);
    assert.deepEqual(await readJournal(join(dir, 'missing.jsonl')), {
      records: [],
      lines: [],
      skipped: 0,
      unreadable: [],
    });
    await assert.rejects(readJournal(dir));
    await assert.rejects(readJournal(join(file, 'below-a-file')), { code: 'ENOTDIR' });
  });
});
