import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmod, chown, mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fingerprints } from '../lib/guard/fingerprint.ts';
import { CREDENTIAL_KEY, openCredentialKey } from '../lib/store/state/credential-key.ts';
import { tempDir } from './_dir.ts';

const modeOf = async (path: string) => (await stat(path)).mode & 0o777;

test('openCredentialKey() makes the key 0600 on first need, and the same key (and fingerprints) on every later open', async (t) => {
  const state = await tempDir(t, 'credential-key-');
  const first = await openCredentialKey(state, { make: true });
  assert.ok(first.ok);
  assert.equal(first.made, true);
  assert.equal(first.key.length, 32);
  const file = join(state, CREDENTIAL_KEY);
  assert.equal(first.file, file);
  assert.equal(await modeOf(file), 0o600);
  assert.match(await readFile(file, 'utf8'), /^[0-9a-f]{64}\n$/);
  const again = await openCredentialKey(state, { make: true });
  const read = await openCredentialKey(state, { make: false });
  assert.ok(again.ok && read.ok);
  assert.equal(again.made, false);
  assert.ok(again.key.equals(first.key) && read.key.equals(first.key));
  assert.equal(fingerprints(again.key).of('hook-token'), fingerprints(first.key).of('hook-token'));
});

test("openCredentialKey(): two state directories have two keys, so a token's fingerprint differs between them", async (t) => {
  const [a, b] = await Promise.all([
    openCredentialKey(await tempDir(t, 'credential-key-'), { make: true }),
    openCredentialKey(await tempDir(t, 'credential-key-'), { make: true }),
  ]);
  assert.ok(a.ok && b.ok);
  assert.notEqual(fingerprints(a.key).of('hook-token'), fingerprints(b.key).of('hook-token'));
});

test('openCredentialKey(): starters racing on a new directory agree on one key', async (t) => {
  const state = await tempDir(t, 'credential-key-');
  const opened = await Promise.all(Array.from({ length: 6 }, () => openCredentialKey(state, { make: true })));
  const keys = new Set(opened.map((o) => (o.ok ? o.key.toString('hex') : o.problem)));
  assert.equal(keys.size, 1, [...keys].join(', '));
  assert.equal(opened.filter((o) => o.ok && o.made).length, 1);
});

test('openCredentialKey() without make reports a missing key and makes nothing', async (t) => {
  const state = await tempDir(t, 'credential-key-');
  const found = await openCredentialKey(state, { make: false });
  assert.deepEqual(found, {
    ok: false,
    file: join(state, CREDENTIAL_KEY),
    missing: true,
    problem: 'it does not exist (the server makes it when it starts)',
  });
  await assert.rejects(stat(join(state, CREDENTIAL_KEY)), { code: 'ENOENT' });
});

test('openCredentialKey(): a key open to group or others is made 0600 by the server, refused by a reader', async (t) => {
  const state = await tempDir(t, 'credential-key-');
  const file = join(state, CREDENTIAL_KEY);
  await openCredentialKey(state, { make: true });
  await chmod(file, 0o644);
  const read = await openCredentialKey(state, { make: false });
  assert.deepEqual(read, {
    ok: false,
    file,
    missing: false,
    problem: 'it has mode 0644: group or others can reach it; the server makes it 0600',
  });
  const served = await openCredentialKey(state, { make: true });
  assert.ok(served.ok);
  assert.equal(served.tightened, 0o644);
  assert.equal(await modeOf(file), 0o600);
});

test('openCredentialKey() refuses a symbolic link, a FIFO, a folder and a file that holds no key, and changes none of them', async (t) => {
  const dir = await tempDir(t, 'credential-key-');
  const cases: [string, (file: string) => Promise<void>, RegExp][] = [
    ['link', async (file) => {
      await writeFile(join(dir, 'elsewhere'), `${'a'.repeat(64)}\n`, { mode: 0o600 });
      await symlink(join(dir, 'elsewhere'), file);
    }, /^it is a symbolic link; the server writes a regular file there$/],
    ['fifo', async (file) => void execFileSync('mkfifo', ['-m', '600', file]), /^it is not a regular file$/],
    ['folder', (file) => mkdir(file), /^it is not a regular file$/],
    [
      'garbage',
      (file) => writeFile(file, 'not a key\n', { mode: 0o600 }),
      /^it does not hold a credential key \(64 hex digits, as the server writes\)$/,
    ],
  ];
  for (const [name, make, problem] of cases) {
    const state = join(dir, name);
    await mkdir(state, { mode: 0o700 });
    await make(join(state, CREDENTIAL_KEY));
    for (const mode of [true, false]) {
      const found = await openCredentialKey(state, { make: mode });
      assert.equal(found.ok, false, name);
      if (!found.ok) assert.match(found.problem, problem, name);
    }
  }
});

// Only root can give a file to another user.
const asRoot = process.getuid?.() === 0;

test('openCredentialKey() refuses a key another user owns', {
  skip: asRoot ? false : 'needs root to give the file to another user',
}, async (t) => {
  const state = await tempDir(t, 'credential-key-');
  await openCredentialKey(state, { make: true });
  const file = join(state, CREDENTIAL_KEY);
  await chown(file, 4242, 4242);
  const owner = (await stat(state)).uid;
  for (const make of [true, false]) {
    assert.deepEqual(await openCredentialKey(state, { make }), {
      ok: false,
      file,
      missing: false,
      problem: `it is owned by uid 4242, not by the state directory's owner (uid ${owner})`,
    });
  }
});
