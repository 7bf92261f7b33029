import type { IncomingMessage } from 'node:http';
import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { Client } from '../guard/address.ts';
import type { Auth } from '../guard/auth.ts';
import { parseForm, parseJsonObject, readBody } from '../guard/body.ts';
import type { Signature } from '../guard/signature.ts';
import { extractToken, tokenDigest, tokenMatches } from '../guard/token.ts';
import { errorAnswer, type Answer } from './answer.ts';
import type { Dispatch } from './dispatch.ts';
import { idempotencyKey, type Idempotent } from './idempotency.ts';
import { signatureVerdict, type Note } from './ledger-note.ts';
import { formAsSigned, metaHandshake, missingSignature, signedDelivery, signedPaths, slackChallenge } from './signed.ts';
import type { Gone } from './wait.ts';

/** One routed request: its id, the request, the query, the hook name and the client. */
export interface Context {
  id: string;
  req: IncomingMessage;
  query: URLSearchParams;
  /** The hook name after `hooks.path`, decoded; `''` for the base path itself. */
  name: string;
  client: Client;
  /** Sends `100 Continue` to a client that asked for it (`Expect: 100-continue`), once. */
  invite: () => void;
  /** What the request ledger is told about the request. */
  note: Note;
}

/**
 * What a route does with a request. An answer it can give at once (a refusal) comes back as a
 * value, with no promise: only a request that goes on to read its body pays for one.
 */
export type Handler = (ctx: Context) => Answer | Promise<Answer>;

export interface HooksRouteOptions {
  config: Config;
  auth: Auth;
  idempotent: Idempotent;
  dispatch: Dispatch;
  bodyTimeoutMs: number;
  /** Body bytes read per request, for metrics. */
  received: WeakMap<IncomingMessage, number>;
  /** The wall clock in epoch milliseconds, that signed timestamps are held against. */
  clock: () => number;
}

/**
 * `POST {hooks.path}/<name>`: the hook token (or, on a signed path, the signature over the raw
 * body), the body within its cap, then the idempotent dispatch. `GET` is Meta's subscription check.
 */
export function hooksRoute(options: HooksRouteOptions): Handler {
  const { config, auth } = options;
  const signatures = signedPaths(config);
  // The configured tokens' digests, made once per (re)load: a request hashes only what it presents.
  const hookTokens = [config.hooks.token === null ? null : tokenDigest(config.hooks.token)];
  const gmailTokens = config.hooks.gmail.hookToken === undefined ? hookTokens : [...hookTokens, tokenDigest(config.hooks.gmail.hookToken)];
  const accept = _acceptor(options);
  // A path whose mappings carry a signature is opened by that signature alone, never by the hook token.
  // A valid signature does not clear the client's failure count: a captured delivery of a scheme without
  // a timestamp verifies again and again, and must not reset the count of someone guessing the hook token.
  return (ctx) => {
    const { req, name, note } = ctx;
    note.hook = name;
    const signature = signatures.get(name);
    if (req.method === 'GET') {
      const handshake = metaHandshake(signature, ctx.query);
      if (!handshake.ok) return errorAnswer(auth.refuse(ctx.client, handshake.refusal, 403));
      note.auth = 'token';
      note.became = { handshake: 'meta' };
      return handshake.answer;
    }
    let refused: HttpError | null = null;
    // Whether the request holds a credential that opens this path alone: its mappings must name the path.
    let pathOnly = false;
    if (signature === undefined) {
      const presented = extractToken(req.headers);
      // The gmail hook also opens to the credential gog posts with, which opens nothing else: not
      // even a mapping that would take any path (one without a path, or matched by source alone).
      const gmail = name === 'gmail' && gmailTokens !== hookTokens;
      refused = auth.authenticate(presented, gmail ? gmailTokens : hookTokens, ctx.client, presented === null ? 'missing hook token' : 'invalid hook token');
      pathOnly = gmail && refused === null && !(hookTokens[0] != null && tokenMatches(presented!, hookTokens[0]));
      if (refused === null) note.auth = 'token';
    } else if (expectsContinue(req)) {
      // Only what can be checked before the body: a request without the scheme's headers is refused now.
      const missing = missingSignature(signature, req, options.clock());
      if (missing !== null) {
        refused = auth.refuse(ctx.client, missing);
        note.signature = { scheme: signature.scheme, ok: false, why: 'missing-header', reason: missing };
      }
    }
    if (refused !== null) return errorAnswer(refused);
    if (name === '') return errorAnswer(new HttpError(404, ErrorCode.NotFound, 'hook name missing: POST to a path such as /wake or /agent'));
    // `100 Continue` only now that the sender is authenticated: anyone else gets the final status
    // at once, and is never invited to upload.
    ctx.invite();
    return accept(ctx, signature, pathOnly);
  };
}

// An authenticated request from here on (a signed one is checked once its body is read): the body
// within its cap, parsed, then dispatched under its idempotency key.
function _acceptor(options: HooksRouteOptions): (ctx: Context, signature: Signature | undefined, pathOnly: boolean) => Promise<Answer> {
  const { config, auth, idempotent, dispatch, bodyTimeoutMs, received } = options;
  return async (ctx, signature, pathOnly) => {
    const { req, name, note } = ctx;
    const bytes = await readBody(req, { maxBytes: config.hooks.maxBodyBytes, timeoutMs: bodyTimeoutMs });
    received.set(req, bytes.length);
    note.body = bytes;
    // Over the raw bytes, after the cap and before any parsing.
    if (signature !== undefined) {
      const target = req.url ?? '';
      const query = target.includes('?') ? target.slice(target.indexOf('?') + 1) : '';
      const verdict = (note.signature = signatureVerdict(signature, { headers: req.headers, body: bytes, query }, options.clock()));
      if (!verdict.ok) return errorAnswer(auth.refuse(ctx.client, verdict.reason ?? 'invalid signature'));
      note.auth = 'signature';
    }
    // Form-posting senders (Slack commands, Twilio, ...) reach mapped hooks only; /wake and /agent take JSON.
    const form = name !== 'wake' && name !== 'agent' && /^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] ?? '');
    // `curl -d` labels JSON as a form: a body that is a JSON object is read as JSON whatever the label
    // says, unless the signature covers it as a form.
    const body = form && (formAsSigned(signature) || !/^\s*\{/.test(bytes.subarray(0, 64).toString('latin1'))) ? parseForm(bytes) : parseJsonObject(bytes);
    const challenge = slackChallenge(signature, body);
    if (challenge !== null) {
      note.became = { handshake: 'slack' };
      return challenge;
    }
    const gone = _gone(req);
    const call = { id: ctx.id, name, body, headers: req.headers, query: ctx.query, note, gone, ...(pathOnly ? { pathOnly } : {}) };
    const delivery = signature === undefined ? null : signedDelivery(signature, req, bytes, body);
    return idempotent(name, idempotencyKey(req.headers, name === 'agent' ? body : {}, delivery), (idem) => dispatch(call, idem), note, gone);
  };
}

// The client's departure: its connection closing (a hang-up closes it: node:http does not keep a
// half-open one). A wait subscribes only while it waits, so a kept-alive socket collects no listeners.
function _gone(req: IncomingMessage): Gone {
  return (listener) => {
    const { socket } = req;
    if (socket.destroyed) {
      queueMicrotask(listener);
      return () => {};
    }
    socket.once('close', listener);
    return () => void socket.off('close', listener);
  };
}

/** Whether the client asked to be invited before it sends the body (`Expect: 100-continue`). */
export function expectsContinue(req: IncomingMessage): boolean {
  return req.headers.expect !== undefined && /\b100-continue\b/i.test(req.headers.expect);
}
