// A running server's reloads, planned before they are applied: the config read (the file on disk,
// or a text `try` sent as that file's) with the server's own environment and transforms directory,
// its transforms loaded and checked, and what it would change against what the server runs. A
// reload applies the plan; `reload --dry-run` and `try` stop at the plan, so the three agree.

import { loadConfig, loadConfigText } from '../config/load.ts';
import { stateExposure } from '../config/state-exposure.ts';
import type { Config, ConfigResult, Env } from '../config/types.ts';
import type { LogFields, Logger } from '../log.ts';
import { type Loaded, loaded, needsRestart, reloadChanges, sameConfig } from './reload-changes.ts';
import { coalescedReloads, type ReloadChanges, type Reloads, type ReloadVerdict } from './reloads.ts';
import { checkTransformsOf } from './transforms.ts';

/** What reading a config would do: its changes, or why it would be refused. */
export type Plan =
  | { ok: true; next: Loaded; changes: ReloadChanges; needsRestart: string[]; differs: boolean }
  | { ok: false; problems: string[] };

/** What `reload --dry-run` answers: what a reload would do now, nothing of it applied. */
export type DryRunVerdict =
  | { outcome: 'would-apply'; at: string; file: string; changes: ReloadChanges; needsRestart?: string[] }
  | { outcome: 'refused'; at: string; file: string; problems: string[] };

/** The server's side of reloads: plans, dry runs, and reloads coalesced (reloads.ts). */
export interface Reloader {
  reloads: Reloads;
  /** What reading `text` (else the config file) would change, against what the server runs now. */
  plan(text: string | null, signal?: AbortSignal): Promise<Plan>;
  dryRun(): Promise<DryRunVerdict>;
  /** The config file the server reads. */
  file: string;
}

/** What {@link reloader} is handed by serve. */
export interface ReloaderParts {
  file: string;
  env: Env;
  /** The config the server started with: keys of RESTART_KEYS are judged against it. */
  started: Config;
  /** The state directory the server holds: no config whose transforms could read it is taken. */
  stateDir: string;
  log: Logger;
  /** Swaps in a config (the service's reload). */
  apply(config: Config): Promise<void>;
  now?: () => number;
}

/** The reloads of a server started on `parts.started`. */
export async function reloader(parts: ReloaderParts): Promise<Reloader> {
  const { file } = parts;
  const now = parts.now ?? Date.now;
  const at = () => new Date(now()).toISOString();
  // What the server runs: what a plan is judged against, replaced by each reload applied.
  const running = { current: await loaded(parts.started) };
  const plan = (text: string | null, signal?: AbortSignal) => _plan(parts, running.current, text, signal);
  const reloads = coalescedReloads((signal) => _reload(parts, plan, running, at, signal), now);
  return {
    reloads,
    plan,
    file,
    async dryRun() {
      const planned = await plan(null);
      if (!planned.ok) return { outcome: 'refused', at: at(), file, problems: planned.problems };
      const restart = planned.needsRestart;
      return {
        outcome: 'would-apply',
        at: at(),
        file,
        changes: planned.changes,
        ...(restart.length === 0 ? {} : { needsRestart: restart }),
      };
    },
  };
}

// The config read (the file, or `text` as the file's), its transforms checked and its state
// exposure judged again, and what it would change against `current`.
async function _plan(
  { file, env, started, stateDir }: ReloaderParts,
  current: Loaded,
  text: string | null,
  signal?: AbortSignal,
): Promise<Plan> {
  const read: ConfigResult = text === null ? await loadConfig(file, env) : await loadConfigText(text, file, env);
  if (!read.ok) return read;
  const problems = await checkTransformsOf(read.config, signal);
  if (problems.length > 0) return { ok: false, problems };
  // Judged again as at the start: a link made in the transforms directory since may lead there.
  const exposed = (await stateExposure(stateDir, read.config.hooks.transformsDir)).problem;
  if (exposed !== null) return { ok: false, problems: [`state directory ${stateDir}: ${exposed}`] };
  const next = await loaded(read.config);
  return {
    ok: true,
    next,
    changes: reloadChanges(current, next),
    needsRestart: needsRestart(started, read.config),
    differs: !sameConfig(current, next),
  };
}

// One reload: the file planned, then applied (unless refused, or the server is stopping), logged,
// and what the server runs replaced.
async function _reload(
  parts: ReloaderParts,
  plan: Reloader['plan'],
  running: { current: Loaded },
  at: () => string,
  signal: AbortSignal,
): Promise<ReloadVerdict> {
  const { file, log } = parts;
  const stopped = (): ReloadVerdict => ({ outcome: 'failed', at: at(), file, problems: ['the server is stopping'] });
  const planned = await plan(null, signal);
  if (signal.aborted) return stopped();
  if (!planned.ok) {
    log.error('reload refused: the config has problems; the old one stays', { problems: planned.problems.join('; ') });
    return { outcome: 'refused', at: at(), file, problems: planned.problems };
  }
  try {
    await parts.apply(planned.next.config);
  } catch (error) {
    log.error('reload failed; the old config stays where it was not yet replaced', { error: String(error) });
    return {
      outcome: 'failed',
      at: at(),
      file,
      problems: ['the reload failed part way; the server log has the error'],
    };
  }
  // Keys a running server cannot take, against what it started with: said with every verdict
  // until a restart, not reported as applied in silence.
  const restart = planned.needsRestart;
  running.current = planned.next;
  log.info('reloaded', {
    file: planned.next.config.file,
    ...changeFields(planned.changes),
    ...(restart.length === 0 ? {} : { needsRestart: restart.join(' ') }),
  });
  return {
    outcome: 'applied',
    at: at(),
    file,
    changes: planned.changes,
    ...(restart.length === 0 ? {} : { needsRestart: restart }),
  };
}

/** A reload's changes as log fields: one per kind that changed, names joined (never a secret's value). */
export function changeFields(changes: ReloadChanges): LogFields {
  const fields: LogFields = {};
  for (const [kind, lists] of Object.entries(changes) as [string, Record<string, string[]>][]) {
    for (const [how, names] of Object.entries(lists)) {
      if (names.length > 0) fields[`${kind}${how[0]!.toUpperCase()}${how.slice(1)}`] = names.join(' ');
    }
  }
  return fields;
}
