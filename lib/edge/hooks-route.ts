import type { IncomingMessage } from 'node:http';
import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { Authenticate } from '../guard/auth.ts';
import { parseForm, parseJsonObject, readBody } from '../guard/body.ts';
import { extractToken } from '../guard/token.ts';
import type { Answer, Dispatch } from './dispatch.ts';
import { idempotencyKey, type Idempotent } from './idempotency.ts';

/** One routed request: its id, the request, the query, the hook name and the client address. */
export interface Context {
  id: string;
  req: IncomingMessage;
  query: URLSearchParams;
  /** The hook name after `hooks.path`, decoded; `''` for the base path itself. */
  name: string;
  client: string;
}

/** What a route does with a request. */
export type Handler = (ctx: Context) => Promise<Answer>;

export interface HooksRouteOptions {
  config: Config;
  authenticate: Authenticate;
  idempotent: Idempotent;
  dispatch: Dispatch;
  bodyTimeoutMs: number;
  /** Body bytes read per request, for metrics. */
  received: WeakMap<IncomingMessage, number>;
}

/** `POST {hooks.path}/<name>`: the hook token, the body within its cap, then the idempotent dispatch. */
export function hooksRoute(options: HooksRouteOptions): Handler {
  const { config, authenticate, idempotent, dispatch, bodyTimeoutMs, received } = options;
  return async (ctx) => {
    const { req, name } = ctx;
    const presented = extractToken(req.headers);
    authenticate(presented, config.hooks.token, ctx.client, presented === null ? 'missing hook token' : 'invalid hook token', true);
    if (name === '') throw new HttpError(404, ErrorCode.NotFound, 'hook name missing: POST to a path such as /wake or /agent');
    const bytes = await readBody(req, { maxBytes: config.hooks.maxBodyBytes, timeoutMs: bodyTimeoutMs });
    received.set(req, bytes.length);
    // Form-posting senders (Slack commands, Twilio, ...) reach mapped hooks only; /wake and /agent take JSON.
    const form = name !== 'wake' && name !== 'agent' && /^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] ?? '');
    // `curl -d` labels JSON as a form: a body that is a JSON object is read as JSON whatever the label says.
    const body = form && !/^\s*\{/.test(bytes.subarray(0, 64).toString('latin1')) ? parseForm(bytes) : parseJsonObject(bytes);
    const call = { id: ctx.id, name, body, headers: req.headers, query: ctx.query };
    return idempotent(name, idempotencyKey(req.headers, name === 'agent' ? body : {}), (idem) => dispatch(call, idem));
  };
}
