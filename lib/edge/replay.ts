// Running a stored request again through today's configuration: which entries can be, and the
// request they make. The running server does it (it is the one writer of the state directory).

import type { IncomingHttpHeaders } from 'node:http';
import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { bodyBytes } from '../store/ledger/read.ts';
import type { LedgerEntry } from '../model/ledger-entry.ts';
import type { HooksPath } from './hooks-route.ts';
import { type Recorder, REDACTED } from './ledger-note.ts';
import type { HookRequest, Judged } from './plan.ts';
import type { PreviewInput } from './preview.ts';
import type { Trace } from './trace.ts';
import { signedPaths } from '../guard/signatures/paths.ts';
import { randomHex } from '../random.ts';
import type { ReplayAttempt } from '../model/replays.ts';
import type { Effects } from '../store/journal/store.ts';
import type { Fingerprints } from '../guard/fingerprint.ts';
import { CREDENTIAL_KEY } from '../store/state/credential-key.ts';

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

/** What the token a stored request came with is checked by: the state directory's fingerprints (`null`: its key could not be read), and `force`, which also replays one that cannot be checked. */
export interface ReplayCredentials {
  fingerprints: Fingerprints | null;
  force?: boolean;
}

// Schemes whose credential is a shared token in a header the ledger never keeps: a request that
// passed it replays on its recorded verdict while that token is still configured (the entry keeps
// its fingerprint), one that failed cannot be checked again.
const _SHARED_TOKEN = new Set(['gitlab', 'token']);

/**
 * Why an entry cannot be replayed under `config`, or `null`: only a POST with its whole body kept,
 * to a hook that still exists, that authenticated then or can be verified now; one that came with a
 * token only while that token still opens the hook (its fingerprint matches one configured now).
 */
export function replayProblem(entry: LedgerEntry, config: Config, credentials: ReplayCredentials): string | null {
  if (entry.method !== 'POST') {
    return `a ${entry.method} request (${
      entry.became?.handshake === undefined ? 'not a delivery' : 'a handshake'
    }) is not replayed`;
  }
  if (entry.hook === undefined || entry.hook === '') return 'the request named no hook';
  if (entry.body === undefined) {
    return `its body was not kept (${entry.bodyOmitted ?? 'metadata only'}): only its metadata is in the ledger`;
  }
  if (entry.body.truncated) {
    return `only the first ${bodyBytes(entry.body).length} of its ${entry.body.bytes} bytes were kept`;
  }
  const signature = signedPaths(config).get(entry.hook);
  if (signature === undefined) {
    // Opened by the hook token: the token is never kept, so only a request that passed it then
    // replays, and one that came with a token only while that token still opens the hook.
    if (entry.auth === 'none') {
      return 'it did not authenticate, and its credential is not kept (only a signed request is verified again)';
    }
    const came = entry.auth === 'token' || (entry.signature !== undefined && _SHARED_TOKEN.has(entry.signature.scheme));
    return came ? _tokenProblem(entry, _hookTokens(config, entry.hook), 'token', credentials) : null;
  }
  if (!_SHARED_TOKEN.has(signature.scheme)) return null;
  if (entry.signature?.ok !== true) {
    return `its ${signature.scheme} token failed, and the token is not kept, so it cannot be checked again`;
  }
  if (entry.signature.scheme !== signature.scheme) {
    return `it came with the ${entry.signature.scheme} scheme's credential, and the ${signature.scheme} token this path takes now is not kept, so it cannot be checked`;
  }
  return _tokenProblem(
    entry,
    signature.secrets,
    signature.scheme === 'gitlab' ? 'gitlab token' : 'path token',
    credentials,
  );
}

// The tokens that open a hook not signed: the hook token, and on the gmail hook the gmail token too.
function _hookTokens(config: Config, hook: string): string[] {
  const { token, gmail } = config.hooks;
  return [
    ...(token === null ? [] : [token]),
    ...(hook === 'gmail' && gmail.hookToken !== undefined ? [gmail.hookToken] : []),
  ];
}

// Whether the token an entry came with (`what`, as the reason names it) is one of `tokens` now. A
// token checked and found gone is never replayed; one that cannot be checked (no fingerprint kept,
// or one under another key) only with `force`.
function _tokenProblem(
  entry: LedgerEntry,
  tokens: readonly string[],
  what: string,
  credentials: ReplayCredentials,
): string | null {
  const { credential } = entry;
  const { fingerprints } = credentials;
  const unchecked = (
    why: string,
  ) => (credentials.force === true
    ? null
    : `${why}, so whether that ${what} is still configured cannot be checked; replay it with --force if it is genuine`);
  if (credential === undefined) {
    return unchecked(`it was recorded without its ${what}'s fingerprint (before fingerprints were kept)`);
  }
  if (fingerprints === null) {
    return unchecked(`the credential key (${CREDENTIAL_KEY} in the state directory) cannot be read`);
  }
  if (!fingerprints.mine(credential)) {
    return unchecked(
      `its ${what}'s fingerprint was made under another credential key (${CREDENTIAL_KEY} in the state directory was replaced since)`,
    );
  }
  return tokens.some((token) => fingerprints.of(token) === credential)
    ? null
    : `its ${what} is no longer configured (rotated since)`;
}

/**
 * The request a replay makes of an entry: its headers, query and body as kept, a new request id,
 * a trace that marks it a replay and carries its recorded authentication; judged as a stored
 * request (the signature verified with today's secrets but not against the tolerance, a shared
 * token's verdict taken from the record, nothing counted against the client) that is idempotent
 * by the same key as a live copy of it: it waits for a copy in flight, is a duplicate of a
 * delivery already taken (unless `force`), and takes its delivery id when it succeeds.
 */
export function replayInput(
  entry: LedgerEntry,
  id: string,
  config: Config,
  credentials: ReplayCredentials = { fingerprints: null },
  root = entry.replayOf ?? entry.id,
): HookRequest {
  const headers: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(entry.headers)) if (value !== REDACTED) headers[name] = value;
  const rawQuery = entry.query ?? '';
  // A request that passed a token check replays on the strength of that verdict.
  const trace: Trace = {
    hook: entry.hook ?? '',
    auth: entry.auth,
    replayOf: root,
    ...(entry.credential === undefined ? {} : { credential: entry.credential }),
  };
  const signature = signedPaths(config).get(entry.hook ?? '');
  const judged: Judged = {
    fresh: false,
    keyed: true,
    counted: false,
    ...(credentials.force === true ? { again: true } : {}),
  };
  if (signature !== undefined && _SHARED_TOKEN.has(signature.scheme)) judged.verified = true;
  // Unless its fingerprint says it came with the hook token, a replay on the gmail hook reaches what
  // gog's token reaches (mappings on the path "gmail"), never more than the request could have reached live.
  const { hookToken } = config.hooks.gmail;
  const { fingerprints } = credentials;
  const hookTokenOpened = entry.credential !== undefined && fingerprints !== null && config.hooks.token !== null &&
    fingerprints.of(config.hooks.token) === entry.credential;
  const pathOnly = signature === undefined && entry.hook === 'gmail' && hookToken !== undefined &&
    hookToken !== config.hooks.token && !hookTokenOpened;
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
export function replayPreview(entry: LedgerEntry, config: Config, credentials: ReplayCredentials): PreviewInput {
  const { name, headers, rawQuery, bytes, judged, pathOnly } = replayInput(entry, 'try', config, credentials);
  return {
    name,
    headers,
    rawQuery,
    bytes,
    ...(judged.verified === true ? { verified: true } : {}),
    ...(pathOnly === true ? { pathOnly } : {}),
  };
}

/** What a replay runs with: the current configuration's hooks path and recorder, the log, request ids, the clock. */
export interface ReplayParts {
  config: Config;
  path: HooksPath;
  record: Recorder | null;
  log: Pick<Logger, 'info'>;
  newId: () => string;
  now: () => number;
  /** The state directory's credential fingerprints, that the token an entry came with is checked by (`null`: none could be read). */
  fingerprints: Fingerprints | null;
}

/** How one replay runs. */
export interface ReplayOptions {
  /** Run even when its delivery id is already taken (it then takes it), or when the token it came with cannot be checked. */
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
export async function replayEntry(
  parts: ReplayParts,
  entry: LedgerEntry,
  options: ReplayOptions = {},
): Promise<ReplayOutcome> {
  const { config } = parts;
  const credentials: ReplayCredentials = { fingerprints: parts.fingerprints, force: options.force === true };
  const problem = replayProblem(entry, config, credentials);
  if (problem !== null) {
    throw new HttpError(409, ErrorCode.NotReplayable, `entry ${entry.id} cannot be replayed: ${problem}`);
  }
  const started = parts.now();
  const id = parts.newId();
  const input = replayInput(entry, id, config, credentials, options.root);
  // The entry's id is chosen now: the journal line of the replay's effects names it.
  const entryId = parts.record === null ? undefined : randomHex(12);
  const { settle } = options;
  if (settle !== undefined) {
    input.settle = (status) =>
      settle({
        ...(entryId === undefined ? {} : { entry: entryId }),
        requestId: id,
        status,
        time: new Date().toISOString(),
      });
  }
  const answer = await parts.path(input);
  const trace = answer.trace ?? input.trace;
  const durationMs = Math.round((parts.now() - started) * 10) / 10;
  const code = typeof answer.body['code'] === 'string' ? answer.body['code'] : undefined;
  const made = parts.record?.({
    requestId: id,
    method: 'POST',
    path: entry.path,
    query: input.query,
    rawQuery: input.rawQuery,
    headers: input.headers,
    client: input.client,
    answer,
    trace,
    durationMs,
    ...(entryId === undefined ? {} : { entryId }),
  });
  const root = trace.replayOf ?? entry.id;
  parts.log.info('replay', {
    id,
    replayOf: root,
    hook: entry.hook,
    status: answer.status,
    ...(code === undefined ? {} : { code }),
    ...(made === undefined ? {} : { entry: made }),
  });
  const outcome: ReplayOutcome = { replayOf: root, requestId: id, status: answer.status };
  if (made !== undefined) outcome.entry = made;
  if (code !== undefined) outcome.code = code;
  if (answer.status >= 400 && typeof answer.body['error'] === 'string') outcome.error = answer.body['error'];
  if (trace.became !== undefined) outcome.became = trace.became;
  return outcome;
}
