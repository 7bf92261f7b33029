import type { Config } from '../config/types.ts';
import type { Logger } from '../log.ts';
import { retryUpdates } from '../store/outbox.ts';
import type { Store } from '../store/store.ts';

/** What `outbox retry` asks for: the entry ids to send again (dead) or now (pending), or every dead entry. */
export type RetryRequest = { ids: string[] } | { dead: true };

/** What a retry did: the ids asked for that are due now, and the asked ids that are neither dead nor pending (nothing is done then). */
export interface RetryOutcome {
  retried: string[];
  notRetryable: string[];
}

/** Forward mode's sender, running with the server; `null` when `hooks.forward` is not set. */
export interface ForwardMode {
  kick(): void;
  reconfigure(config: Config): void;
  /** `outbox retry` over the control channel: the entries become pending and are sent now. */
  retry(request: RetryRequest): Promise<RetryOutcome>;
  stop(): Promise<void>;
}

/**
 * Starts forward mode for `serve`: the outbox is sent from the start (what a previous process
 * left pending goes first). `outbox retry` reaches it over the control channel, so the server
 * stays the journal's only writer. The sender is imported only in forward mode (the `outbox`
 * command reads this file too, and sends nothing).
 */
export async function startForward(config: Config, store: Store, log: Logger): Promise<ForwardMode | null> {
  if (config.hooks.forward === null) return null;
  const { Forwarder } = await import('../delivery/forward.ts');
  const forwarder = new Forwarder({ store, target: config.hooks.forward, log });
  forwarder.kick();
  return {
    kick: () => forwarder.kick(),
    reconfigure: (next) => {
      if (next.hooks.forward !== null) forwarder.reconfigure(next.hooks.forward);
    },
    retry: async (request) => {
      const outcome = await retryOutbox(store, request);
      if (outcome.retried.length > 0) log.info('outbox retry', { entries: outcome.retried.length });
      forwarder.kick();
      return outcome;
    },
    stop: () => forwarder.stop(),
  };
}

/**
 * Makes the asked entries (or every dead one) pending and due now, as the store's retryUpdates
 * decides; when an asked id is neither dead nor pending nothing is changed and the outcome names it.
 */
export async function retryOutbox(store: Pick<Store, 'outbox' | 'commit'>, request: RetryRequest, time = new Date().toISOString()): Promise<RetryOutcome> {
  const { updates, unknown } = retryUpdates(store.outbox(), request, time);
  if (unknown.length > 0) return { retried: [], notRetryable: unknown };
  if (updates.length > 0) await store.commit({ outboxUpdates: updates });
  // The pending entries ahead of an asked one are made due too (updates without a state): not counted.
  return { retried: updates.filter((u) => u.state === 'pending').map((u) => u.id), notRetryable: [] };
}
