import assert from 'node:assert/strict';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { ChatMessage } from '../lib/runtime/providers/provider.ts';
import { Transcripts } from '../lib/store/journal/transcripts.ts';
import { withDir } from './_dir.ts';

const user = (content: string): ChatMessage => ({ role: 'user', content });
const assistant = (content: string): ChatMessage => ({ role: 'assistant', content });

async function sessionFiles(dir: string): Promise<string[]> {
  return (await readdir(join(dir, 'sessions'))).sort();
}

test('Transcripts.history() of a session never written is empty', async () => {
  await withDir(async (dir) => {
    assert.deepEqual(await new Transcripts(dir).history('hook:none', 1000), []);
  });
});

test('Transcripts.append() then history() returns the turns in order, as role and content only', async () => {
  await withDir(async (dir) => {
    const transcripts = new Transcripts(dir, { now: () => Date.UTC(2025, 0, 2) });
    await transcripts.append('hook:a', [user('What is on today?'), assistant('Two meetings.')]);
    await transcripts.append('hook:a', [user('And tomorrow?'), assistant('Nothing.')]);
    assert.deepEqual(await transcripts.history('hook:a', 10_000), [
      user('What is on today?'),
      assistant('Two meetings.'),
      user('And tomorrow?'),
      assistant('Nothing.'),
    ]);
    // Each turn is stored with the time it was written.
    const [file] = await sessionFiles(dir);
    const lines = (await readFile(join(dir, 'sessions', file!), 'utf8')).trim().split('\n');
    assert.deepEqual(JSON.parse(lines[0]!), {
      role: 'user',
      content: 'What is on today?',
      time: '2025-01-02T00:00:00.000Z',
    });
  });
});

test('Transcripts.history() survives a new instance: the transcript is on disk', async () => {
  await withDir(async (dir) => {
    await new Transcripts(dir).append('hook:a', [user('q'), assistant('a')]);
    assert.deepEqual(await new Transcripts(dir).history('hook:a', 100), [user('q'), assistant('a')]);
  });
});

test('Transcripts.history() keeps the newest turns whose text fits in maxChars', async () => {
  await withDir(async (dir) => {
    const transcripts = new Transcripts(dir);
    await transcripts.append('k', [
      user('u1-xxxxxxx'),
      assistant('a1-xxxxxxx'),
      user('u2-xxxxxxx'),
      assistant('a2-xxxxxxx'),
    ]);
    assert.deepEqual(await transcripts.history('k', 20), [user('u2-xxxxxxx'), assistant('a2-xxxxxxx')]);
    assert.deepEqual(await transcripts.history('k', 29), [user('u2-xxxxxxx'), assistant('a2-xxxxxxx')]);
    assert.deepEqual((await transcripts.history('k', 40)).length, 4);
    assert.deepEqual(await transcripts.history('k', 0), []);
  });
});

// Regression: a bound that fell between a question and its answer sent the answer first, which
// the Anthropic Messages API refuses ("first message must use the user role").
test('Transcripts.history() never starts with an assistant turn', async () => {
  await withDir(async (dir) => {
    const transcripts = new Transcripts(dir);
    await transcripts.append('k', [
      user('u1-xxxxxxx'),
      assistant('a1-xxxxxxx'),
      user('u2-xxxxxxx'),
      assistant('a2-xxxxxxx'),
    ]);
    // 30 characters fit a1, u2 and a2: a1 lost its question, so it goes too.
    assert.deepEqual(await transcripts.history('k', 30), [user('u2-xxxxxxx'), assistant('a2-xxxxxxx')]);
    assert.deepEqual(await transcripts.history('k', 10), []);
  });
});

test('Transcripts.history() stops at the first turn that does not fit, even if older ones would', async () => {
  await withDir(async (dir) => {
    const transcripts = new Transcripts(dir);
    await transcripts.append('k', [user('old'), assistant('x'.repeat(50)), user('new'), assistant('yes')]);
    assert.deepEqual(await transcripts.history('k', 20), [user('new'), assistant('yes')]);
  });
});

test('Transcripts keeps each session key in its own file, named by a hash rather than the key', async () => {
  await withDir(async (dir) => {
    const transcripts = new Transcripts(dir);
    await transcripts.append('hook:one', [user('to one'), assistant('from one')]);
    await transcripts.append('../../etc/passwd', [user('to two'), assistant('from two')]);
    assert.deepEqual(await transcripts.history('hook:one', 1000), [user('to one'), assistant('from one')]);
    assert.deepEqual(await transcripts.history('../../etc/passwd', 1000), [user('to two'), assistant('from two')]);
    const files = await sessionFiles(dir);
    assert.equal(files.length, 2);
    for (const file of files) assert.match(file, /^[0-9a-f]{32}\.jsonl$/);
  });
});

test('Transcripts.append() compacts a session past maxBytes to its newest turns', async () => {
  await withDir(async (dir) => {
    const maxBytes = 2000;
    const transcripts = new Transcripts(dir, { maxBytes });
    for (let i = 0; i < 60; i++) {
      await transcripts.append('k', [
        user(`question ${i} ${'.'.repeat(20)}`),
        assistant(`answer ${i} ${'.'.repeat(20)}`),
      ]);
    }
    const [file] = await sessionFiles(dir);
    // Never much past the bound: at most one append beyond it before the rewrite.
    assert.ok((await stat(join(dir, 'sessions', file!))).size <= maxBytes, 'the file stays within maxBytes');
    const kept = await transcripts.history('k', 1_000_000);
    assert.ok(kept.length > 0 && kept.length < 120, `kept ${kept.length} turns`);
    assert.deepEqual(kept.at(-1), assistant(`answer 59 ${'.'.repeat(20)}`));
    assert.ok(!kept.some((t) => t.content.startsWith('question 0 ')), 'the oldest turns are gone');
  });
});

test('Transcripts.history() tolerates a torn last line, and append() continues after it', async () => {
  await withDir(async (dir) => {
    const transcripts = new Transcripts(dir);
    await transcripts.append('k', [user('q1'), assistant('a1')]);
    const [file] = await sessionFiles(dir);
    await writeFile(join(dir, 'sessions', file!), '{"role":"user","content":"half a li', { flag: 'a' });
    assert.deepEqual(await transcripts.history('k', 1000), [user('q1'), assistant('a1')]);
    await transcripts.append('k', [user('q2'), assistant('a2')]);
    assert.deepEqual(await transcripts.history('k', 1000), [user('q1'), assistant('a1'), user('q2'), assistant('a2')]);
  });
});

test('Transcripts.append() calls on one key take effect in call order, never interleaved', async () => {
  await withDir(async (dir) => {
    const transcripts = new Transcripts(dir);
    await Promise.all(
      Array.from({ length: 8 }, (_, i) => transcripts.append('k', [user(`q${i}`), assistant(`a${i}`)])),
    );
    const expected = Array.from({ length: 8 }, (_, i) => [user(`q${i}`), assistant(`a${i}`)]).flat();
    assert.deepEqual(await transcripts.history('k', 1000), expected);
  });
});
