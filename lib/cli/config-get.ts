// `hooks-ingress config get KEY`: one configured value as hooks-ingress uses it, so scripts need
// not parse the file themselves (which breaks on the comments and trailing commas JSONC allows).
import { readFile } from 'node:fs/promises';
import { substituteEnv } from '../config/env.ts';
import { buildConfig } from '../config/load.ts';
import { locateConfig, locateStateDir } from '../config/locate.ts';
import { DEFAULT_HEARTBEAT_PROMPT, DEFAULT_PATHS, DEFAULTS } from '../config/normalise.ts';
import type { Config } from '../config/types.ts';
import { parseJsonc } from '../config/jsonc.ts';
import { type Issue, join } from '../schema.ts';
import { FAILURE, type Io, USAGE } from './io.ts';
import { loadConfigFor } from './load-config.ts';
import { runGroup } from './group.ts';
import { parseCommand, usageLine } from './usage.ts';

export const CONFIG_HELP = `Usage: hooks-ingress config COMMAND [options]

Read the configuration as hooks-ingress sees it.

Commands:
  get       print one configured value

Run "hooks-ingress config COMMAND --help" for a command's options.
`;

const GET_HELP = `Usage: hooks-ingress config get KEY [options]

Print the value of one config key as hooks-ingress uses it: after comments and
trailing commas, \${NAME} variables, hooks.tokenFile (or the systemd credential)
and defaults. A string prints as it is, anything else as JSON. KEY is a key path
as in hooks-ingress.json(5): hooks.token, gateway.port, agents.list[0].model,
models.providers.ollama.baseUrl; state.dir prints the state directory in use.
Exits 1 when the config is invalid, the key is unknown, or it has no value.

Options:
  -c, --config PATH     config file
  -h, --help            show this help
`;

const GET_OPTIONS = { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } } as const;

// Keys whose value comes from a default when the file does not set them.
const DEFAULT_VALUES: Readonly<Record<string, unknown>> = {
  ...Object.fromEntries(
    Object.entries(DEFAULT_PATHS).map(([name, path]) => [path, DEFAULTS[name as keyof typeof DEFAULTS]]),
  ),
  'hooks.enabled': false,
  'hooks.allowRequestSessionKey': false,
  'hooks.unknownPayloadFields': 'refuse',
  'agents.defaults.heartbeat.prompt': DEFAULT_HEARTBEAT_PROMPT,
  'agents.defaults.heartbeat.target': 'last',
};

/** `hooks-ingress config COMMAND`; resolves to the exit code. */
export function configCommand(argv: readonly string[], io: Io): Promise<number> {
  return runGroup(
    { name: 'config', help: CONFIG_HELP, commands: { get: { options: GET_OPTIONS, run: _get } } },
    argv,
    io,
  );
}

async function _get(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('config get', argv, { options: GET_OPTIONS, help: GET_HELP, positionals: true }, io);
  if (typeof parsed === 'number') return parsed;
  const [key, ...extra] = parsed.positionals;
  const path = key === undefined ? null : parseKeyPath(key);
  if (key === undefined || extra.length > 0 || path === null) {
    const problem = key === undefined
      ? 'give the KEY to print'
      : extra.length > 0
      ? `one KEY only, got ${parsed.positionals.length}`
      : `"${key}" is not a key path`;
    io.stderr(usageLine('config get', problem));
    return USAGE;
  }
  // Only the variables inside KEY need to be set: the token's reader need not hold every signing secret.
  const config = await loadConfigFor(parsed.values, { ...io, command: 'config get' }, { key: keyName(path) });
  if (config === null) return FAILURE;
  const unknown = await unknownKey(path, config.dir);
  if (unknown !== null) {
    io.stderr(`hooks-ingress config get: ${unknown}\n`);
    return FAILURE;
  }
  const value = await _effective(path, config, io);
  if (value === undefined || value === null) {
    io.stderr(`hooks-ingress config get: ${keyName(path)} is not set\n`);
    return FAILURE;
  }
  io.stdout(`${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n`);
  return 0;
}

/** `hooks.mappings[0].id` or `models.providers["my llm"].api` as its segments; `null` when it is not a key path. */
export function parseKeyPath(key: string): (string | number)[] | null {
  const segments: (string | number)[] = [];
  const token = /\.?([^.[\]"]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/y;
  let at = 0;
  while (at < key.length) {
    token.lastIndex = at;
    const match = token.exec(key);
    if (match === null || (at === 0 && key.startsWith('.'))) return null;
    if (match[1] !== undefined) segments.push(match[1]);
    else if (match[2] !== undefined) segments.push(Number(match[2]));
    else segments.push(JSON.parse(match[3]!) as string);
    at = token.lastIndex;
  }
  return segments.length > 0 && typeof segments[0] === 'string' ? segments : null;
}

/** The key path written back the way problems name keys. */
export function keyName(path: readonly (string | number)[]): string {
  return path.reduce<string>((at, segment) => join(at, segment), '');
}

/**
 * Why a key path is not a key of the config file (unknown key, with a guess), or `null`. The
 * schema decides: a file holding only that key is validated, and only "unknown key" counts.
 */
export async function unknownKey(path: readonly (string | number)[], dir: string): Promise<string | null> {
  let probe: unknown = {};
  for (const segment of [...path].reverse()) probe = typeof segment === 'number' ? [probe] : { [segment]: probe };
  const result = await buildConfig(probe, { file: null, env: {}, dir });
  const asked = keyName(path.map((s) => (typeof s === 'number' ? 0 : s)));
  const problem = result.ok ? undefined : result.problems.find((p) => {
    const [where = ''] = p.split(': unknown key');
    return p.includes(': unknown key') &&
      (asked === where || asked.startsWith(`${where}.`) || asked.startsWith(`${where}[`));
  });
  return problem ?? null;
}

// The value in use: the token as read (tokenFile, credential), the state directory as located,
// else what the file says after ${NAME} substitution, else the default.
async function _effective(path: readonly (string | number)[], config: Config, io: Io): Promise<unknown> {
  const name = keyName(path);
  if (name === 'hooks.token') return config.hooks.token;
  if (name === 'hooks.path') return config.hooks.path;
  if (name === 'state.dir') return locateStateDir(undefined, config, io.env);
  const file = config.file ?? locateConfig(undefined, io.env).path;
  const parsed = parseJsonc(await readFile(file, 'utf8'));
  const issues: Issue[] = [];
  let value: unknown = parsed.ok ? substituteEnv(parsed.value, '', io.env, issues) : undefined;
  for (const segment of path) {
    value = typeof value === 'object' && value !== null && Object.hasOwn(value, segment)
      ? (value as Record<string, unknown>)[segment]
      : undefined;
  }
  return value ?? DEFAULT_VALUES[name];
}
