// `hooks-ingress gmail setup`: rewrites the config file for the gmail preset, keeping everything else.

import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, realpath, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { substituteEnv } from '../config/env.ts';
import { buildConfig } from '../config/load.ts';
import { locateConfig } from '../config/locate.ts';
import { deeperThan } from '../config/read.ts';
import { DEFAULTS } from '../config/normalise.ts';
import type { Config, Env } from '../config/types.ts';
import { generateToken } from '../guard/token.ts';
import { parseJsonc, stripJsonc } from '../config/jsonc.ts';
import { GENERATED_KEY_PREFIX } from '../policy/session-key.ts';
import { isObject } from '../object.ts';
import { formatIssue } from '../schema.ts';
import { hideUrlCredentials, shellWord } from '../text.ts';
import { companionArgs, GMAIL_DEFAULTS, hookUrl } from '../server/gmail-companion.ts';
import { FAILURE, type Io, USAGE } from './io.ts';
import { parseCommand, usageLine } from './usage.ts';

const SETUP_HELP = `Usage: hooks-ingress gmail setup --account ADDRESS [options]

Write the configuration the gmail preset needs, keeping everything else in the
file: hooks.enabled true, a new hooks.token when neither hooks.token nor
hooks.tokenFile is set, "gmail" in hooks.presets, hooks.allowRequestSessionKey
true and "hook:" in hooks.allowedSessionKeyPrefixes (the preset's session key
hook:gmail:<message id> comes from the payload), and hooks.gmail. A value the
file already has is kept unless a flag names a new one; hooks.gmail.hookUrl is
always rewritten. The result is validated first; nothing is written when it is
invalid. The original is kept as FILE.bak (mode 0600); comments do not survive.

Also creates hooks.gmail.hookToken, the credential gog posts with: it opens the
gmail hook only (gog takes its hook token on its command line alone, where
local users can read it). Prints the companion command on stdout, with
placeholders where its credentials go; "gmail run" fills them in.

Options:
      --account ADDRESS   the Gmail address to watch (required)
      --label LABEL       the label to watch (default INBOX)
      --topic TOPIC       the Pub/Sub topic, projects/<project>/topics/<name>
                          (default gog-gmail-watch)
      --subscription NAME the Pub/Sub push subscription (default gog-gmail-watch-push)
  -p, --port PORT         the port hooks-ingress listens on, for the hook URL
                          (default gateway.port, else ${DEFAULTS.port})
      --include-body      send the text body of each mail (the default)
      --no-include-body   send headers and the snippet only
      --max-bytes N       cap on the body bytes sent (default ${GMAIL_DEFAULTS.maxBytes})
  -c, --config PATH       config file (else $HOOKS_INGRESS_CONFIG, else
                          $XDG_CONFIG_HOME/hooks-ingress/config.json)
  -h, --help              show this help
`;

/** The options of `gmail setup`. */
export const SETUP_OPTIONS = {
  account: { type: 'string' },
  label: { type: 'string' },
  topic: { type: 'string' },
  subscription: { type: 'string' },
  port: { type: 'string', short: 'p' },
  'include-body': { type: 'boolean' },
  'no-include-body': { type: 'boolean' },
  'max-bytes': { type: 'string' },
  config: { type: 'string', short: 'c' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** What `gmail setup` was asked to write; absent fields keep the file's value, else the default. */
export interface SetupOptions {
  account: string;
  label?: string;
  topic?: string;
  subscription?: string;
  port?: number;
  includeBody?: boolean;
  maxBytes?: number;
}

/** The new file content, with notes on changes the operator should know of; or why there is none. */
export type SetupResult = { ok: true; value: Record<string, unknown>; notes: string[] } | {
  ok: false;
  problems: string[];
};

/**
 * Applies `gmail setup` to a parsed config file without touching anything it does not own.
 * Works on a copy; `env` resolves `${NAME}` in hooks.path for the hook URL.
 */
export function applyGmailSetup(
  raw: unknown,
  options: SetupOptions,
  env: Env,
  newToken: () => string = generateToken,
): SetupResult {
  if (!isObject(raw)) return { ok: false, problems: ['the file must hold a JSON object'] };
  // structuredClone recurses: a value nested too deep would overflow the stack.
  const tooDeep = deeperThan(raw);
  if (tooDeep !== null) return { ok: false, problems: [formatIssue(tooDeep)] };
  const root = structuredClone(raw);
  const problems = _shapeProblems(root);
  if (problems.length > 0) return { ok: false, problems };
  const notes: string[] = [];
  const hooks = _ensureObject(root, 'hooks');
  _setupHooks(hooks, notes, newToken);

  const gmail = _ensureObject(hooks, 'gmail');
  if (gmail['hookToken'] === undefined) {
    gmail['hookToken'] = newToken();
    notes.push(
      'generated hooks.gmail.hookToken, the credential gog posts with: it opens the gmail hook and nothing else',
    );
  }
  gmail['account'] = options.account;
  gmail['label'] = options.label ?? gmail['label'] ?? GMAIL_DEFAULTS.label;
  gmail['topic'] = options.topic ?? gmail['topic'] ?? GMAIL_DEFAULTS.topic;
  gmail['subscription'] = options.subscription ?? gmail['subscription'] ?? GMAIL_DEFAULTS.subscription;
  const url = _setupHookUrl(root, hooks, options.port, env);
  if (!url.ok) return { ok: false, problems: [url.problem] };
  const before = gmail['hookUrl'];
  if (typeof before === 'string' && before !== url.value) {
    notes.push(hideUrlCredentials(`hooks.gmail.hookUrl was ${before}; it is now ${url.value}`));
  }
  gmail['hookUrl'] = url.value;
  gmail['includeBody'] = options.includeBody ?? gmail['includeBody'] ?? GMAIL_DEFAULTS.includeBody;
  gmail['maxBytes'] = options.maxBytes ?? gmail['maxBytes'] ?? GMAIL_DEFAULTS.maxBytes;
  return { ok: true, value: root, notes };
}

// What the preset needs of `hooks`: on, a token, the preset, session keys from the request and a
// prefix that admits them; each change that undoes a setting of the owner's noted.
function _setupHooks(hooks: Record<string, unknown>, notes: string[], newToken: () => string): void {
  if (hooks['enabled'] === false) notes.push('hooks.enabled was false; it is now true');
  hooks['enabled'] = true;
  if (hooks['token'] === undefined && hooks['tokenFile'] === undefined) {
    hooks['token'] = newToken();
    notes.push('generated a new hook token (hooks.token)');
  }
  const presets = _ensureArray(hooks, 'presets');
  if (!presets.includes('gmail')) presets.push('gmail');
  if (hooks['allowRequestSessionKey'] === false) {
    notes.push(
      'hooks.allowRequestSessionKey was false; it is now true, because the gmail preset takes its session key from the payload',
    );
  }
  hooks['allowRequestSessionKey'] = true;
  if (hooks['allowedSessionKeyPrefixes'] === undefined) {
    notes.push(
      `hooks.allowedSessionKeyPrefixes was not set; it is now ["${GENERATED_KEY_PREFIX}"], so session keys chosen by a request must start with it`,
    );
  }
  const prefixes = _ensureArray(hooks, 'allowedSessionKeyPrefixes');
  // The preset's key starts with the same prefix as the generated keys; a prefix that admits one admits the other.
  const admitted = prefixes.some((p) =>
    typeof p === 'string' && GENERATED_KEY_PREFIX.startsWith(p.trim().toLowerCase())
  );
  if (!admitted) prefixes.push(GENERATED_KEY_PREFIX);
}

/** Runs `hooks-ingress gmail setup ARGV`. */
export async function runSetup(argv: readonly string[], io: Io): Promise<number> {
  const name = 'hooks-ingress gmail setup';
  const cli = parseCommand('gmail setup', argv, { options: SETUP_OPTIONS, help: SETUP_HELP }, io);
  if (typeof cli === 'number') return cli;
  const { values } = cli;
  const options = _setupOptions(values);
  if (!options.ok) {
    io.stderr(usageLine('gmail setup', options.error));
    return USAGE;
  }

  const { path } = locateConfig(values.config, io.env);
  const original = await _readOriginal(path);
  if (!original.ok) {
    io.stderr(`${name}: ${original.error}\n`);
    return FAILURE;
  }
  const parsed = original.text === null ? { ok: true as const, value: {} } : parseJsonc(original.text);
  if (!parsed.ok) {
    io.stderr(`${name}: cannot parse ${path}: ${parsed.error}\n`);
    return FAILURE;
  }
  const refuse = (problems: readonly string[]) => {
    io.stderr(
      `${name}: the result would be invalid, so ${path} was not changed:\n${problems.map((p) => `  ${p}\n`).join('')}`,
    );
    return FAILURE;
  };
  const applied = applyGmailSetup(parsed.value, options.value, io.env);
  if (!applied.ok) return refuse(applied.problems);
  const built = await buildConfig(applied.value, { file: original.target, env: io.env });
  if (!built.ok) return refuse(built.problems);
  const args = companionArgs(built.config, true);
  if (!args.ok) return refuse([args.problem]);

  if (!(await _write(name, original, `${JSON.stringify(applied.value, null, 2)}\n`, io))) return FAILURE;
  for (const note of applied.notes) io.stderr(`${name}: ${note}\n`);

  _printWatchStart(name, built.config, options.value.account, io);
  io.stdout(`gog ${args.args.map(shellWord).join(' ')}\n`);
  return 0;
}

// Writes the new text (the original kept as FILE.bak first); `false` once the failure is reported.
async function _write(
  name: string,
  original: { target: string; text: string | null },
  text: string,
  io: Io,
): Promise<boolean> {
  if (text === original.text) {
    io.stderr(`${name}: ${original.target} already holds this configuration; not rewritten\n`);
    return true;
  }
  const backup = `${original.target}.bak`;
  let writing = original.text === null ? original.target : backup;
  try {
    await mkdir(dirname(original.target), { recursive: true, mode: 0o700 });
    if (original.text !== null) await _writeAtomic(backup, original.text);
    writing = original.target;
    await _writeAtomic(original.target, text);
  } catch (error) {
    io.stderr(
      `${name}: cannot write ${writing}: ${
        (error as NodeJS.ErrnoException).code ?? String(error)
      }; ${original.target} was not changed\n`,
    );
    return false;
  }
  io.stderr(`${name}: wrote ${original.target}${original.text === null ? '' : ` (the original is in ${backup})`}\n`);
  if (original.text !== null && _hasComments(original.text)) {
    io.stderr(
      `${name}: the comments in ${original.target} were not kept (it was rewritten as JSON); ${backup} still has them\n`,
    );
  }
  return true;
}

// What the operator does next: register the watch, and let `gmail run` fill in the credentials.
function _printWatchStart(name: string, config: Config, account: string, io: Io): void {
  const gmail = config.hooks.gmail;
  const topic = gmail.topic ?? GMAIL_DEFAULTS.topic;
  // Gmail wants the full topic name; a bare name cannot say which Google Cloud project it lives in.
  const fullTopic = topic.startsWith('projects/') ? topic : `projects/<project-id>/topics/${topic}`;
  const start = [
    'gmail',
    'watch',
    'start',
    '--account',
    account,
    '--topic',
    fullTopic,
    '--label',
    gmail.label ?? GMAIL_DEFAULTS.label,
  ];
  io.stderr(
    `${name}: register the watch once with the command below` +
      `${
        fullTopic === topic
          ? ''
          : ' (put your Google Cloud project id in the topic, or pass --topic projects/<id>/topics/<name>)'
      };` +
      ` Gmail ends a watch after 7 days, so renew it with "gog gmail watch renew --account ${shellWord(account)}":\n` +
      `  gog ${start.map(shellWord).join(' ')}\n`,
  );
  io.stderr(
    `${name}: "hooks-ingress gmail run" runs the companion command below with its credentials in place of the placeholders` +
      ` (from the config file). gog takes its hook token only on its command line, where local users can read it,` +
      ` so it gets hooks.gmail.hookToken, which opens the gmail hook and nothing else.\n`,
  );
}

function _setupOptions(values: {
  account?: string;
  label?: string;
  topic?: string;
  subscription?: string;
  port?: string;
  'include-body'?: boolean;
  'no-include-body'?: boolean;
  'max-bytes'?: string;
}): { ok: true; value: SetupOptions } | { ok: false; error: string } {
  const account = values.account?.trim();
  if (!account) return { ok: false, error: '--account is required (the Gmail address to watch)' };
  const value: SetupOptions = { account };
  for (const key of ['label', 'topic', 'subscription'] as const) {
    const given = values[key];
    if (given === undefined) continue;
    if (given.trim() === '') return { ok: false, error: `--${key} may not be empty` };
    value[key] = given.trim();
  }
  if (values.port !== undefined) {
    const port = Number(values.port);
    if (!(Number.isInteger(port) && port >= 1 && port <= 65535)) {
      return { ok: false, error: '--port must be an integer from 1 to 65535' };
    }
    value.port = port;
  }
  if (values['max-bytes'] !== undefined) {
    const max = Number(values['max-bytes']);
    if (!(Number.isInteger(max) && max >= 1)) {
      return { ok: false, error: '--max-bytes must be a whole number of at least 1' };
    }
    value.maxBytes = max;
  }
  if (values['include-body'] && values['no-include-body']) {
    return { ok: false, error: 'Cannot set both --include-body and --no-include-body' };
  }
  if (values['include-body']) value.includeBody = true;
  if (values['no-include-body']) value.includeBody = false;
  return { ok: true, value };
}

function _setupHookUrl(
  root: Record<string, unknown>,
  hooks: Record<string, unknown>,
  flag: number | undefined,
  env: Env,
): { ok: true; value: string } | { ok: false; problem: string } {
  const gateway = root['gateway'];
  const configured = isObject(gateway) && typeof gateway['port'] === 'number' ? gateway['port'] : undefined;
  const port = flag ?? configured ?? DEFAULTS.port;
  if (port === 0) {
    return {
      ok: false,
      problem:
        'hooks.gmail.hookUrl: gateway.port is 0 (any free port), so pass --port with the port the server listens on',
    };
  }
  // An invalid hooks.path is reported by the validation that follows; the URL only needs a best guess.
  const raw = typeof hooks['path'] === 'string' ? substituteEnv(hooks['path'], 'hooks.path', env, []) : DEFAULTS.path;
  return { ok: true, value: hookUrl(port, String(raw)) };
}

/** The file's text (`null` when it does not exist) and the real path to write, so a symlink stays one. */
async function _readOriginal(
  path: string,
): Promise<{ ok: true; target: string; text: string | null } | { ok: false; error: string }> {
  try {
    const target = await realpath(path);
    return { ok: true, target, text: await readFile(target, 'utf8') };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { ok: true, target: path, text: null };
    return { ok: false, error: `cannot read ${path}: ${code ?? String(error)}` };
  }
}

/** Writes through a fresh owner-only file renamed into place, so a reader never sees half a file. */
async function _writeAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
}

/** Whether the JSONC text has a comment: a slash outside strings that stripping blanked. */
function _hasComments(text: string): boolean {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const stripped = stripJsonc(body);
  for (let i = 0; i < body.length; i++) if (body[i] === '/' && stripped[i] === ' ') return true;
  return false;
}

/** Where a key setup writes into holds something of another kind: it cannot write there without losing it. */
function _shapeProblems(root: Record<string, unknown>): string[] {
  const hooks = root['hooks'];
  if (hooks === undefined) return [];
  if (!isObject(hooks)) return ['hooks: must be an object'];
  const problems: string[] = [];
  if (hooks['gmail'] !== undefined && !isObject(hooks['gmail'])) problems.push('hooks.gmail: must be an object');
  for (const key of ['presets', 'allowedSessionKeyPrefixes']) {
    if (hooks[key] !== undefined && !Array.isArray(hooks[key])) problems.push(`hooks.${key}: must be an array`);
  }
  return problems;
}

/** The object under `key`, created when absent; `_shapeProblems` ruled out anything else. */
function _ensureObject(parent: Record<string, unknown>, key: string): Record<string, unknown> {
  if (parent[key] === undefined) parent[key] = {};
  return parent[key] as Record<string, unknown>;
}

/** The array under `key`, created when absent; `_shapeProblems` ruled out anything else. */
function _ensureArray(parent: Record<string, unknown>, key: string): unknown[] {
  if (parent[key] === undefined) parent[key] = [];
  return parent[key] as unknown[];
}
