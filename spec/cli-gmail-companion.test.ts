// `hooks-ingress gmail run` (lib/cli/gmail-companion.ts): what is refused before gog starts. gog's
// arguments and the companion beside serve are in server-gmail-companion.test.ts, the supervisor
// that keeps gog running in runtime-gmail-companion.test.ts.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { gmailCommand } from '../lib/cli/gmail.ts';
import { ACCOUNT, gmailFiles } from './_gmail.ts';

const { fresh, capture, setupRun } = await gmailFiles();

describe('gmail run', () => {
  test('gmailCommand() run exits 1 naming how to install gog when it is not on PATH, and warns when the preset is off', async () => {
    const { file, bin } = await setupRun({ presets: [] });
    await writeFile(join(bin, 'gog'), 'not executable', { mode: 0o644 });
    const { io, out } = capture({ PATH: bin });
    assert.equal(await gmailCommand(['run', '-c', file], io), 1);
    assert.match(
      out.stderr,
      /gog is not on PATH: install gogcli \(brew install steipete\/tap\/gogcli, or see https:\/\/gogcli\.sh\)/,
    );
    assert.match(out.stderr, /warning: .*hooks\.presets lacks "gmail"/);
  });

  test('gmailCommand() run exits 1 on an invalid config or one without hooks.gmail.account', async () => {
    const dir = await fresh();
    const invalid = join(dir, 'invalid.json');
    await writeFile(invalid, JSON.stringify({ hooks: { enabled: true } }));
    const first = capture();
    assert.equal(await gmailCommand(['run', '-c', invalid], first.io), 1);
    assert.match(first.out.stderr, /invalid config .*\n {2}hooks\.token: is required/);
    const bare = join(dir, 'bare.json');
    await writeFile(bare, JSON.stringify({ hooks: { enabled: true, token: 'tok-0123456789abcdef' } }));
    const second = capture();
    assert.equal(await gmailCommand(['run', '-c', bare], second.io), 1);
    assert.match(
      second.out.stderr,
      /hooks\.gmail\.account is not set: run "hooks-ingress gmail setup --account <address>" first/,
    );
    const tokenless = join(dir, 'tokenless.json');
    await writeFile(
      tokenless,
      JSON.stringify({ hooks: { token: 'tok-0123456789abcdef', gmail: { account: ACCOUNT } } }),
    );
    const third = capture();
    assert.equal(await gmailCommand(['run', '-c', tokenless], third.io), 1);
    assert.match(third.out.stderr, /hooks\.gmail\.hookToken is not set/);
  });
});
