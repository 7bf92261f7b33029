// The hooks path (docs/http-api.md's request-handling order): the router has found the route,
// refused a token in the URL and a method the route does not take (server.ts). Here, at the door,
// the credential (step 4, which counts a failure against the client: the one effect before the
// body, and an explicit one), the hook name (5) and the body within its cap (6, read from the
// socket); then `hooksPath` runs the rest: plan's reading (the signature over the raw bytes, the
// body parsed: plan.ts), the idempotency gate (7, idempotency.ts), plan's decisions (8: mappings,
// transforms, policy) and commit (the capacity bounds, the journal, the runs: commit.ts). Every
// answer carries the trace of what was decided.

import type { IncomingMessage } from 'node:http';
import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { Client } from '../guard/address.ts';
import type { Auth } from '../guard/auth.ts';
import { readBody } from '../guard/body.ts';
import { extend } from '../object.ts';
import type { Fingerprints } from '../guard/fingerprint.ts';
import { extractToken, tokenDigest, tokenMatches } from '../guard/token.ts';
import type { Logger } from '../log.ts';
import { type Answer, answerError, refusedAnswer } from './answer.ts';
import type { Commit } from './commit.ts';
import type { Idempotent } from './idempotency.ts';
import { type HookRequest, LIVE, type Planner } from './plan.ts';
import type { Trace } from './trace.ts';
import { metaHandshake, missingSignature, signedPaths } from '../guard/signatures/paths.ts';
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
}

/**
 * What a route does with a request. An answer it can give at once (a refusal) comes back as a
 * value, with no promise: only a request that goes on to read its body pays for one.
 */
export type Handler = (ctx: Context) => Answer | Promise<Answer>;

export interface HooksRouteOptions {
  config: Config;
  auth: Auth;
  /** The rest of the way, once the body is read. */
  path: HooksPath;
  bodyTimeoutMs: number;
  /** Body bytes read per request, for metrics. */
  received: WeakMap<IncomingMessage, number>;
  /** The wall clock in epoch milliseconds, that signed timestamps are held against. */
  clock: () => number;
  log: Logger;
  /** Fingerprints the token a request came with, for the ledger; without it none is made. */
  fingerprints?: Fingerprints;
}

/**
 * `POST {hooks.path}/<name>`: the hook token (or, on a signed path, the signature over the raw
 * body), the body within its cap, then the hooks path. `GET` is Meta's subscription check.
 */
export function hooksRoute(options: HooksRouteOptions): Handler {
  const { config, auth } = options;
  const signatures = signedPaths(config);
  // The configured tokens' digests, made once per (re)load: a request hashes only what it presents.
  const hookTokens = [config.hooks.token === null ? null : tokenDigest(config.hooks.token)];
  const gmailTokens = config.hooks.gmail.hookToken === undefined
    ? hookTokens
    : [...hookTokens, tokenDigest(config.hooks.gmail.hookToken)];
  // The fingerprints of the tokens that open the hooks, made once per (re)load: a request that
  // passes carries the one of the token it matched.
  const { fingerprints } = options;
  const door: _Door = {
    auth,
    hookTokens,
    gmailTokens,
    hookPrint: fingerprints === undefined || config.hooks.token === null
      ? undefined
      : fingerprints.of(config.hooks.token),
    gmailPrint: fingerprints === undefined || config.hooks.gmail.hookToken === undefined
      ? undefined
      : fingerprints.of(config.hooks.gmail.hookToken),
    accept: _acceptor(options),
    clock: options.clock,
  };
  // A path whose mappings carry a signature is opened by that signature alone, never by the hook token.
  // A valid signature does not clear the client's failure count: a captured delivery of a scheme without
  // a timestamp verifies again and again, and must not reset the count of someone guessing the hook token.
  return (ctx) => {
    const signature = signatures.get(ctx.name);
    if (ctx.req.method === 'GET') return _handshake(ctx, signature, auth);
    if (signature === undefined) return _byToken(ctx, door);
    return _bySignature(ctx, signature, door);
  };
}

/** What the door of the hooks path holds for a (re)load: the tokens' digests and fingerprints, and the way on. */
interface _Door {
  auth: Auth;
  hookTokens: (Buffer | null)[];
  /** The tokens that open the gmail hook: the hook token's, and the credential gog posts with. */
  gmailTokens: (Buffer | null)[];
  hookPrint: string | undefined;
  gmailPrint: string | undefined;
  accept: _Accept;
  clock: () => number;
}

type _Signature = NonNullable<ReturnType<ReturnType<typeof signedPaths>['get']>>;

// A GET on a signed path: Meta's set-up handshake, answered with its challenge, or refused.
function _handshake(ctx: Context, signature: _Signature | undefined, auth: Auth): Answer {
  const handshake = metaHandshake(signature, ctx.query);
  if (!handshake.ok) {
    const refusal = auth.refuse(ctx.client, handshake.refusal, 403);
    return refusedAnswer(refusal, { hook: ctx.name, auth: 'none', refusal });
  }
  const trace: Trace = { hook: ctx.name, auth: 'token', became: { handshake: 'meta' } };
  return { status: 200, body: {}, text: handshake.challenge, contentType: 'text/plain; charset=utf-8', trace };
}

// A path opened by a token: the hook token, or for the gmail hook also the credential gog posts with.
function _byToken(ctx: Context, door: _Door): Answer | Promise<Answer> {
  const { req, name } = ctx;
  const { hookTokens, gmailTokens } = door;
  const presented = extractToken(req.headers);
  // The gmail hook also opens to the credential gog posts with, which opens nothing else: not
  // even a mapping that would take any path (one without a path, or matched by source alone).
  const gmail = name === 'gmail' && gmailTokens !== hookTokens;
  const refusal = door.auth.authenticate(
    presented,
    gmail ? gmailTokens : hookTokens,
    ctx.client,
    presented === null ? 'missing hook token' : 'invalid hook token',
  );
  if (refusal !== null) return refusedAnswer(refusal, { hook: name, auth: 'none', refusal });
  // Whether the request holds a credential that opens this path alone: its mappings must name the path.
  const pathOnly = gmail && !(hookTokens[0] != null && tokenMatches(presented!, hookTokens[0]));
  const credential = pathOnly ? door.gmailPrint : door.hookPrint;
  return _named(
    ctx,
    credential === undefined ? { hook: name, auth: 'token' } : { hook: name, auth: 'token', credential },
    pathOnly,
    door.accept,
  );
}

// A signed path: checked once its body is read, but a request without the scheme's headers is
// refused before the body is invited.
function _bySignature(ctx: Context, signature: _Signature, door: _Door): Answer | Promise<Answer> {
  if (expectsContinue(ctx.req)) {
    // Only what can be checked before the body: a request without the scheme's headers is refused now.
    const missing = missingSignature(signature, ctx.req, door.clock());
    if (missing !== null) {
      const refusal = door.auth.refuse(ctx.client, missing);
      return refusedAnswer(refusal, {
        hook: ctx.name,
        auth: 'none',
        signature: { scheme: signature.scheme, ok: false, why: 'missing-header', reason: missing },
        refusal,
      });
    }
  }
  return _named(ctx, { hook: ctx.name, auth: 'none' }, false, door.accept);
}

// Step 5, the hook name, then the body is invited and read.
function _named(ctx: Context, trace: Trace, pathOnly: boolean, accept: _Accept): Answer | Promise<Answer> {
  if (ctx.name === '') {
    const refusal = new HttpError(404, ErrorCode.NotFound, 'hook name missing: POST to a path such as /wake or /agent');
    return refusedAnswer(refusal, extend(trace, { refusal }));
  }
  // `100 Continue` only now that the sender is authenticated: anyone else gets the final status
  // at once, and is never invited to upload.
  ctx.invite();
  return accept(ctx, trace, pathOnly);
}

type _Accept = (ctx: Context, trace: Trace, pathOnly: boolean) => Promise<Answer>;

// An authenticated request from here on (a signed one is checked once its body is read): the body
// within its cap, then the hooks path as any hook request's bytes take it.
function _acceptor(options: HooksRouteOptions): _Accept {
  const { config, bodyTimeoutMs, received, path } = options;
  return async (ctx, trace, pathOnly) => {
    const { req, name } = ctx;
    let bytes: Buffer;
    try {
      bytes = await readBody(req, { maxBytes: config.hooks.maxBodyBytes, timeoutMs: bodyTimeoutMs });
    } catch (error) {
      return error instanceof HttpError
        ? refusedAnswer(error, extend(trace, { refusal: error }))
        : extend(answerError(error, ctx.id, options.log), { trace });
    }
    received.set(req, bytes.length);
    const target = req.url ?? '';
    const rawQuery = target.includes('?') ? target.slice(target.indexOf('?') + 1) : '';
    const request: HookRequest = {
      id: ctx.id,
      name,
      headers: req.headers,
      query: ctx.query,
      rawQuery,
      bytes,
      client: ctx.client,
      trace,
      judged: LIVE,
      gone: _gone(req),
    };
    if (pathOnly) request.pathOnly = true;
    return path(request);
  };
}

/** The hooks path once a request's bytes are read: a live request's, or a stored one replayed. */
export type HooksPath = (request: HookRequest) => Promise<Answer>;

/**
 * Plan and commit, with the idempotency gate between plan's reading and its decisions: a copy of a
 * request answered (or in flight) is answered from the record before anything is decided for it
 * again, so a retry gets the first answer even under a changed configuration. A replay passes the
 * same gate by the same key, so a delivery takes effect once whichever way it arrives. Every answer
 * carries the trace.
 */
export function hooksPath(planner: Planner, commit: Commit, idempotent: Idempotent, log: Logger): HooksPath {
  return async (request) => {
    try {
      const read = planner.read(request);
      if (read.kind !== 'parsed') return await commit(read, request, null);
      if (read.key === null) return await commit(await planner.decide(read), request, null);
      return await idempotent(
        request.name,
        read.key,
        async (idem) => commit(await planner.decide(read), request, idem),
        read.trace,
        request.gone,
      );
    } catch (error) {
      // Unexpected (an HttpError is a refusal in the plan): a bare 500, the trace as far as the door.
      return extend(answerError(error, request.id, log), { trace: extend(request.trace, { body: request.bytes }) });
    }
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
