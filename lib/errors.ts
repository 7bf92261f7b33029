// HttpError (status, stable code, headers) and the list of error codes.

/**
 * Every error code this product defines (Node's own, such as `ERR_PARSE_ARGS_*`, are not here): the
 * codes a client of the HTTP listeners sees, the control channel's, and the errors the store names.
 */
export const ErrorCode = {
  NotFound: 'ERR_NOT_FOUND',
  TokenInUrl: 'ERR_TOKEN_IN_URL',
  MethodNotAllowed: 'ERR_METHOD_NOT_ALLOWED',
  Unauthorized: 'ERR_UNAUTHORIZED',
  TooManyFailures: 'ERR_TOO_MANY_FAILURES',
  BodyTooLarge: 'ERR_BODY_TOO_LARGE',
  FieldTooLarge: 'ERR_FIELD_TOO_LARGE',
  BodyTimeout: 'ERR_BODY_TIMEOUT',
  InvalidJson: 'ERR_INVALID_JSON',
  InvalidPayload: 'ERR_INVALID_PAYLOAD',
  // A well-formed request that a rule refuses: a policy refusal (session key, agent, model; 400), or a
  // subscription check whose token does not match (403).
  NotAllowed: 'ERR_NOT_ALLOWED',
  Unavailable: 'ERR_UNAVAILABLE',
  // One hook's own backlog bound (its `maxQueued`) reached: 503, while other hooks' requests are still taken.
  HookBacklog: 'ERR_HOOK_BACKLOG',
  // A hook's own limits (429 with Retry-After): its `rateLimit` with `over: "reject"`, and its daily
  // `budget` spent. Neither is an auth failure: the failure limiter never counts them.
  RateLimited: 'ERR_RATE_LIMITED',
  BudgetExceeded: 'ERR_BUDGET_EXCEEDED',
  MappingFailed: 'ERR_MAPPING_FAILED',
  // An /agent request's `callbackUrl` whose origin is not one of hooks.callbackOrigins (400).
  CallbackOrigin: 'ERR_CALLBACK_ORIGIN',
  // A stored request the ledger cannot run again (metadata only, its body cut, a credential not kept).
  NotReplayable: 'ERR_NOT_REPLAYABLE',
  // A run that `runs retry` or `runs redeliver` will not run again or send again (not failed, retried
  // already, its request replayed since, no reply or no channel, forward mode's runs upstream).
  NotRetryable: 'ERR_NOT_RETRYABLE',
  Internal: 'ERR_INTERNAL',
  // The control channel's refusals (lib/control/server.ts): never HTTP answers, lines on the owner's socket.
  ControlAuth: 'ERR_CONTROL_AUTH',
  ControlUnknownOp: 'ERR_CONTROL_UNKNOWN_OP',
  ControlTooLarge: 'ERR_CONTROL_TOO_LARGE',
  ControlBadRequest: 'ERR_CONTROL_BAD_REQUEST',
  // More connections open than the channel serves at once: this one is answered and closed.
  ControlBusy: 'ERR_CONTROL_BUSY',
  // The CLI's own refusal: the state directory's control files are not what the server makes.
  ControlUnsafe: 'ERR_CONTROL_UNSAFE',
  // The CLI's side, before or instead of an answer: the socket's path is too long for a unix
  // socket, the control files cannot be read, the connection failed, it closed with no answer, or
  // what came back is no control answer.
  ControlPath: 'ERR_CONTROL_PATH',
  ControlAccess: 'ERR_CONTROL_ACCESS',
  ControlConnect: 'ERR_CONTROL_CONNECT',
  ControlClosed: 'ERR_CONTROL_CLOSED',
  ControlAnswer: 'ERR_CONTROL_ANSWER',
  // Pause, resume and drop over the control channel: a name that is no hook of the configuration
  // (404), and a resume or drop of a hook that is not paused (409).
  UnknownHook: 'ERR_UNKNOWN_HOOK',
  NotPaused: 'ERR_NOT_PAUSED',
  // The inspector: a `Host` that does not name its listener (421), and a request without a live session (401).
  Misdirected: 'ERR_MISDIRECTED',
  NoSession: 'ERR_NO_SESSION',
  // The store's own errors, which no client sees: the journal's file replaced under the running
  // server (the request is answered ERR_UNAVAILABLE), and a file named like a ledger segment that
  // is not a regular file (left alone, logged).
  JournalReplaced: 'ERR_JOURNAL_REPLACED',
  NotASegment: 'ERR_NOT_A_SEGMENT',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface HttpErrorOptions {
  /** Extra response headers, e.g. `Allow` or `Retry-After`. */
  headers?: Record<string, string>;
  /** Close the connection after answering (the request body was not read to its end). */
  close?: boolean;
  cause?: unknown;
}

/**
 * The one error type a request handler throws to answer a client. Its message is
 * sent to the client, so it must never carry a secret or a piece of the body.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly headers: Readonly<Record<string, string>>;
  readonly close: boolean;

  constructor(status: number, code: ErrorCode, message: string, options: HttpErrorOptions = {}) {
    // An HttpError is an answer, not a fault: its stack is never read, and capturing one costs
    // more than the rest of a refused request (a 401 under load spent ~10% of its time here).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    Error.stackTraceLimit = limit;
    this.name = 'HttpError';
    this.status = status;
    this.code = code;
    this.headers = options.headers ?? {};
    this.close = options.close ?? false;
  }
}
