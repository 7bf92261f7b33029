// A request that came with a token (the hook token, the gmail hook's, a `token` or `gitlab` path's
// secret) replays only while that token still opens its hook: the entry keeps a keyed fingerprint
// of it, and App.replay and App.preview (the dry run) check it against the configuration of now.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { type Fingerprints, fingerprints } from '../lib/guard/fingerprint.ts';
import type { LedgerEntry } from '../lib/model/ledger-entry.ts';
import { Ledger } from '../lib/store/ledger/ledger.ts';
import { readLedger } from '../lib/store/ledger/read.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { type AppHarness, specConfig, startApp, stateFingerprints, withHooks } from './_app.ts';
import { post } from './_http.ts';

const TOKEN = 'replay-spec-hook-token-0123456789';
const NEW_TOKEN = 'replay-spec-hook-token-rotated-987';

interface Harness extends AppHarness {
  prints: Fingerprints;
  /** Every entry, once what is queued is written. */
  entries(): Promise<LedgerEntry[]>;
  /** The entry of a request id, once written. */
  entry(requestId: string): Promise<LedgerEntry>;
  /** Serves `raw` (the hook token `token`) from now on. */
  reload(raw: Record<string, unknown>, token?: string): Promise<void>;
  texts(): string[];
}

// The app with a real ledger and the state directory's credential key, as serve builds them;
// `key: null` serves without one (a key that could not be read).
async function start(t: TestContext, raw: Record<string, unknown>, options: { key?: null } = {}): Promise<Harness> {
  const dir = await tempDir(t, 'edge-replay-spec-');
  const state = join(dir, 'state');
  const config = await specConfig(withHooks(raw, TOKEN), dir);
  const ledger = await Ledger.open(state, { config: config.hooks.ledger });
  defer(t, () => ledger.close());
  // The key serve makes; startApp serves with it unless told not to.
  const prints = await stateFingerprints(state);
  const h = await startApp(t, {
    raw,
    token: TOKEN,
    dir,
    with: () => ({ ledger }),
    ...(options.key === null ? { noCredentialKey: true } : {}),
  });
  const entries = async () => {
    await ledger.flush();
    return readLedger(state);
  };
  return {
    ...h,
    prints,
    entries,
    entry: async (requestId) => {
      const found = (await entries()).find((e) => e.requestId === requestId);
      assert.ok(found, requestId);
      return found;
    },
    reload: async (next, token = TOKEN) => h.app.reload(await specConfig(withHooks(next, token), dir)),
    // Each event's text, without the untrusted-content notice around it.
    texts: () =>
      h.store.events().map((e) =>
        /<<<EXTERNAL_UNTRUSTED_CONTENT id=\w+>>>\nSource: [^\n]*\n\n([^]*)\n<<<END_/.exec(e.text)?.[1] ?? e.text
      ),
  };
}

// App.replay's and App.preview's refusal, or `null` when they run.
async function refusal(
  h: Harness,
  entry: LedgerEntry,
  force = false,
): Promise<{ replay: string | null; preview: string | null }> {
  const reason = (error: unknown) => {
    const e = error as Error & { status?: number; code?: string };
    assert.equal(e.status, 409, String(error));
    assert.equal(e.code, 'ERR_NOT_REPLAYABLE');
    return e.message;
  };
  const preview = await h.app.preview(entry, { force }).then(() => null, reason);
  const replay = await h.app.replay(entry, { force }).then(() => null, reason);
  return { replay, preview };
}

const refused = (entry: LedgerEntry, why: string) => ({
  replay: `entry ${entry.id} cannot be replayed: ${why}`,
  preview: `entry ${entry.id} cannot be replayed: ${why}`,
});
const NOT_REFUSED = { replay: null, preview: null };

// A wake mapping whose template has a typo (`{{mesage}}` alone renders nothing: 400), and the fix.
const notes = (template: string, extra: Record<string, unknown> = {}) => ({
  match: { path: 'notes' },
  action: 'wake',
  wakeMode: 'next-heartbeat',
  textTemplate: template,
  ...extra,
});

test('App.replay: a request that came with the hook token keeps its fingerprint (never the token), replays while the token is configured and is refused once it is rotated', async (t) => {
  const h = await start(t, { hooks: { mappings: [notes('{{mesage}}')] } });
  for (const id of ['typo-1', 'typo-2']) {
    assert.equal(
      (await post(h.url, '/hooks/notes', {
        headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': id },
        body: { message: `text of ${id}` },
      })).status,
      400,
    );
  }
  const [one, two] = [await h.entry('typo-1'), await h.entry('typo-2')];
  assert.equal(one.credential, h.prints.of(TOKEN));
  for (const name of await readdir(join(h.state, 'ledger'))) {
    assert.ok(!(await readFile(join(h.state, 'ledger', name), 'utf8')).includes(TOKEN), name);
  }

  await h.reload({ hooks: { mappings: [notes('note: {{message}}')] } });
  assert.deepEqual(await refusal(h, one), NOT_REFUSED);
  await h.reload({ hooks: { mappings: [notes('note: {{message}}')] } }, NEW_TOKEN);
  assert.deepEqual(await refusal(h, two), refused(two, 'its token is no longer configured (rotated since)'));
  assert.deepEqual(
    await refusal(h, two, true),
    refused(two, 'its token is no longer configured (rotated since)'),
    '--force does not replay a token known to be gone',
  );
  assert.deepEqual(h.texts().filter((text) => text.includes('typo-2')), []);
  // The replay's own entry keeps the fingerprint it replayed on.
  const replays = (await h.entries()).filter((e) => e.replayOf === one.id);
  assert.deepEqual(replays.map((e) => [e.status, e.credential]), [[200, h.prints.of(TOKEN)]]);
});

test('App.replay: a gitlab delivery replays while its secret is configured (one of a rotation list included) and is refused once it is rotated out', async (t) => {
  const gitlab = (secret: string | string[]) => ({
    hooks: {
      mappings: [{
        match: { path: 'gl' },
        signature: { scheme: 'gitlab', secret },
        action: 'wake',
        wakeMode: 'next-heartbeat',
        textTemplate: 'push {{n}}',
      }],
    },
  });
  const h = await start(t, gitlab('gl-secret-old-55'));
  assert.equal(
    (await post(h.url, '/hooks/gl', {
      headers: { 'x-gitlab-token': 'gl-secret-old-55', 'x-request-id': 'gl-1' },
      body: { n: 1 },
    })).status,
    200,
  );
  const entry = await h.entry('gl-1');
  assert.equal(entry.credential, h.prints.of('gl-secret-old-55'));
  await h.reload(gitlab(['gl-secret-new-66', 'gl-secret-old-55']));
  assert.deepEqual(await refusal(h, entry, true), NOT_REFUSED);
  await h.reload(gitlab('gl-secret-new-66'));
  assert.deepEqual(
    await refusal(h, entry, true),
    refused(entry, 'its gitlab token is no longer configured (rotated since)'),
  );
  assert.equal(
    h.texts().filter((text) => text.includes('push 1')).length,
    2,
    'the live one and the replay while the secret was listed',
  );
});

test("App.replay: a `token` path's secret rotated, and a path that moved from a signature to the hook token, are refused", async (t) => {
  const own = (secret: string) => ({
    hooks: {
      mappings: [{
        match: { path: 'ci' },
        signature: { scheme: 'token', secret },
        action: 'wake',
        wakeMode: 'next-heartbeat',
        textTemplate: 'ci {{n}}',
      }],
    },
  });
  const h = await start(t, own('ci-path-token-1234'));
  assert.equal(
    (await post(h.url, '/hooks/ci', {
      headers: { authorization: 'Bearer ci-path-token-1234', 'x-request-id': 'ci-1' },
      body: { n: 1 },
    })).status,
    200,
  );
  const entry = await h.entry('ci-1');
  assert.equal(entry.credential, h.prints.of('ci-path-token-1234'));
  await h.reload(own('ci-path-token-5678'));
  assert.deepEqual(
    await refusal(h, entry, true),
    refused(entry, 'its path token is no longer configured (rotated since)'),
  );
  // The path opened by the hook token now: the path's old secret is not the hook token.
  await h.reload({
    hooks: {
      mappings: [{ match: { path: 'ci' }, action: 'wake', wakeMode: 'next-heartbeat', textTemplate: 'ci {{n}}' }],
    },
  });
  assert.deepEqual(await refusal(h, entry, true), refused(entry, 'its token is no longer configured (rotated since)'));
});

test("App.replay: the gmail hook's token rotated is refused; an entry that came with the hook token reaches what the hook token reaches", async (t) => {
  const bySource = {
    id: 'by-source',
    match: { source: 'x' },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    textTemplate: 'by source',
    allowUnsafeExternalContent: true,
  };
  const own = { id: 'own', match: { path: 'gmail' }, action: 'wake', wakeMode: 'next-heartbeat', textTemplate: 'own' };
  const mail = (hookToken: string) => ({ hooks: { gmail: { hookToken }, mappings: [bySource, own] } });
  const h = await start(t, mail('gmail-token-old-0123456789'));
  assert.equal(
    (await post(h.url, '/hooks/gmail', {
      headers: { authorization: 'Bearer gmail-token-old-0123456789', 'x-request-id': 'gog-1' },
      body: { source: 'x' },
    })).status,
    200,
  );
  assert.equal(
    (await post(h.url, '/hooks/gmail', {
      headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': 'owner-1' },
      body: { source: 'x' },
    })).status,
    200,
  );
  const [gog, owner] = [await h.entry('gog-1'), await h.entry('owner-1')];
  assert.equal(gog.credential, h.prints.of('gmail-token-old-0123456789'));
  assert.equal(owner.credential, h.prints.of(TOKEN));
  assert.deepEqual([gog.mapping, owner.mapping], ['own', 'by-source']);
  // The owner's request: its fingerprint says the hook token opened it, so its replay is not held to the gmail path.
  assert.deepEqual(await refusal(h, owner), NOT_REFUSED);
  assert.deepEqual((await h.entries()).filter((e) => e.replayOf === owner.id).map((e) => [e.status, e.mapping]), [[
    200,
    'by-source',
  ]]);
  await h.reload(mail('gmail-token-new-9876543210'));
  assert.deepEqual(await refusal(h, gog), refused(gog, 'its token is no longer configured (rotated since)'));
});

test('App.replay: an entry recorded without a fingerprint, or under another key, or checked without a key, replays only with force', async (t) => {
  const h = await start(t, { hooks: { mappings: [notes('note: {{message}}')] } });
  assert.equal(
    (await post(h.url, '/hooks/notes', {
      headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': 'n-1' },
      body: { message: 'one' },
    })).status,
    200,
  );
  const entry = await h.entry('n-1');
  const { credential: _, ...before } = entry;
  assert.deepEqual(
    await refusal(h, before),
    refused(
      before,
      "it was recorded without its token's fingerprint (before fingerprints were kept), so whether that token is still configured cannot be checked; replay it with --force if it is genuine",
    ),
  );
  const other = { ...entry, credential: fingerprints(randomBytes(32)).of(TOKEN) };
  assert.deepEqual(
    await refusal(h, other),
    refused(
      other,
      "its token's fingerprint was made under another credential key (credential.key in the state directory was replaced since), so whether that token is still configured cannot be checked; replay it with --force if it is genuine",
    ),
  );
  assert.deepEqual(await refusal(h, before, true), NOT_REFUSED);
  assert.deepEqual(await refusal(h, other, true), NOT_REFUSED);
  assert.equal(h.texts().filter((text) => text.includes('note: one')).length, 3);

  const keyless = await start(t, { hooks: { mappings: [notes('note: {{message}}')] } }, { key: null });
  assert.equal(
    (await post(keyless.url, '/hooks/notes', {
      headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': 'k-1' },
      body: { message: 'two' },
    })).status,
    200,
  );
  const unprinted = await keyless.entry('k-1');
  assert.equal(unprinted.credential, undefined, 'no key, no fingerprint');
  const printed = { ...unprinted, credential: keyless.prints.of(TOKEN) };
  assert.match(
    (await refusal(keyless, printed)).replay ?? '',
    /the credential key \(credential\.key in the state directory\) cannot be read, so whether that token is still configured cannot be checked/,
  );
});
