// Validating, tokenFile, transforms containment; buildConfig(), scoped to one key's variables for config get.

import { readFile } from 'node:fs/promises';
import { dirname, join as joinPath, resolve } from 'node:path';
import { buildChannels } from '../delivery/channels.ts';
import { resolveInside, resolveModule } from '../guard/contain.ts';
import { loadSchemes } from '../guard/signatures/verify.ts';
import { check, formatIssue, type Issue } from '../schema.ts';
import {
  checkConfig,
  gmailShadowWarnings,
  modelWarnings,
  notifyWarnings,
  sessionKeyWarnings,
  templateWarnings,
} from './checks.ts';
import { type EnvScope, resolveEnv, within } from './env.ts';
import { type FileConfig, fileSchema } from './file-schema.ts';
import { forwardUnused } from './forward-unused.ts';
import { workHookWarnings } from './work-checks.ts';
import { checkCoalesce } from './coalesce-checks.ts';
import { checkForward, forwardWarnings } from './forward-checks.ts';
import { callbackWarnings, checkCallbacks } from './callback-checks.ts';
import { checkLimits } from './limit-checks.ts';
import { locateDeno } from './locate.ts';
import { normalise, TRANSFORMS_ROOT } from './normalise.ts';
import { deeperThan, parseConfigText, readConfigFile, unreadable } from './read.ts';
import type { Config, ConfigResult, Env } from './types.ts';
import { urlCredentials } from './url-credentials.ts';

/** Reads, parses and validates a config file. A missing file is a problem like any other. */
export async function loadConfig(file: string, env: Env, scope: EnvScope = 'all'): Promise<ConfigResult> {
  const read = await readConfigFile(file);
  if (!read.ok) return { ok: false, problems: read.problems };
  return buildConfig(read.value, { file, env, scope });
}

/** Parses and validates a config file's text as if read from `file` (relative paths against its directory). */
export async function loadConfigText(text: string, file: string, env: Env): Promise<ConfigResult> {
  const read = parseConfigText(text, file);
  if (!read.ok) return { ok: false, problems: read.problems };
  return buildConfig(read.value, { file, env });
}

/**
 * Validates a parsed config value; reads `hooks.tokenFile` or the systemd credential when they stand for the token.
 * With a `scope` of one key, a variable that is not set elsewhere is no problem: the keys naming it keep their
 * `${NAME}` text and are not judged (a config built so serves to read that key, never to run).
 */
export async function buildConfig(
  raw: unknown,
  where: { file: string | null; env: Env; dir?: string; scope?: EnvScope },
): Promise<ConfigResult> {
  const dir = where.dir ?? (where.file === null ? process.cwd() : dirname(where.file));
  const tooDeep = deeperThan(raw);
  if (tooDeep !== null) return { ok: false, problems: [formatIssue(tooDeep)] };
  const resolved = resolveEnv(raw, where.env, where.scope ?? 'all');
  // A key whose variable is missing (or left unresolved) has that one problem: its value is not
  // judged too, nor, after the schema, the section holding it (a channel's options are checked
  // together). The schema's own problems with a section (an unknown key) stand: no value inside causes them.
  const unjudged = [...resolved.missing.map((issue) => issue.path), ...resolved.unresolved];
  const valueJudged = (issue: Issue) => !unjudged.some((path) => within(issue.path, path));
  const judged = (issue: Issue) =>
    valueJudged(issue) && !unjudged.some((path) => issue.path !== '' && within(path, issue.path));
  const issues: Issue[] = [...resolved.missing];
  const checked = check(fileSchema, resolved.value);
  if (!checked.ok) issues.push(...checked.issues.filter(valueJudged));
  if (!checked.ok || issues.length > 0) {
    return { ok: false, problems: (issues.length > 0 ? issues : _unresolved(resolved.unresolved)).map(formatIssue) };
  }
  const file: FileConfig = checked.value;
  issues.push(...urlCredentials(file));

  const token = await _readToken(file, dir, where.env, issues);
  // The adapters are built only to check their options here; the composition root builds the ones it uses.
  await buildChannels(file.channels ?? {}, issues);
  const lexical = normalise(file, { file: where.file, dir, token });
  issues.push(
    ...checkConfig(lexical),
    ...checkForward(lexical),
    ...checkCallbacks(lexical),
    ...checkCoalesce(lexical),
    ...checkLimits(lexical),
  );
  const contained = await containTransforms(lexical, file.hooks?.transformsDir, issues);
  // Where deno is depends on the PATH of the process that reads the config, as a variable does: a
  // reader of one key looks for it only when that key is a transform setting (the server has its own PATH).
  const scope = where.scope ?? 'all';
  const denoNeeded = scope === 'all' ||
    ['hooks.transformRuntime', 'hooks.transformDenoPath'].some((path) => within(path, scope.key));
  const config = denoNeeded ? await _transformRuntime(contained, where.env, issues) : contained;
  const problems = issues.filter(judged);
  if (problems.length > 0) return { ok: false, problems: problems.map(formatIssue) };
  // A config is used to verify requests as soon as it is built: the schemes it names are imported now.
  await loadSchemes(config.hooks.mappings.flatMap((m) => (m.signature === undefined ? [] : [m.signature.scheme])));
  // In forward mode the models are the upstream's: what matters is which keys go unused here.
  const warnings = [
    ...sessionKeyWarnings(config),
    ...(config.hooks.forward === null ? modelWarnings(config) : [...forwardUnused(config), ...forwardWarnings(config)]),
    ...gmailShadowWarnings(config),
    ...templateWarnings(config),
    ...notifyWarnings(config),
    ...callbackWarnings(config),
    ...workHookWarnings(config),
  ];
  return { ok: true, config, ignored: checked.ignored, warnings: warnings.map(formatIssue) };
}

// Keys left with their ${NAME} text that the schema could not pass over: their variables are needed after all.
function _unresolved(paths: readonly string[]): Issue[] {
  return paths.map((path) => ({ path, message: 'cannot be checked without the environment variable it names' }));
}

async function _readToken(file: FileConfig, dir: string, env: Env, issues: Issue[]): Promise<string | null> {
  const hooks = file.hooks;
  if (hooks?.token !== undefined && hooks.tokenFile !== undefined) {
    issues.push({ path: 'hooks.tokenFile', message: 'cannot be set together with hooks.token' });
    return null;
  }
  if (hooks?.token !== undefined) return hooks.token;
  const [source, at] = hooks?.tokenFile !== undefined
    ? [resolve(dir, hooks.tokenFile), 'hooks.tokenFile']
    : env['CREDENTIALS_DIRECTORY']
    ? [joinPath(env['CREDENTIALS_DIRECTORY'], 'hooks-token'), '']
    : [null, ''];
  if (source === null) return null;
  try {
    const token = (await readFile(source, 'utf8')).trim();
    if (token === '') issues.push({ path: at || 'hooks.token', message: `the file ${source} is empty` });
    return token || null;
  } catch (error) {
    // An absent credential just means none was passed; an absent tokenFile is the operator's mistake.
    if (at === '' && (error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    issues.push({ path: at || 'hooks.token', message: `cannot read ${source}: ${unreadable(error)}` });
    return null;
  }
}

// Transform paths are checked on real paths now, and again by the loader before each import.
// The config that comes back names the real folder and the real module files.
async function containTransforms(config: Config, transformsDir: string | undefined, issues: Issue[]): Promise<Config> {
  const users = config.hooks.mappings.map((m, i) => [m, i] as const).filter(([m]) => m.transform !== undefined);
  if (users.length === 0 && transformsDir === undefined) return config;
  const root = resolve(config.dir, TRANSFORMS_ROOT);
  const dir = await resolveInside(root, transformsDir ?? '.');
  if (!dir.ok) {
    // Without hooks.transformsDir the problem is the mapping's module, which needs the root.
    if (transformsDir !== undefined) {
      issues.push({ path: 'hooks.transformsDir', message: `${dir.reason} (the transforms root is ${root})` });
    } else for (const [mapping, i] of users) issues.push(_rootless(mapping.transform!.module, i, root, dir.reason));
    return config;
  }
  const mappings = [...config.hooks.mappings];
  for (const [mapping, i] of users) {
    const found = await resolveModule(dir.path, mapping.transform!.module);
    if (found.ok) mappings[i] = { ...mapping, transform: { ...mapping.transform!, module: found.path } };
    else issues.push({ path: `hooks.mappings[${i}].transform.module`, message: found.reason });
  }
  return { ...config, hooks: { ...config.hooks, transformsDir: dir.path, mappings } };
}

// Transforms set to run on Deno get the deno binary now, so that a missing one is a config problem and not a failing request.
async function _transformRuntime(config: Config, env: Env, issues: Issue[]): Promise<Config> {
  const { transformRuntime, transformDenoPath } = config.hooks;
  if (transformRuntime !== 'deno') {
    if (transformDenoPath !== null) {
      issues.push({ path: 'hooks.transformDenoPath', message: 'is used only with hooks.transformRuntime "deno"' });
    }
    return config;
  }
  const found = await locateDeno(transformDenoPath, env);
  if (found === null) {
    issues.push(
      transformDenoPath === null
        ? {
          path: 'hooks.transformRuntime',
          message: '"deno" needs the deno binary: none is on PATH (set hooks.transformDenoPath)',
        }
        : { path: 'hooks.transformDenoPath', message: `${transformDenoPath} is not an executable file` },
    );
    return config;
  }
  return { ...config, hooks: { ...config.hooks, transformDenoPath: found } };
}

// A transform module, with no hooks.transformsDir set, whose root cannot be used.
function _rootless(module: string, index: number, root: string, reason: string): Issue {
  const why = reason === 'the transforms root does not exist' ? 'which does not exist' : `which ${reason}`;
  return {
    path: `hooks.mappings[${index}].transform.module`,
    message: `"${module}" is looked for in the transforms root ${root}, ${why}`,
  };
}
