// The Gmail companion (`gog gmail watch serve`): its arguments, finding gog, and what serve runs
// beside itself. `gmail run` (lib/cli/gmail-companion.ts) runs it in the foreground; the supervisor
// that keeps it running is runtime/gmail-companion.ts.

import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { delimiter, isAbsolute, join } from 'node:path';
import { normaliseHooksPath } from '../config/file-schema.ts';
import type { Config, Env } from '../config/types.ts';
import { type CompanionIo, superviseCompanion, type SuperviseDeps } from '../runtime/gmail-companion.ts';

/** What `gmail setup` writes to `hooks.gmail` when neither a flag nor the file names a value. */
export const GMAIL_DEFAULTS = {
  label: 'INBOX',
  topic: 'gog-gmail-watch',
  subscription: 'gog-gmail-watch-push',
  includeBody: true,
  maxBytes: 20_000,
} as const;

export const INSTALL_HINT =
  'install gogcli (brew install steipete/tap/gogcli, or see https://gogcli.sh) and authorise the account with "gog auth add <address>"';

/** What `gmail run` touches outside the process; each is injectable for tests. */
export interface GmailDeps extends SuperviseDeps {
  which?: (name: string, env: Env) => Promise<string | null>;
}

/**
 * The arguments of `gog gmail watch serve` for a loaded config (the real gogcli flags). gog reads
 * its hook token from the command line only, so it gets hooks.gmail.hookToken, which opens the
 * gmail hook alone, never the hook token. `shown` puts placeholders where the credentials go.
 */
export function companionArgs(
  config: Config,
  shown = false,
): { ok: true; args: string[] } | { ok: false; problem: string } {
  const gmail = config.hooks.gmail;
  if (gmail.account === undefined) {
    return {
      ok: false,
      problem: 'hooks.gmail.account is not set: run "hooks-ingress gmail setup --account <address>" first',
    };
  }
  if (gmail.hookToken === undefined) {
    return {
      ok: false,
      problem:
        'hooks.gmail.hookToken is not set: run "hooks-ingress gmail setup --account <address>" again to create it',
    };
  }
  const args = ['gmail', 'watch', 'serve', '--account', gmail.account];
  // hooks.gmail.serve configures gog's own push endpoint; gog's defaults apply to what it leaves out.
  for (const key of ['bind', 'port', 'path']) {
    const value = gmail.serve?.[key];
    if (typeof value === 'string' || typeof value === 'number') args.push(`--${key}`, String(value));
  }
  if (gmail.pushToken !== undefined) args.push('--token', shown ? '<hooks.gmail.pushToken>' : gmail.pushToken);
  args.push('--hook-url', gmail.hookUrl ?? hookUrl(config.gateway.port, config.hooks.path));
  args.push('--hook-token', shown ? '<hooks.gmail.hookToken>' : gmail.hookToken);
  if (gmail.includeBody ?? GMAIL_DEFAULTS.includeBody) args.push('--include-body');
  args.push('--max-bytes', String(gmail.maxBytes ?? GMAIL_DEFAULTS.maxBytes));
  return { ok: true, args };
}

/** The URL the companion posts to: this server on the loopback address, at `{path}/gmail`. */
export function hookUrl(port: number, path: string): string {
  return `http://127.0.0.1:${port}${normaliseHooksPath(path)}/gmail`;
}

/** The first executable file called `name` in the absolute directories of `env.PATH`, or `null`. */
export async function findOnPath(name: string, env: Env): Promise<string | null> {
  for (const dir of (env['PATH'] ?? '').split(delimiter)) {
    // An empty or relative entry means the current directory: never run a `gog` found there.
    if (!isAbsolute(dir)) continue;
    const file = join(dir, name);
    try {
      if (!(await stat(file)).isFile()) continue;
      await access(file, constants.X_OK);
      return file;
    } catch {
      // Not here: try the next directory.
    }
  }
  return null;
}

/**
 * The companion `serve` runs beside itself (and stops with itself) when the Gmail preset is set up:
 * `null` when it is not, `skip` with the reason when it is but the companion cannot run.
 */
export async function serveCompanion(
  config: Config,
  io: CompanionIo,
  deps: GmailDeps = {},
): Promise<{ run: () => Promise<void> } | { skip: string } | null> {
  if (config.hooks.gmail.account === undefined || !config.hooks.enabled || !config.hooks.presets.includes('gmail')) {
    return null;
  }
  if (io.env['HOOKS_INGRESS_SKIP_GMAIL_WATCHER'] === '1') return { skip: 'HOOKS_INGRESS_SKIP_GMAIL_WATCHER=1' };
  const built = companionArgs(config);
  if (!built.ok) return { skip: built.problem };
  const gog = await (deps.which ?? findOnPath)('gog', io.env);
  if (gog === null) return { skip: `gog is not on PATH (${INSTALL_HINT})` };
  return { run: () => superviseCompanion(gog, built.args, io, deps) };
}
