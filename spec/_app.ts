// Test helpers for an in-process app: a config from a spec's raw value, and the app listening on
// 127.0.0.1 port 0 with a real store in a temp dir; everything closed when the test ends.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { buildConfig } from '../lib/config/load.ts';
import type { Config } from '../lib/config/types.ts';
import { listen } from '../lib/edge/listen.ts';
import { type App, type AppOptions, createApp } from '../lib/edge/server.ts';
import { type Fingerprints, fingerprints } from '../lib/guard/fingerprint.ts';
import { createLogger, type Logger } from '../lib/log.ts';
import { Store } from '../lib/store/journal/store.ts';
import { openCredentialKey } from '../lib/store/state/credential-key.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';

/** A logger that drops everything (for tests that do not look at logs). */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/** A logger whose lines a spec reads back, each parsed, in order. */
export function captureLog(): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  return { log: createLogger((line) => void lines.push(JSON.parse(line) as Record<string, unknown>)), lines };
}

type Raw = Record<string, unknown>;

/** `raw` with hooks enabled and `token` as the hook token, unless `raw.hooks` says otherwise. */
export function withHooks(raw: Raw, token: string): Raw {
  return { ...raw, hooks: { enabled: true, token, ...(raw['hooks'] as Raw | undefined) } };
}

/** Builds a config the spec knows to be valid; a problem is the spec's own mistake. */
export async function specConfig(raw: Raw, dir: string): Promise<Config> {
  const built = await buildConfig(raw, { file: null, env: {}, dir });
  if (!built.ok) throw new Error(`Invalid spec config: ${built.problems.join('; ')}`);
  return built.config;
}

export interface StartAppOptions {
  /** The config as a file holds it; `hooks.enabled` and `hooks.token` are added (see {@link withHooks}). */
  raw?: Raw;
  token?: string;
  /** The config directory; a fresh temp dir otherwise. The state is in its `state` folder. */
  dir?: string;
  /** Serve this store (its owner closes it) instead of opening one. */
  store?: Store;
  /** The store's clock (idempotency expiry). */
  now?: () => number;
  idempotencyTtlMs?: number;
  /** More app options (limiter, runs, telemetry, transforms, clock, ...); `app()` is the app once built, `log` the one whose lines the harness keeps. */
  with?: (parts: { config: Config; store: Store; app: () => App; log: Logger }) => Partial<AppOptions>;
  /** Serve without the state directory's credential key (serve makes one): entries keep no fingerprint of their token. */
  noCredentialKey?: boolean;
}

/** A listening in-process app. */
export interface AppHarness {
  url: string;
  /** The config directory. */
  dir: string;
  /** The state directory. */
  state: string;
  config: Config;
  store: Store;
  app: App;
  /** Reasons passed to `heartbeat.request`, in order. */
  beats: string[];
  /** Every log line, parsed. */
  lines: Record<string, unknown>[];
  /** Stops listening (requests in flight get 200 ms); the test's end does it too. */
  stop(): Promise<void>;
}

/** Starts the app on 127.0.0.1, port 0; the listener, then the store, then the directory go when `t` ends. */
export async function startApp(t: TestContext, options: StartAppOptions = {}): Promise<AppHarness> {
  const dir = options.dir ?? (await tempDir(t, 'app-spec-'));
  const config = await specConfig(withHooks(options.raw ?? {}, options.token ?? 'spec-hook-token-0123456789'), dir);
  const state = join(dir, 'state');
  let store = options.store;
  if (store === undefined) {
    const ttl = options.idempotencyTtlMs ?? config.hooks.idempotencyTtlSeconds * 1000;
    const opened =
      (await Store.open(state, { idempotencyTtlMs: ttl, ...(options.now === undefined ? {} : { now: options.now }) }))
        .store;
    defer(t, () => opened.close());
    store = opened;
  }
  const beats: string[] = [];
  const { log, lines } = captureLog();
  let app: App | undefined;
  const extra = options.with?.({ config, store, app: () => app!, log }) ?? {};
  const prints = options.noCredentialKey === true || extra.fingerprints !== undefined
    ? {}
    : { fingerprints: await stateFingerprints(state) };
  app = createApp({
    config,
    store,
    heartbeat: { request: (reason) => void beats.push(reason) },
    log,
    ...prints,
    ...extra,
  });
  const running = await listen(app, { host: '127.0.0.1', port: 0 });
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= running.close(200));
  defer(t, stop);
  return { url: running.url, dir, state, config, store, app, beats, lines, stop };
}

/** The fingerprints under a state directory's credential key, made as serve makes it. */
export async function stateFingerprints(state: string): Promise<Fingerprints> {
  await mkdir(state, { recursive: true, mode: 0o700 });
  const key = await openCredentialKey(state, { make: true });
  if (!key.ok) throw new Error(`Cannot use the spec's credential key ${key.file}: ${key.problem}`);
  return fingerprints(key.key);
}
