// What the request ledger is configured with (`hooks.ledger`): the store declares it, config builds it.

/** One lane of the request ledger: how many entries, how many bytes on disk, how much of each body. */
export interface LedgerLane {
  maxEntries: number;
  maxBytes: number;
  maxBodyBytes: number;
}

/**
 * `hooks.ledger`: authenticated requests in the main lane; refusals and signed bodies not (yet)
 * verified in the `unauthenticated` lane, so a client without credentials can fill only that one.
 */
export interface LedgerConfig extends LedgerLane {
  enabled: boolean;
  maxAgeSeconds: number;
  /** Refusals of one client alike within this window are one entry with a count. */
  coalesceSeconds: number;
  unauthenticated: LedgerLane;
}

/** How many entries the ledger holds at most: both lanes full. */
export function ledgerCapacity(config: LedgerConfig): number {
  return config.maxEntries + config.unauthenticated.maxEntries;
}
