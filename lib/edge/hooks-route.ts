import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { Client } from '../guard/address.ts';
import type { Auth } from '../guard/auth.ts';
import { parseForm, parseJsonObject, readBody } from '../guard/body.ts';
import { deliveryId } from '../guard/signatures/verify.ts';
import type { Signature } from '../guard/signatures/config.ts';
import { extractToken, tokenDigest, tokenMatches } from '../guard/token.ts';
import { errorAnswer, type Answer } from './answer.ts';
import type { Dispatch } from './dispatch.ts';
import { idempotencyKey, type Idempotent } from './idempotency.ts';
import { signatureVerdict, type Note } from './ledger-note.ts';
import { formAsSigned, metaHandshake, missingSignature, signedPaths, slackChallenge } from '../guard/signatures/paths.ts';
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
      return { status: 200, body: {}, text: handshake.challenge, contentType: 'text/plain; charset=utf-8' };
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
    return accept(ctx, pathOnly);
  };
}

// An authenticated request from here on (a signed one is checked once its body is read): the body
// within its cap, then processed as any hook request's bytes are.
function _acceptor(options: HooksRouteOptions): (ctx: Context, pathOnly: boolean) => Promise<Answer> {
  const { config, bodyTimeoutMs, received } = options;
  const process = hookProcessor(options);
  return async (ctx, pathOnly) => {
    const { req, name, note } = ctx;
    const bytes = await readBody(req, { maxBytes: config.hooks.maxBodyBytes, timeoutMs: bodyTimeoutMs });
    received.set(req, bytes.length);
    const target = req.url ?? '';
    const rawQuery = target.includes('?') ? target.slice(target.indexOf('?') + 1) : '';
    return process({ id: ctx.id, name, headers: req.headers, query: ctx.query, rawQuery, bytes, client: ctx.client, note, pathOnly, gone: _gone(req) }, 'live');
  };
}

/** The bytes of one hook request and what came with them: what a live request and a replay both process. */
export interface HookBytes {
  /** The request id. */
  id: string;
  name: string;
  headers: IncomingHttpHeaders;
  query: URLSearchParams;
  /** The query as received, which some schemes sign. */
  rawQuery: string;
  bytes: Buffer;
  client: Client;
  note: Note;
  /** The credential opens this hook's path alone (the gmail token). */
  pathOnly?: boolean;
  /** Tells a waiting request that its client left (a live request only). */
  gone?: Gone;
  /** A replay whose shared token (`gitlab`, `token`) passed when it arrived: its verdict is on record, the token is not kept. */
  verified?: boolean;
}

/**
 * How the bytes are taken: `live`, from the network (the signature held against the clock's
 * tolerance, a refusal counted against the client, the dispatch idempotent by the request's key);
 * `replay`, a stored request the operator sends again (the signature verified with today's secrets
 * but not against the tolerance, nothing counted, and no key: a deliberate replay is never a duplicate).
 */
export type HookMode = 'live' | 'replay';

/** Processes a hook request's bytes: the signature over them, the body parsed, the dispatch. */
export function hookProcessor(options: Pick<HooksRouteOptions, 'config' | 'auth' | 'idempotent' | 'dispatch' | 'clock'>): (input: HookBytes, mode: HookMode) => Promise<Answer> {
  const { auth, idempotent, dispatch } = options;
  const signatures = signedPaths(options.config);
  return async (input, mode) => {
    const { name, note, bytes, headers } = input;
    note.body = bytes;
    const signature = signatures.get(name);
    // Over the raw bytes, after the cap and before any parsing.
    if (signature !== undefined && mode === 'replay' && input.verified === true) {
      note.signature = { scheme: signature.scheme, ok: true };
      note.auth = 'signature';
    } else if (signature !== undefined) {
      const signed = { headers, body: bytes, query: input.rawQuery };
      const verdict = (note.signature = signatureVerdict(mode === 'live' ? signature : { ...signature, toleranceSeconds: Number.MAX_SAFE_INTEGER }, signed, options.clock()));
      if (!verdict.ok) {
        const reason = verdict.reason ?? 'invalid signature';
        return errorAnswer(mode === 'live' ? auth.refuse(input.client, reason) : new HttpError(401, ErrorCode.Unauthorized, reason));
      }
      note.auth = 'signature';
    }
    const body = parseHookBody(name, headers, bytes, signature);
    const challenge = slackChallenge(signature, body);
    if (challenge !== null) {
      note.became = { handshake: 'slack' };
      return { status: 200, body: { challenge } };
    }
    const call = { id: input.id, name, body, headers, query: input.query, note, ...(input.gone === undefined ? {} : { gone: input.gone }), ...(input.pathOnly === true ? { pathOnly: true } : {}) };
    if (mode === 'replay') return dispatch(call, null);
    const delivery = signature === undefined ? null : deliveryId(signature, { headers, body: bytes, query: input.rawQuery }, body);
    // /wake and /agent may carry the key in the body, as OpenClaw's gateway reads it there for every hook.
    return idempotent(name, idempotencyKey(headers, name === 'agent' || name === 'wake' ? body : {}, delivery), (idem) => dispatch(call, idem), note, input.gone);
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

/** The body as a hook reads it: a form from a form-posting sender on a mapped hook, else a JSON object (an HttpError when it is neither). */
export function parseHookBody(name: string, headers: IncomingHttpHeaders, bytes: Buffer, signature: Signature | undefined): Record<string, unknown> {
  // Form-posting senders (Slack commands, Twilio, ...) reach mapped hooks only; /wake and /agent take JSON.
  const form = name !== 'wake' && name !== 'agent' && /^application\/x-www-form-urlencoded\b/i.test(_one(headers['content-type']));
  // `curl -d` labels JSON as a form: a body that is a JSON object is read as JSON whatever the label
  // says, unless the signature covers it as a form.
  return form && (formAsSigned(signature) || !/^\s*\{/.test(bytes.subarray(0, 64).toString('latin1'))) ? parseForm(bytes) : parseJsonObject(bytes);
}

function _one(value: string | string[] | undefined): string {
  return Array.isArray(value) ? (value[0] ?? '') : (value ?? '');
}

/** Whether the client asked to be invited before it sends the body (`Expect: 100-continue`). */
export function expectsContinue(req: IncomingMessage): boolean {
  return req.headers.expect !== undefined && /\b100-continue\b/i.test(req.headers.expect);
}
