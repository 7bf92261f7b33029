// Test helper: the Gmail companion's fixtures, shared by the gmail commands' specs and the
// supervisor's: directories under one per spec file, an Io whose HOME is that directory, and a
// config with the gmail preset set up beside a bin directory for a fake `gog`.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileDir } from './_dir.ts';
import { captureIo } from './_io.ts';

export const ACCOUNT = 'me@example.com';

/** Waits about ten seconds at most, so a signal that never arrives fails the test instead of hanging it. */
export const BOUNDED_WAIT = 'i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; echo gave-up >&2; exit 9';

/** Writes an executable `gog` into `bin` that runs `body` in sh. */
export async function fakeGog(bin: string, body: string): Promise<void> {
  await writeFile(join(bin, 'gog'), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
}

/** The fixtures of one spec file, under a directory that goes after its last test. */
export async function gmailFiles() {
  const tmp = await fileDir('hooks-gmail-');
  let seq = 0;

  /** A fresh directory for one test. */
  async function fresh(): Promise<string> {
    const dir = join(tmp, `t${++seq}`);
    await mkdir(dir);
    return dir;
  }

  /** An Io that collects output; `onStdout` sees everything written so far. */
  function capture(env: Record<string, string> = {}, signal?: AbortSignal, onStdout?: (all: string) => void) {
    return captureIo({ HOME: tmp, PATH: process.env['PATH'] ?? '', ...env }, {
      ...(signal === undefined ? {} : { signal }),
      ...(onStdout === undefined ? {} : { onStdout }),
    });
  }

  /** A config with the gmail preset set up, and a bin directory for a fake `gog`. */
  async function setupRun(hooks: Record<string, unknown> = {}): Promise<{ dir: string; file: string; bin: string }> {
    const dir = await fresh();
    const bin = join(dir, 'bin');
    await mkdir(bin);
    const file = join(dir, 'config.json');
    await writeFile(
      file,
      JSON.stringify({
        hooks: {
          enabled: true,
          token: 'run-token-0123456789abcdef',
          presets: ['gmail'],
          allowRequestSessionKey: true,
          allowedSessionKeyPrefixes: ['hook:'],
          gmail: {
            account: ACCOUNT,
            hookToken: 'gmail-run-token-0123456789',
            hookUrl: 'http://127.0.0.1:8789/hooks/gmail',
            includeBody: true,
            maxBytes: 20000,
          },
          ...hooks,
        },
      }),
    );
    return { dir, file, bin };
  }

  return { tmp, fresh, capture, setupRun };
}
