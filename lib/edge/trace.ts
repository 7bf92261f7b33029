// What was decided about one request to the hooks path, and why: a value the door, plan and
// commit each extend (a new object, never an edit) and hand on with the answer. The ledger records
// it, a dry run shows it, the request log reads the signature's verdict from it.

import type { AgentAction, NoticeSpec, NotifyAction, RunSpec, WakeAction } from '../model/actions.ts';
import type { LogFields } from '../log.ts';
import type { WakeTarget } from '../policy/admit.ts';
import type { Became, SignatureVerdict } from '../model/ledger-entry.ts';
import type { Cause } from '../model/cause.ts';
import type { LimitMark } from './work-limits.ts';

/** The refusal that decided the answer: an HttpError is one (status, stable code, message, cause). */
export interface Refusal {
  readonly status: number;
  readonly code: string;
  readonly message: string;
  /** Why, past the message: a transform's failure, the journal's error. */
  readonly cause?: unknown;
}

/** One transform call and what it returned (or why it failed, and where a thrown error was raised when its stack said: `ci.mjs:3`). */
export type TransformCall = { readonly ok: true; readonly value: unknown } | {
  readonly ok: false;
  readonly error: string;
  readonly at?: string;
};

/** One action the request was planned to take: a wake's event (for its agent and session), an admitted run or a notify delivery, with the placeholders that found nothing. */
export type PlannedAction =
  | {
    readonly kind: 'wake';
    readonly action: WakeAction;
    readonly target: WakeTarget;
    readonly unresolved: readonly string[];
  }
  | {
    readonly kind: 'agent';
    readonly action: AgentAction;
    readonly run: RunSpec;
    readonly unresolved: readonly string[];
  }
  | {
    readonly kind: 'notify';
    readonly action: NotifyAction;
    readonly notice: NoticeSpec;
    readonly unresolved: readonly string[];
  };

/** A log line the plan asks commit to write (a dry run shows it as a warning instead). */
export interface Said {
  readonly level: 'info' | 'warn' | 'error';
  readonly message: string;
  readonly fields: LogFields;
}

/** What a request to the hooks path came to, step by step; absent fields are steps it did not reach. */
export interface Trace {
  /** The hook name after `hooks.path`. */
  readonly hook?: string;
  /** How it authenticated: the hook token, a signature over its body, or not at all. */
  readonly auth: 'token' | 'signature' | 'none';
  /** The fingerprint of the token it authenticated with (guard/fingerprint.ts), when one was made. */
  readonly credential?: string;
  /** A signed path's verdict (the kind of failure, the header, the skew). */
  readonly signature?: SignatureVerdict;
  /** The body as read (not copied): how much of it the ledger keeps is the ledger's to decide. */
  readonly body?: Buffer;
  /** The mapping that took the request. */
  readonly mapping?: string;
  /** Whether a mapping's `match` and `filter` took it (`ignored`: filtered out; `unmatched`: no mapping). */
  readonly filter?: 'matched' | 'ignored' | 'unmatched';
  /** Each transform called, in order, with its result. */
  readonly transforms?: readonly TransformCall[];
  /** The actions planned, with the policy's decisions on each run. */
  readonly actions?: readonly PlannedAction[];
  /** The log lines the plan asked for (unknown fields, injection phrasing, a failed mapping). */
  readonly said?: readonly Said[];
  /** The refusal that answered it. */
  readonly refusal?: Refusal;
  /** What it became: events, runs, outbox entries, the duplicate it was, a handshake. */
  readonly became?: Became;
  /** Why it came to that, as the ledger keeps it: a transform's exception, hollow placeholders, a filter, a policy, a duplicate. */
  readonly cause?: Cause;
  /** The hook limits that held, dropped or refused it (work-limits.ts): what metrics count. */
  readonly limits?: readonly LimitMark[];
  /** The ledger entry a replay replays. */
  readonly replayOf?: string;
}
