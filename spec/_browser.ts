// Test helper: a real headless Chromium, the Debian package's, driven by playwright-core (which
// never downloads a browser of its own). The browser specs need it; where it is missing they skip
// with the reason, except under CI, where a missing browser is a failure that names it.
import { accessSync, constants } from 'node:fs';
import type { TestContext } from 'node:test';
import { defer } from './_cleanup.ts';

/** Where the browser is looked for: $CHROMIUM_PATH, then Debian's package. */
export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

/** Why the browser specs cannot run here, or `false` when they can; throws under CI when the browser is missing. */
export function browserSkip(): string | false {
  if ('Deno' in globalThis) {
    return 'the browser specs drive Chromium through playwright-core, which runs under Node only';
  }
  try {
    accessSync(CHROMIUM, constants.X_OK);
    return false;
  } catch {
    const reason =
      `no Chromium at ${CHROMIUM}: install the Debian package "chromium" (apt-get install -y chromium) or set CHROMIUM_PATH`;
    if (process.env['CI'] !== undefined && process.env['CI'] !== '') {
      throw new Error(`The browser specs must run under CI: ${reason}`);
    }
    process.stderr.write(`# skipping the browser specs: ${reason}\n`);
    return reason;
  }
}

/** A fresh browser (playwright gives it an empty profile of its own), closed when `t` ends. */
export async function launch(t: TestContext): Promise<import('playwright-core').Browser> {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // As root, Chromium needs --no-sandbox; the rest keep it off the network this machine does not have.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  defer(t, () => browser.close());
  return browser;
}
