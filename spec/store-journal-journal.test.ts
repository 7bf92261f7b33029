import assert from 'node:assert/strict';
import { open, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { platform } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Journal, SNAPSHOT_PART_CHARS } from '../lib/store/journal/journal.ts';
import { readJournal } from '../lib/store/journal/lines.ts';
import { withDir } from './_dir.ts';

const windows = platform() === 'win32';

type Method = (...args: unknown[]) => Promise<unknown>;

// A real handle whose named method goes through `wrap`, which gets the real method and the arguments.
function intercept(
  handle: FileHandle,
  method: string,
  wrap: (real: Method, args: unknown[]) => Promise<unknown>,
): FileHandle {
  return new Proxy(handle, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key);
      const bound = typeof value === 'function' ? (value.bind(target) as Method) : value;
      return key === method ? (...args: unknown[]) => wrap(bound as Method, args) : bound;
    },
  });
}

// A real handle whose named method fails with `error` while `fail()` says so.
function failing(handle: FileHandle, method: string, error: Error, fail: () => boolean): FileHandle {
  return intercept(handle, method, (real, args) => (fail() ? Promise.reject(error) : real(...args)));
}

// The `open` of a journal whose temp file's writes go through `wrap` (see intercept).
function onTempWrites(wrap: (real: Method, args: unknown[]) => Promise<unknown>): typeof open {
  return (async (
    path: Parameters<typeof open>[0],
    ...rest: [Parameters<typeof open>[1]?, Parameters<typeof open>[2]?]
  ) => {
    const handle = await open(path, ...rest);
    return String(path).endsWith('.tmp') ? intercept(handle, 'write', wrap) : handle;
  }) as typeof open;
}

// Runs `body` on a journal freshly opened in a temp dir, with the journal's file.
async function withJournal(body: (journal: Journal, file: string) => Promise<void>): Promise<void> {
  await withDir(async (dir) => {
    const file = join(dir, 'journal.jsonl');
    const { journal } = await Journal.open(file);
    await body(journal, file);
  });
}

test('Journal.open() returns appended records in order after a reopen', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'journal.jsonl');
    const first = await Journal.open(file);
    assert.deepEqual(first.records, []);
    await first.journal.append({ n: 1, text: 'line\nbreak' });
    await first.journal.appendMany([{ n: 2 }, { n: 3 }]);
    await first.journal.appendMany([]);
    assert.equal(first.journal.size, (await stat(file)).size);
    await first.journal.close();
    assert.equal((await readFile(file, 'utf8')).split('\n').length, 4);
    const second = await Journal.open(file);
    assert.deepEqual(second.records, [{ n: 1, text: 'line\nbreak' }, { n: 2 }, { n: 3 }]);
    assert.equal(second.skipped, 0);
    assert.equal(second.tornBytes, 0);
    await second.journal.close();
  });
});

test('Journal.open() creates the directory 0700 and the file 0600', { skip: windows }, async () => {
  await withDir(async (dir) => {
    const state = join(dir, 'state', 'nested');
    const { journal } = await Journal.open(join(state, 'journal.jsonl'));
    assert.equal((await stat(state)).mode & 0o777, 0o700);
    assert.equal((await stat(join(state, 'journal.jsonl'))).mode & 0o777, 0o600);
    await journal.close();
  });
});

test('Journal.open() skips a torn last line and truncates it before the next append', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'journal.jsonl');
    await writeFile(file, '{"n":1}\n{"n":2}\n{"n":');
    const { journal, records, skipped, tornBytes } = await Journal.open(file);
    assert.deepEqual(records, [{ n: 1 }, { n: 2 }]);
    assert.equal(skipped, 0);
    assert.equal(tornBytes, 5);
    assert.equal(journal.size, 16);
    await journal.append({ n: 3 });
    await journal.close();
    assert.equal(await readFile(file, 'utf8'), '{"n":1}\n{"n":2}\n{"n":3}\n');
  });
});

test('Journal.open() treats an unreadable final complete line as torn', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'journal.jsonl');
    await writeFile(file, '{"n":1}\n\0\0\0\n');
    const { journal, records, skipped, tornBytes } = await Journal.open(file);
    assert.deepEqual([records, skipped, tornBytes], [[{ n: 1 }], 0, 4]);
    await journal.close();
    assert.equal(await readFile(file, 'utf8'), '{"n":1}\n');
  });
});

test('Journal.open() skips and counts an invalid middle line without rewriting it', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'journal.jsonl');
    const text = '{"n":1}\nnot json\n{"n":2}\n';
    await writeFile(file, text);
    const { journal, records, skipped, tornBytes } = await Journal.open(file);
    assert.deepEqual([records, skipped, tornBytes], [[{ n: 1 }, { n: 2 }], 1, 0]);
    await journal.close();
    assert.equal(await readFile(file, 'utf8'), text);
  });
});

test('journal.append() group-commits concurrent appends in call order', async () => {
  await withJournal(async (journal, file) => {
    await Promise.all(Array.from({ length: 100 }, (_, i) => journal.append({ i })));
    const { flushes, records } = journal.stats();
    assert.ok(flushes <= 3, `expected at most 3 flushes, got ${flushes}`);
    assert.equal(records, 100);
    await journal.close();
    const read = await readJournal(file);
    assert.deepEqual(read.records, Array.from({ length: 100 }, (_, i) => ({ i })));
  });
});

test('journal.append() queues appends made during a flush into one next flush', async () => {
  await withJournal(async (journal, file) => {
    const first = journal.append({ i: 0 });
    await Promise.resolve();
    await Promise.resolve();
    await Promise.all([first, ...Array.from({ length: 9 }, (_, i) => journal.append({ i: i + 1 }))]);
    assert.equal(journal.stats().flushes, 2);
    await journal.close();
    assert.deepEqual((await readJournal(file)).records, Array.from({ length: 10 }, (_, i) => ({ i })));
  });
});

test('journal.stats() reports the fsync latency measured with the injected clock', async () => {
  await withDir(async (dir) => {
    let t = 0;
    const { journal } = await Journal.open(join(dir, 'journal.jsonl'), { now: () => (t += 7) });
    assert.deepEqual(journal.stats(), { flushes: 0, records: 0, lastFsyncMs: 0 });
    await journal.appendMany([{ a: 1 }, { a: 2 }]);
    assert.deepEqual(journal.stats(), { flushes: 1, records: 2, lastFsyncMs: 7 });
    await journal.close();
  });
});

test('journal.append() rejects a value without a JSON form', async () => {
  await withDir(async (dir) => {
    const { journal } = await Journal.open(join(dir, 'journal.jsonl'));
    await assert.rejects(journal.append((() => 1) as unknown as object), TypeError);
    await journal.close();
  });
});

test('journal.append() rejects the whole batch when fsync fails and later appends retry', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'journal.jsonl');
    const error = Object.assign(new Error('disk on fire'), { code: 'EIO' });
    let broken = true;
    const { journal } = await Journal.open(file, {
      open: async (...args) => failing(await open(...args), 'datasync', error, () => broken),
    });
    const batch = [journal.append({ n: 1 }), journal.append({ n: 2 })];
    for (const p of batch) await assert.rejects(p, error);
    broken = false;
    await journal.append({ n: 3 });
    assert.deepEqual(journal.stats().records, 1);
    await journal.close();
    assert.equal(await readFile(file, 'utf8'), '{"n":3}\n');
  });
});

test('journal.compact() replaces the content and appends made meanwhile land after it in order', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'journal.jsonl');
    const during: Promise<void>[] = [];
    const { journal } = await Journal.open(file, {
      open: async (path, ...rest) => {
        if (String(path).endsWith('.tmp')) during.push(journal.append({ n: 7 }));
        return open(path, ...rest);
      },
    });
    await journal.appendMany([{ n: 1 }, { n: 2 }, { n: 3 }]);
    const before = journal.append({ n: 4 });
    const compacted = journal.compact([{ snapshot: 4 }]);
    const after = [journal.append({ n: 5 }), journal.append({ n: 6 })];
    await Promise.all([before, compacted, ...after]);
    assert.equal(during.length, 1);
    await Promise.all(during);
    assert.equal(journal.size, (await stat(file)).size);
    await journal.append({ n: 8 });
    await journal.close();
    const records = [{ snapshot: 4 }, { n: 5 }, { n: 6 }, { n: 7 }, { n: 8 }];
    assert.deepEqual((await readJournal(file)).records, records);
    assert.deepEqual(await readdir(dir), ['journal.jsonl']);
    if (!windows) assert.equal((await stat(file)).mode & 0o777, 0o600);
  });
});

test('journal.compact() does not hold appends up while it writes its snapshot: they follow it into the new file, in order', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'journal.jsonl');
    // The temp file's first write waits until the test lets it go: a slow disk under a large snapshot.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const { journal } = await Journal.open(file, {
      open: onTempWrites(async (real, args) => (await held, real(...args))),
    });
    await journal.append({ n: 1 });
    let compacted = false;
    const compaction = journal.compact([{ snapshot: 1 }]).then(() => (compacted = true));
    await journal.append({ n: 2 });
    await journal.appendMany([{ n: 3 }, { n: 4 }]);
    assert.equal(compacted, false, 'the appends were durable while the snapshot was still being written');
    assert.deepEqual((await readJournal(file)).records, [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
    release();
    await compaction;
    await journal.append({ n: 5 });
    assert.equal(journal.size, (await stat(file)).size);
    await journal.close();
    assert.deepEqual((await readJournal(file)).records, [{ snapshot: 1 }, { n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }]);
    assert.deepEqual(await readdir(dir), ['journal.jsonl']);
  });
});

test('journal.compact() serialises and writes a large snapshot a part at a time, all of it, in order', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'journal.jsonl');
    let writes = 0;
    const { journal } = await Journal.open(file, { open: onTempWrites((real, args) => (writes++, real(...args))) });
    // Three and a half parts' worth of records, each line about 1 KiB.
    const records = Array.from(
      { length: Math.ceil((3.5 * SNAPSHOT_PART_CHARS) / 1024) },
      (_, n) => ({ n, pad: 'x'.repeat(1000) }),
    );
    await journal.compact(records);
    await journal.append({ after: true });
    await journal.close();
    assert.ok(writes >= 4, `${writes} writes`);
    const read = (await readJournal(file)).records as { n?: number }[];
    assert.equal(read.length, records.length + 1);
    assert.ok(read.slice(0, -1).every((r, i) => r.n === i));
    assert.deepEqual(read.at(-1), { after: true });
  });
});

test('journal.compact() leaves the old file in use when writing the temp file fails', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'journal.jsonl');
    const error = new Error('no space');
    const { journal } = await Journal.open(file, {
      open: async (path, ...rest) =>
        failing(await open(path, ...rest), 'write', error, () => String(path).endsWith('.tmp')),
    });
    await journal.append({ n: 1 });
    await assert.rejects(journal.compact([{ snapshot: 1 }]), error);
    await journal.append({ n: 2 });
    await journal.close();
    assert.deepEqual((await readJournal(file)).records, [{ n: 1 }, { n: 2 }]);
    assert.deepEqual(await readdir(dir), ['journal.jsonl']);
  });
});

test('journal.compact() tolerates a directory that refuses fsync but reports other errors', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'journal.jsonl');
    let code = 'EISDIR';
    const { journal } = await Journal.open(file, {
      open: async (path, ...rest) => {
        if (path !== dir) return open(path, ...rest);
        throw Object.assign(new Error(code), { code });
      },
    });
    await journal.compact([{ snapshot: 1 }]);
    code = 'EIO';
    await assert.rejects(journal.compact([{ snapshot: 2 }]), /EIO/);
    await journal.append({ n: 3 });
    await journal.close();
    assert.deepEqual((await readJournal(file)).records, [{ snapshot: 2 }, { n: 3 }]);
  });
});

test('journal.close() flushes pending appends and later appends reject', async () => {
  await withJournal(async (journal, file) => {
    const pending = journal.append({ n: 1 });
    await journal.close();
    await pending;
    await journal.close();
    assert.deepEqual((await readJournal(file)).records, [{ n: 1 }]);
    await assert.rejects(journal.append({ n: 2 }), { name: 'Error', message: 'Journal is closed' });
    await assert.rejects(journal.appendMany([]), /Journal is closed/);
    await assert.rejects(journal.compact([]), /Journal is closed/);
  });
});

test('Journal.open() closes the file and rethrows when reading it fails', async () => {
  await withDir(async (dir) => {
    const error = new Error('read failed');
    const opened: FileHandle[] = [];
    const journalOpen = Journal.open(join(dir, 'journal.jsonl'), {
      open: async (...args) => {
        const handle = await open(...args);
        opened.push(handle);
        return failing(handle, 'readFile', error, () => true);
      },
    });
    await assert.rejects(journalOpen, error);
    assert.equal(opened[0]?.fd, -1);
  });
});
