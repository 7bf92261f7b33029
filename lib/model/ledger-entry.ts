// What one request is, as the request ledger keeps it: the entry, what the request became, its
// body and signature verdict, and their constant lists. The ledger writes and reads these
// (store/ledger/entry.ts checks each line read back); the edge makes them, the CLI and the
// inspector show them.
import type { Cause } from './cause.ts';

/** Why a signature did not verify, as the ledger keeps it: the kind, the header at fault, the measured skew of a stale timestamp. */
export interface SignatureVerdict {
  scheme: string;
  ok: boolean;
  /** `missing-header`, `bad-signature`, `stale-timestamp`, `no-secret`. */
  why?: SignatureWhy;
  header?: string;
  /** Seconds the signed timestamp was from the server's clock (positive: in the past). */
  skewSeconds?: number;
  /** The refusal as the client read it (header and rule, never a value). */
  reason?: string;
}

export const SIGNATURE_WHY = ['missing-header', 'bad-signature', 'stale-timestamp', 'no-secret'] as const;
export type SignatureWhy = (typeof SIGNATURE_WHY)[number];

/** A stored body: the bytes kept (UTF-8 text, else base64), how many arrived, whether the rest was cut. */
export interface StoredBody {
  encoding: 'utf8' | 'base64';
  data: string;
  /** Bytes that arrived. */
  bytes: number;
  truncated: boolean;
}

/** Why no body is kept. */
export const BODY_OMITTED = ['metadata-only', 'opted-out', 'not-read', 'ledger-cap'] as const;
export type BodyOmitted = (typeof BODY_OMITTED)[number];

/** What a request became. */
export interface Became {
  /** Main-session events (their seq). */
  events?: number[];
  runs?: string[];
  /** Pending runs it joined instead of a run of its own (a mapping's `coalesce`). */
  joined?: string[];
  /** Forward mode's outbox entries. */
  outbox?: string[];
  /** Notify mappings' deliveries (their delivery ids). */
  deliveries?: string[];
  /** Wakes held by their paused hook (the held wakes' ids), which join their session when it resumes. */
  held?: number[];
  /** A retry answered from the first request's record: that request's id, when known. */
  duplicateOf?: string;
  /** Filtered out (200 ignored), or the transform skipped it (204). */
  ignored?: boolean;
  skipped?: boolean;
  /** Past its hook's rate limit with `over: "ignore"`: acknowledged (200 `limited`), nothing done. */
  limited?: boolean;
  /** Its runs are held until then (ISO 8601): a rate limit's `queue` or a budget's `wait`. */
  heldUntil?: string;
  /** A provider's set-up handshake (Meta's subscription check, Slack's URL verification). */
  handshake?: string;
}

/** The lanes of the ledger: each has its own budget. */
export type Lane = 'authenticated' | 'unauthenticated';

/** One request as the ledger keeps it. */
export interface LedgerEntry {
  /** The entry's own id: random, assigned by the server. */
  id: string;
  /** The request id (`X-Request-Id`, the log's `id`): the client may choose it, so it need not be unique. */
  requestId: string;
  time: string;
  method: string;
  path: string;
  /** The query as received, with credential-like values redacted; absent when empty. */
  query?: string;
  /** The hook name after `hooks.path` (`''` for the base path); absent outside a hook. */
  hook?: string;
  mapping?: string;
  client: string;
  lane: Lane;
  /** How the request authenticated, if it did: `token` (hook or gmail token), `signature`, or `none`. */
  auth: 'token' | 'signature' | 'none';
  headers: Record<string, string | string[]>;
  /** Headers were left out: a coalesced refusal keeps at most 2 KiB of them. */
  headersTruncated?: boolean;
  body?: StoredBody;
  bodyOmitted?: BodyOmitted;
  signature?: SignatureVerdict;
  status: number;
  /** The stable error code of a failure. */
  code?: string;
  /** The error message the client got. */
  error?: string;
  became?: Became;
  /** Why it came out as it did (lib/model/cause.ts): a transform's exception, hollow placeholders, a filter, a policy, a duplicate. */
  cause?: Cause;
  durationMs: number;
  /** The entry this one replays. */
  replayOf?: string;
  /**
   * A keyed fingerprint of the token it authenticated with (the hook token, the gmail hook's, a
   * `token` or `gitlab` path's secret), never the token: a replay is refused once it is no longer configured.
   */
  credential?: string;
  /** Refusals of one client coalesced into this entry within the window: how many, and the last one's time. */
  count?: number;
  lastTime?: string;
}
