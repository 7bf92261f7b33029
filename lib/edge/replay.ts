import type { IncomingHttpHeaders } from 'node:http';
import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { bodyBytes } from '../store/ledger/read.ts';
import type { LedgerEntry } from '../model/ledger-entry.ts';
import type { HooksPath } from './hooks-route.ts';
import { REDACTED, type Recorder } from './ledger-note.ts';
import type { HookRequest, Judged } from './plan.ts';
import type { PreviewInput } from './preview.ts';
import type { Trace } from './trace.ts';
import { signedPaths } from '../guard/signatures/paths.ts';
import { randomHex } from '../random.ts';
import type { ReplayAttempt } from '../model/replays.ts';
import type { Effects } from '../store/journal/store.ts';

// Running a stored request again through today's configuration: which entries can be, and the
// request they make. The running server does it (it is the one writer of the state directory).

/** What a replay (or a dry run of one) came to. */
export interface ReplayOutcome {
  /** The root replayed (the original request, whichever of its entries was named), and the new entry the replay made (absent with the ledger off, or in a dry run). */
  replayOf: string;
  entry?: string;
  requestId: string;
  status: number;
  code?: string;
  error?: string;
  became?: LedgerEntry['became'];
}

// Schemes whose credential is a shared token in a header the ledger never keeps: a request that
// passed it replays on its recorded verdict, one that failed cannot be checked again.
const _SHARED_TOKEN = new Set(['gitlab', 'token']);

/**
 * Why an entry cannot be replayed under `config`, or `null`: only a POST with its whole body kept,
 * to a hook that still exists, that authenticated then or can be verified now.
 */
export function replayProblem(entry: LedgerEntry, config: Config): string | null {
  if (entry.method !== 'POST') return `a ${entry.method} request (${entry.became?.handshake === undefined ? 'not a delivery' : 'a handshake'}) is not replayed`;
  if (entry.hook === undefined || entry.hook === '') return 'the request named no hook';
  if (entry.body === undefined) return `its body was not kept (${entry.bodyOmitted ?? 'metadata only'}): only its metadata is in the ledger`;
  if (entry.body.truncated) return `only the first ${bodyBytes(entry.body).length} of its ${entry.body.bytes} bytes were kept`;
  const signature = signedPaths(config).get(entry.hook);
  if (signature === undefined) {
    // Opened by the hook token: the token is never kept, so only a request that passed it then replays.
    return entry.auth === 'none' ? 'it did not authenticate, and its credential is not kept (only a signed request is verified again)' : null;
  }
  if (_SHARED_TOKEN.has(signature.scheme) && entry.signature?.ok !== true) {
    return `its ${signature.scheme} token failed, and the token is not kept, so it cannot be checked again`;
  }
  return null;
}

/**
 * The request a replay makes of an entry: its headers, query and body as kept, a new request id,
 * a trace that marks it a replay and carries its recorded authentication; judged as a stored
 * request (the signature verified with today's secrets but not against the tolerance, a shared
 * token's verdict taken from the record, nothing counted against the client) that is idempotent
 * by the same key as a live copy of it: it waits for a copy in flight, is a duplicate of a
 * delivery already taken (unless `force`), and takes its delivery id when it succeeds.
 */
export function replayInput(entry: LedgerEntry, id: string, config: Config, force = false, root = entry.replayOf ?? entry.id): HookRequest {
  const headers: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(entry.headers)) if (value !== REDACTED) headers[name] = value;
  const rawQuery = entry.query ?? '';
  // A request that passed a token check replays on the strength of that verdict.
  const trace: Trace = { hook: entry.hook ?? '', auth: entry.auth, replayOf: root };
  const signature = signedPaths(config).get(entry.hook ?? '');
  const judged: Judged = { fresh: false, keyed: true, counted: false, ...(force ? { again: true } : {}) };
  if (signature !== undefined && _SHARED_TOKEN.has(signature.scheme)) judged.verified = true;
  // The entry does not say which token opened the gmail hook: a replay reaches what gog's token
  // reaches (mappings on the path "gmail"), never more than the request could have reached live.
  const { hookToken } = config.hooks.gmail;
  const pathOnly = signature === undefined && entry.hook === 'gmail' && hookToken !== undefined && hookToken !== config.hooks.token;
  return {
    ...(pathOnly ? { pathOnly: true } : {}),
    id,
    name: entry.hook ?? '',
    headers,
    query: new URLSearchParams(rawQuery),
    rawQuery,
    bytes: bodyBytes(entry.body!),
    client: { address: entry.client, key: `replay ${entry.client}` },
    trace,
    judged,
  };
}

/** A stored request as a dry run takes it (`try` of an entry, `requests replay --dry-run`). */
export function replayPreview(entry: LedgerEntry, config: Config): PreviewInput {
  const { name, headers, rawQuery, bytes, judged, pathOnly } = replayInput(entry, 'try', config);
  return { name, headers, rawQuery, bytes, ...(judged.verified === true ? { verified: true } : {}), ...(pathOnly === true ? { pathOnly } : {}) };
}

/** What a replay runs with: the current configuration's hooks path and recorder, the log, request ids, the clock. */
export interface ReplayParts {
  config: Config;
  path: HooksPath;
  record: Recorder | null;
  log: Pick<Logger, 'info'>;
  newId: () => string;
  now: () => number;
}

/** How one replay runs. */
export interface ReplayOptions {
  /** Run even when its delivery id is already taken (it then takes it). */
  force?: boolean;
  /** The original request (a replay of a replay is a replay of it); the entry's own root when absent. */
  root?: string;
  /** What the replay's journal commit also writes, given what the replay came to (its root's record). */
  settle?: (attempt: ReplayAttempt) => Effects;
}

/**
 * Runs a stored request again (plan and commit) through the current configuration and records it
 * as a new entry marked as a replay of its root; a request that cannot be replayed is an HttpError
 * (409, ERR_NOT_REPLAYABLE). The options' `settle` rides on the replay's journal commit, if it makes one.
 */
export async function replayEntry(parts: ReplayParts, entry: LedgerEntry, options: ReplayOptions = {}): Promise<ReplayOutcome> {
  const { config } = parts;
  const problem = replayProblem(entry, config);
  if (problem !== null) throw new HttpError(409, ErrorCode.NotReplayable, `entry ${entry.id} cannot be replayed: ${problem}`);
  const started = parts.now();
  const id = parts.newId();
  const input = replayInput(entry, id, config, options.force === true, options.root);
  // The entry's id is chosen now: the journal line of the replay's effects names it.
  const entryId = parts.record === null ? undefined : randomHex(12);
  const { settle } = options;
  if (settle !== undefined) input.settle = (status) => settle({ ...(entryId === undefined ? {} : { entry: entryId }), requestId: id, status, time: new Date().toISOString() });
  const answer = await parts.path(input);
  const trace = answer.trace ?? input.trace;
  const durationMs = Math.round((parts.now() - started) * 10) / 10;
  const code = typeof answer.body['code'] === 'string' ? answer.body['code'] : undefined;
  const made = parts.record?.({ requestId: id, method: 'POST', path: entry.path, query: input.query, rawQuery: input.rawQuery, headers: input.headers, client: input.client, answer, trace, durationMs, ...(entryId === undefined ? {} : { entryId }) });
  const root = trace.replayOf ?? entry.id;
  parts.log.info('replay', { id, replayOf: root, hook: entry.hook, status: answer.status, ...(code === undefined ? {} : { code }), ...(made === undefined ? {} : { entry: made }) });
  const outcome: ReplayOutcome = { replayOf: root, requestId: id, status: answer.status };
  if (made !== undefined) outcome.entry = made;
  if (code !== undefined) outcome.code = code;
  if (answer.status >= 400 && typeof answer.body['error'] === 'string') outcome.error = answer.body['error'];
  if (trace.became !== undefined) outcome.became = trace.became;
  return outcome;
}
