// The composition root: the config is plain data; the parts that act on it (adapters, providers,
// the store, the runtime, the HTTP app) are built here and handed what each needs.

import type { Config } from '../config/types.ts';
import type { Deliver } from '../delivery/adapter.ts';
import { buildChannels } from '../delivery/channels.ts';
import { createDeliver, type DeliveryOptions } from '../delivery/deliver.ts';
import { type App, createApp } from '../edge/server.ts';
import { createTelemetry } from '../edge/telemetry.ts';
import type { Logger } from '../log.ts';
import { Heartbeat } from '../runtime/heartbeat.ts';
import { providerRegistry } from '../runtime/providers/registry.ts';
import type { RunnerOptions } from '../runtime/context.ts';
import { Runner } from '../runtime/runner.ts';
import { hookResumed } from '../runtime/hook-paused.ts';
import { Alerter } from '../runtime/alerts.ts';
import { watchStore } from '../runtime/alert-watch.ts';
import type { Alerts } from '../model/alerts.ts';
import type { HookStatus } from '../model/hook-status.ts';
import { createCompletions } from '../runtime/completion.ts';
import type { ForwardMode } from '../runtime/forward.ts';
import { retryOutbox, type RetryOutcome, type RetryRequest } from '../store/journal/outbox-retry.ts';
import { CallbackSender } from '../runtime/callbacks.ts';
import { serviceTransforms } from './transforms.ts';
import { HookPauses } from './pauses.ts';
import { withPauses } from '../model/hook-status.ts';
import type { Route } from '../model/records.ts';
import { Ledger } from '../store/ledger/ledger.ts';
import { ledgerCapacity } from '../store/ledger/config.ts';
import { type Fingerprints, fingerprints } from '../guard/fingerprint.ts';
import { openCredentialKey } from '../store/state/credential-key.ts';
import { Store } from '../store/journal/store.ts';
import { Transcripts } from '../store/journal/transcripts.ts';

/** The running parts of a server, without its listener. */
export interface Service {
  app: App;
  /** The open store (read by the control channel's status). */
  store: Store;
  /** `outbox retry`: forward mode's entries and the completion callbacks. */
  retryOutbox: (request: RetryRequest) => Promise<RetryOutcome>;
  /** Whether forward mode runs (it is on or off for the life of the process). */
  forwarding: boolean;
  /** The request ledger, unless it could not be opened. */
  ledger: Ledger | null;
  /** The run queue (`runs retry` adds to it, `runs redeliver` sends beside it). */
  runner: Runner;
  /** The configuration the server runs now (the last one reloaded). */
  config(): Config;
  /** Each hook's work now: its runs and its controls (status, the inspector page). */
  hookStatus(): HookStatus[];
  /** Pause, resume and drop, and what the paused hooks hold. */
  pauses: HookPauses;
  /** Swaps in a reloaded configuration; every part is built (and what it needs imported) before any is swapped. */
  reload(config: Config): Promise<void>;
  /** Stops the runtime, the heartbeat and the transforms, then closes the store. */
  stop(): Promise<void>;
}

/** Builds the chat adapters a config names and a delivery over them. */
export async function buildDeliver(
  config: Config,
  lastRoute: () => Route | null,
  retry?: DeliveryOptions['retry'],
): Promise<Deliver> {
  // The config check already built each adapter once, so building them again reports nothing new.
  const channels = await buildChannels(config.channels, []);
  return createDeliver({ channels, lastRoute, ...(retry === undefined ? {} : { retry }) });
}

/**
 * Opens the request ledger. It is diagnostic: a ledger that cannot be opened is logged and the
 * server serves without it; a write that fails later is logged (at most once a minute) and skipped.
 */
export async function openLedger(
  config: Config,
  stateDir: string,
  log: Logger,
  alerts?: Alerts,
): Promise<Ledger | null> {
  let said = 0;
  const onError = (error: unknown) => {
    const code = (error as NodeJS.ErrnoException).code;
    alerts?.note({
      kind: 'storage',
      hook: '',
      code: `ledger ${typeof code === 'string' && /^[A-Z_]{2,32}$/.test(code) ? code : 'write failed'}`,
    });
    if (Date.now() - said < 60_000) return;
    said = Date.now();
    log.error('request ledger not written', { error: (error as NodeJS.ErrnoException).code ?? String(error) });
  };
  try {
    return await Ledger.open(stateDir, { config: config.hooks.ledger, onError });
  } catch (error) {
    log.error('request ledger not opened; serving without it', {
      error: (error as NodeJS.ErrnoException).code ?? String(error),
    });
    return null;
  }
}

/**
 * The fingerprints the ledger keeps of the tokens requests came with, under the state directory's
 * key (made at the first start). Like the ledger it is diagnostic: without a usable key the reason
 * is logged and no fingerprint is made, so a replay of a token-authenticated request needs --force.
 */
export async function openFingerprints(stateDir: string, log: Logger): Promise<Fingerprints | null> {
  try {
    const key = await openCredentialKey(stateDir, { make: true });
    if (!key.ok) {
      log.error("credential key not usable; requests are recorded without their token's fingerprint", {
        file: key.file,
        problem: key.problem,
      });
      return null;
    }
    if (key.tightened !== null) {
      log.warn('credential key was open to group or others; made 0600', {
        file: key.file,
        mode: `0${key.tightened.toString(8)}`,
      });
    }
    return fingerprints(key.key);
  } catch (error) {
    log.error("credential key not made; requests are recorded without their token's fingerprint", {
      error: (error as NodeJS.ErrnoException).code ?? String(error),
    });
    return null;
  }
}

/** Opens the state directory and starts the runtime and the HTTP app on `config`. */
export async function startService(config: Config, stateDir: string, log: Logger): Promise<Service> {
  const store = await _openStore(config, stateDir, log);
  // The owner's alerts go through a delivery of their own; the store is looked at for what nobody tells them.
  const alerts = new Alerter({
    config: config.alerts,
    deliver: await buildDeliver(config, () => store.lastRoute()),
    log,
  });
  const unwatch = watchStore(alerts, store);
  // Completion callbacks leave through queues of their own, one per receiver, beside the runs.
  const callbacks = new CallbackSender({ store, config, log, alerts });
  const { heartbeat, runner, runtimeParts } = await _startRuntime(config, store, stateDir, log, alerts, callbacks);
  callbacks.kick();
  const transforms = serviceTransforms(log);
  await transforms.configure(config);
  const completions = createCompletions(store);
  // The limiter lives in the app (a reload may replace it); the metrics page reads it when rendered.
  const telemetry = createTelemetry({
    store,
    limiter: () => app.limiterStats(),
    queueDepth: () => runner.depth,
    hooks: () => runner.hookStatus(),
    waiters: () => completions.held() + app.held(),
    paused: () => pauses.list(),
  });
  // Forward mode: accepted actions leave through the outbox to the upstream gateway.
  // Its sender is imported only in forward mode.
  const forward: ForwardMode | null = config.hooks.forward === null
    ? null
    : (await import('../runtime/forward.ts')).startForward(config, store, log);
  const ledger = await openLedger(config, stateDir, log, alerts);
  const prints = await openFingerprints(stateDir, log);
  const app = createApp({
    ...{ config, store, heartbeat, log, runs: runner, transforms: transforms.call, telemetry, completions, alerts },
    ...(forward === null ? {} : { forwarded: forward.kick }),
    ...(ledger === null ? {} : { ledger }),
    ...(prints === null ? {} : { fingerprints: prints }),
  });
  const { pauses, rehook } = _startPauses(config, { store, runner, heartbeat, log, forward });
  return _service({
    pauses,
    rehook,
    config,
    log,
    store,
    heartbeat,
    runner,
    runtimeParts,
    transforms,
    forward,
    callbacks,
    ledger,
    app,
    alerts,
    unwatch,
  });
}

async function _openStore(config: Config, stateDir: string, log: Logger): Promise<Store> {
  const { store, tornBytes, rejected } = await Store.open(stateDir, {
    idempotencyTtlMs: config.hooks.idempotencyTtlSeconds * 1000,
    retainRootsMs: config.hooks.ledger.maxAgeSeconds * 1000,
    ledgerEntries: ledgerCapacity(config.hooks.ledger),
  });
  // One warning per line left out (the first 20, then a count), so a damaged journal is noticed and found.
  for (const { line, problem } of rejected.slice(0, 20)) log.warn('journal line skipped', { line, problem });
  if (rejected.length > 0 || tornBytes > 0) {
    log.warn('journal had unreadable lines', { skipped: rejected.length, tornBytes });
  }
  return store;
}

/** What the runner is built with from a config, again at each reload. */
type _RuntimeParts = (config: Config) => Promise<Pick<RunnerOptions, 'config' | 'providerFor' | 'deliver'>>;

// The heartbeat and the run queue, started: runs left unfinished resume, and a heartbeat owed is asked for.
async function _startRuntime(
  config: Config,
  store: Store,
  stateDir: string,
  log: Logger,
  alerts: Alerts,
  callbacks: CallbackSender,
): Promise<{ heartbeat: Heartbeat; runner: Runner; runtimeParts: _RuntimeParts }> {
  const heartbeat = new Heartbeat({
    store,
    everyMs: config.agents.heartbeatEveryMs,
    onBeat: () => void runner.heartbeatTurn(),
    onError: (error) => log.error('heartbeat not recorded', { error: String(error) }),
  });
  const runtimeParts: _RuntimeParts = async (c) => ({
    config: c,
    providerFor: providerRegistry(c.providers),
    deliver: await buildDeliver(c, () => store.lastRoute()),
  });
  const runner = new Runner({
    ...(await runtimeParts(config)),
    store,
    transcripts: new Transcripts(stateDir),
    heartbeat,
    log,
    alerts,
    callbacks,
    // A paused hook's runs wait (lib/server/pauses.ts pauses and resumes).
    rules: [hookResumed(store)],
  });
  runner.start();
  // A `now` wake acknowledged just before a crash still gets its heartbeat.
  if (store.heartbeatOwed()) heartbeat.request('recovery');
  heartbeat.start();
  return { heartbeat, runner, runtimeParts };
}

// Pause and resume over the store and the run queue, its timer armed for the pauses on record;
// `rehook` tells it the hooks of a reloaded configuration.
function _startPauses(
  config: Config,
  parts: { store: Store; runner: Runner; heartbeat: Heartbeat; log: Logger; forward: ForwardMode | null },
): { pauses: HookPauses; rehook: (config: Config) => void } {
  let hooks = hookNames(config);
  const { forward, ...rest } = parts;
  const pauses = new HookPauses({
    ...rest,
    ...(forward === null ? {} : { forwarded: forward.kick }),
    hooks: () => hooks,
  });
  pauses.start();
  return { pauses, rehook: (next) => void (hooks = hookNames(next)) };
}

/** The hooks of a configuration, as pause names them (model/work-hook.ts): its mappings' ids, `agent` and `wake`. */
export function hookNames(config: Pick<Config, 'hooks'>): string[] {
  return [...config.hooks.mappings.map((m) => m.id), 'agent', 'wake'];
}

/** The parts a service is made of, for its reload and its stop. */
interface _Parts {
  pauses: HookPauses;
  /** Tells pause the hooks of a reloaded configuration. */
  rehook: (config: Config) => void;
  config: Config;
  log: Logger;
  store: Store;
  heartbeat: Heartbeat;
  runner: Runner;
  runtimeParts: _RuntimeParts;
  transforms: ReturnType<typeof serviceTransforms>;
  forward: ForwardMode | null;
  callbacks: CallbackSender;
  ledger: Ledger | null;
  app: App;
  alerts: Alerter;
  /** Stops looking at the store for the alerts. */
  unwatch: () => void;
}

function _service(
  parts: _Parts,
): Service {
  const { config, log, store, heartbeat, runner, runtimeParts, transforms, forward, callbacks, ledger, app } = parts;
  let current = config;
  return {
    app,
    store,
    retryOutbox: async (request) => {
      const outcome = forward === null ? await retryOutbox(store, request) : await forward.retry(request);
      callbacks.kick();
      return outcome;
    },
    forwarding: forward !== null,
    ledger,
    runner,
    config: () => current,
    hookStatus: () => withPauses(runner.hookStatus(), parts.pauses.list()),
    pauses: parts.pauses,
    async reload(reloaded) {
      // Forward mode is on or off for the life of the process: its sender starts with it.
      const forwardNow = forward === null ? null : (reloaded.hooks.forward ?? config.hooks.forward);
      if ((forwardNow === null) !== (reloaded.hooks.forward === null)) {
        log.warn('hooks.forward turned on or off takes effect at the next start', {});
      }
      const next = { ...reloaded, hooks: { ...reloaded.hooks, forward: forwardNow } };
      const built = await runtimeParts(next);
      await transforms.configure(next);
      runner.reconfigure(built);
      callbacks.reconfigure(next);
      parts.alerts.reconfigure(next.alerts, built.deliver!);
      forward?.reconfigure(next);
      ledger?.reconfigure(next.hooks.ledger);
      parts.rehook(next);
      app.reload(next);
      current = next;
    },
    async stop() {
      // The listener is closed by now: the counts of folded and left-out request lines are final.
      app.flushLog();
      parts.pauses.stop();
      await forward?.stop();
      await runner.stop();
      // After the runs: a run that ends while they stop still writes its callback, sent after the restart.
      await callbacks.stop();
      parts.unwatch();
      await parts.alerts.stop();
      await heartbeat.stop();
      await transforms.close();
      // After the runtime: writing the ledger's last batch must not hold a stop up.
      await ledger?.close();
      await store.close();
    },
  };
}
