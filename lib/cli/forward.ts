import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config/types.ts';
import { Forwarder } from '../delivery/forward.ts';
import type { Logger } from '../log.ts';
import { retryUpdates } from '../store/outbox.ts';
import type { Store } from '../store/store.ts';

/** `outbox retry` leaves its request in the state directory under this prefix, then signals the server. */
export const RETRY_PREFIX = 'outbox-retry-';

/** A request file's content: the entry ids to send again, or every dead entry. */
export type RetryRequest = { ids: string[] } | { dead: true };

/** Forward mode's sender, running with the server; `null` when `hooks.forward` is not set. */
export interface ForwardMode {
  kick(): void;
  reconfigure(config: Config): void;
  stop(): Promise<void>;
}

/**
 * Starts forward mode for `serve`: the outbox is sent from the start (what a previous process
 * left pending goes first), and SIGUSR2 makes it apply the `outbox retry` requests waiting in the
 * state directory, so the server stays the journal's only writer.
 */
export function startForward(config: Config, store: Store, log: Logger, stateDir: string): ForwardMode | null {
  if (config.hooks.forward === null) return null;
  const forwarder = new Forwarder({ store, target: config.hooks.forward, log });
  let retrying = Promise.resolve();
  const onRetry = () => {
    retrying = retrying
      .then(() => applyRetryRequests(store, stateDir, log))
      .then(() => forwarder.kick())
      .catch((error: unknown) => log.error('outbox retry failed', { error: String(error) }));
  };
  process.on('SIGUSR2', onRetry);
  onRetry();
  return {
    kick: () => forwarder.kick(),
    reconfigure: (next) => {
      if (next.hooks.forward !== null) forwarder.reconfigure(next.hooks.forward);
    },
    stop: async () => {
      process.off('SIGUSR2', onRetry);
      await retrying;
      await forwarder.stop();
    },
  };
}

/** Applies every retry request file in `stateDir` to the outbox and removes it once committed. */
export async function applyRetryRequests(store: Pick<Store, 'outbox' | 'commit'>, stateDir: string, log?: Logger): Promise<number> {
  let applied = 0;
  for (const name of (await readdir(stateDir)).filter((n) => n.startsWith(RETRY_PREFIX) && n.endsWith('.json')).sort()) {
    const path = join(stateDir, name);
    let request: RetryRequest;
    try {
      request = JSON.parse(await readFile(path, 'utf8')) as RetryRequest;
    } catch {
      continue; // still being written: the writer renames it into place, so this is a stray; the next signal retries
    }
    const { updates } = retryUpdates(store.outbox(), request, new Date().toISOString());
    if (updates.length > 0) await store.commit({ outboxUpdates: updates });
    await rm(path, { force: true });
    log?.info('outbox retry', { entries: updates.length });
    applied += updates.length;
  }
  return applied;
}
