import assert from 'node:assert/strict';
import { chmod, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { openFingerprints } from '../lib/server/service.ts';
import { CREDENTIAL_KEY } from '../lib/store/state/credential-key.ts';
import { captureLog } from './_app.ts';
import { tempDir } from './_dir.ts';

test("openFingerprints() makes the state directory's key at the first start, and the same fingerprints at the next", async (t) => {
  const state = await tempDir(t, 'service-prints-');
  const { log, lines } = captureLog();
  const first = await openFingerprints(state, log);
  const second = await openFingerprints(state, log);
  assert.ok(first !== null && second !== null);
  assert.equal(first.of('hook-token'), second.of('hook-token'));
  assert.equal((await stat(join(state, CREDENTIAL_KEY))).mode & 0o777, 0o600);
  assert.deepEqual(lines, []);
});

test('openFingerprints() makes a key open to others 0600 and says so', async (t) => {
  const state = await tempDir(t, 'service-prints-');
  const { log, lines } = captureLog();
  await openFingerprints(state, log);
  await chmod(join(state, CREDENTIAL_KEY), 0o640);
  assert.notEqual(await openFingerprints(state, log), null);
  assert.deepEqual(lines.map((l) => [l['level'], l['msg'], l['mode']]), [[
    'warn',
    'credential key was open to group or others; made 0600',
    '0640',
  ]]);
});

test('openFingerprints() serves without fingerprints, saying why, when the key is a link or cannot be made', async (t) => {
  const state = await tempDir(t, 'service-prints-');
  await writeFile(join(state, 'elsewhere'), `${'b'.repeat(64)}\n`, { mode: 0o600 });
  await symlink(join(state, 'elsewhere'), join(state, CREDENTIAL_KEY));
  const { log, lines } = captureLog();
  assert.equal(await openFingerprints(state, log), null);
  assert.equal(await openFingerprints(join(state, 'missing', 'deeper'), log), null);
  assert.deepEqual(lines.map((l) => [l['level'], l['msg'], l['problem'] ?? l['error']]), [
    [
      'error',
      "credential key not usable; requests are recorded without their token's fingerprint",
      'it is a symbolic link; the server writes a regular file there',
    ],
    ['error', "credential key not made; requests are recorded without their token's fingerprint", 'ENOENT'],
  ]);
});
