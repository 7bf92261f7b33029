// How a request to the hooks path becomes a ledger entry, from the answer and the trace it carries:
// which lane, which headers are redacted, how much body is kept, which refusals are coalesced; and
// the signature's verdict in the shape the ledger keeps.

import type { IncomingHttpHeaders } from 'node:http';
import type { Config } from '../config/types.ts';
import { ErrorCode } from '../errors.ts';
import { isCredentialHeader } from '../guard/credentials.ts';
import type { Client } from '../guard/address.ts';
import { BODY_SIGNATURE_HEADERS, describeRefusal, verifySignature } from '../guard/signatures/verify.ts';
import type { Signature } from '../guard/signatures/config.ts';
import { isoTime } from '../log.ts';
import { randomHex } from '../random.ts';
import type { Ledger } from '../store/ledger/ledger.ts';
import type { LedgerEntry, SignatureVerdict } from '../model/ledger-entry.ts';
import type { Answer } from './answer.ts';
import { refusalKey } from './refused-alike.ts';
import type { Trace } from './trace.ts';
import { extend } from '../object.ts';

/** The signature's verdict as the ledger keeps it (the kind of failure, the header, the skew), over `body`. */
export function signatureVerdict(
  signature: Signature,
  request: { headers: IncomingHttpHeaders; body: Buffer; query: string },
  nowMs: number,
): SignatureVerdict {
  if (signature.secrets.length === 0) {
    return {
      scheme: signature.scheme,
      ok: false,
      why: 'no-secret',
      reason: 'invalid signature: no secret is configured',
    };
  }
  const verdict = verifySignature(signature, request, nowMs);
  if (verdict.ok) return { scheme: signature.scheme, ok: true };
  const reason = describeRefusal(verdict);
  const base = { scheme: signature.scheme, ok: false, header: verdict.header, reason };
  if (verdict.skewSeconds !== undefined) {
    return extend(base, { why: 'stale-timestamp' as const, skewSeconds: verdict.skewSeconds });
  }
  return extend(base, { why: verdict.reason === 'is missing' ? 'missing-header' as const : 'bad-signature' as const });
}

/** Redacted header values read this. */
export const REDACTED = '[redacted]';

/**
 * The headers as kept: every credential header by the product's one rule (`isCredentialHeader`:
 * the token headers, `*-token`, `*-secret`, `*-key`, `*-password`, cookies, …) redacted on every
 * path, except those that carry a signature computed over the body (a replay verifies them again):
 * the schemes' own, and `hmacHeader`, the header an `hmac` path is configured with. A request that
 * passed a token check replays on its stored verdict, so no token is ever needed again.
 */
export function keptHeaders(headers: IncomingHttpHeaders, hmacHeader?: string): Record<string, string | string[]> {
  // A plain object (a null-prototype one is slower to fill and to serialise); a header named
  // __proto__ is defined as an own property, so it cannot reach the prototype.
  const out: Record<string, string | string[]> = {};
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (value === undefined) continue;
    const kept = name !== hmacHeader && _redacted(name) ? REDACTED : value;
    if (name === '__proto__') {
      Object.defineProperty(out, name, { value: kept, enumerable: true, writable: true, configurable: true });
    } else out[name] = kept;
  }
  return out;
}

// The verdict by header name, remembered: the same few names come with every request, and the
// rule is a regular expression. Bounded, as names are the client's to choose.
const _VERDICTS = new Map<string, boolean>();

function _redacted(name: string): boolean {
  let redacted = _VERDICTS.get(name);
  if (redacted === undefined) {
    redacted = isCredentialHeader(name) && !BODY_SIGNATURE_HEADERS.has(name);
    if (_VERDICTS.size >= 1024) _VERDICTS.clear();
    _VERDICTS.set(name, redacted);
  }
  return redacted;
}

// Query parameters that carry credentials: a token sent in the URL (refused, but kept out of the
// ledger all the same), Meta's subscription verify token, and any name the credential-header rule
// names once `_` reads as `-` (secret, api_key, client_secret, password, key, auth, ...).
const _SECRET_QUERY = /^(?:.*token.*|hub\.verify_token)$/i;

function _secretQuery(name: string): boolean {
  return _SECRET_QUERY.test(name) || isCredentialHeader(name.replaceAll('_', '-'));
}

/** The query as kept: values of credential-like names (by the header rule too) redacted; `undefined` when empty. */
export function keptQuery(query: URLSearchParams, raw: string): string | undefined {
  if (raw === '') return undefined;
  let secret = false;
  for (const name of query.keys()) if (_secretQuery(name)) secret = true;
  if (!secret) return raw;
  const out = new URLSearchParams();
  for (const [name, value] of query) out.append(name, _secretQuery(name) ? REDACTED : value);
  return out.toString();
}

/** The request as the recorder reads it once answered. */
export interface Answered {
  requestId: string;
  method: string;
  path: string;
  query: URLSearchParams;
  rawQuery: string;
  headers: IncomingHttpHeaders;
  client: Client;
  answer: Answer;
  /** What was decided about it (the answer's own, or the hook alone when it was refused before its route). */
  trace: Trace;
  durationMs: number;
  /** The entry's id, chosen beforehand (a replay names its entry in its journal line); a new one when absent. */
  entryId?: string;
}

/** Records answered requests of the hooks path in the ledger; returns the entry's id. */
export type Recorder = (answered: Answered) => string;

/**
 * The recorder of one (re)load: a request that authenticated goes to the main lane with its body
 * (up to `hooks.ledger.maxBodyBytes`, unless its path opted out); a signed request refused goes to
 * the unauthenticated lane with its body (its own, smaller cap); any other refusal, and a request
 * that matched no hook, is metadata only, and refusals alike from one client are coalesced.
 */
export function createRecorder(config: Config, ledger: Ledger, clock: () => number): Recorder {
  const limits = config.hooks.ledger;
  // The header each `hmac` path is signed in, as node:http names it.
  const hmacHeaders = new Map<string, string>();
  const optedOut = new Set<string>();
  for (const m of config.hooks.mappings) {
    if (m.match.path === undefined) continue;
    if (m.signature?.header !== undefined) hmacHeaders.set(m.match.path, m.signature.header.toLowerCase());
    if (m.ledgerBody === false) optedOut.add(m.match.path);
  }
  return (a) => {
    const { trace, answer } = a;
    const code = typeof answer.body['code'] === 'string' ? answer.body['code'] : undefined;
    const authenticated = trace.auth !== 'none';
    const signedRefused = trace.signature !== undefined && !trace.signature.ok;
    // Metadata only, coalesced: a refusal before any body was worth keeping.
    if (!authenticated && !(signedRefused && trace.body !== undefined)) {
      const key = refusalKey(a.client.key, answer.status, code, trace.hook, trace.signature?.why);
      return ledger.count(key) ??
        ledger.hold(key, {
          ..._entry(a, code, authenticated, hmacHeaders, clock),
          bodyOmitted: trace.body === undefined ? 'not-read' : 'metadata-only',
        });
    }
    const entry = _entry(a, code, authenticated, hmacHeaders, clock);
    const hook = trace.hook ?? '';
    if (trace.body === undefined) {
      entry.bodyOmitted = 'not-read';
    } else if (optedOut.has(hook)) {
      entry.bodyOmitted = 'opted-out';
    } else if (code === ErrorCode.NotFound) {
      entry.bodyOmitted = 'metadata-only';
    } else {
      ledger.record(entry, trace.body, authenticated ? limits.maxBodyBytes : limits.unauthenticated.maxBodyBytes);
      return entry.id;
    }
    ledger.record(entry);
    return entry.id;
  };
}

// An answered request's entry, without its body (a function of its own, not a closure made per request).
function _entry(
  a: Answered,
  code: string | undefined,
  authenticated: boolean,
  hmacHeaders: ReadonlyMap<string, string>,
  clock: () => number,
): LedgerEntry {
  const { trace, answer } = a;
  const entry: LedgerEntry = {
    id: a.entryId ?? randomHex(12),
    requestId: a.requestId,
    time: isoTime(clock() - Math.round(a.durationMs)),
    method: a.method,
    path: a.path,
    client: a.client.address,
    lane: authenticated ? 'authenticated' : 'unauthenticated',
    auth: trace.auth,
    headers: keptHeaders(a.headers, trace.hook === undefined ? undefined : hmacHeaders.get(trace.hook)),
    status: answer.status,
    durationMs: a.durationMs,
  };
  const query = keptQuery(a.query, a.rawQuery);
  if (query !== undefined) entry.query = query;
  if (trace.hook !== undefined) entry.hook = trace.hook;
  if (trace.mapping !== undefined) entry.mapping = trace.mapping;
  if (trace.signature !== undefined) entry.signature = trace.signature;
  if (code !== undefined) entry.code = code;
  if (answer.status >= 400 && typeof answer.body['error'] === 'string') entry.error = answer.body['error'];
  if (trace.became !== undefined) entry.became = trace.became;
  if (trace.cause !== undefined) entry.cause = trace.cause;
  if (trace.replayOf !== undefined) entry.replayOf = trace.replayOf;
  if (trace.credential !== undefined) entry.credential = trace.credential;
  return entry;
}
