import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { CallTransform } from '../hooks/mappings.ts';
import type { SignatureVerdict } from '../store/ledger-entry.ts';
import type { Route } from '../store/records.ts';
import { createDispatch, type PreviewSink } from './dispatch.ts';
import { parseHookBody } from './hooks-route.ts';
import { signatureVerdict } from './ledger-note.ts';
import { signedPaths } from '../guard/signatures/paths.ts';

// A dry run of a hook request: what it would become under a configuration — the mapping and its
// filter, each transform's result, the rendered text with the placeholders that found nothing, and
// the policy decisions — with nothing committed, queued or logged. `try` and
// `requests replay --dry-run` both run it; the server runs it with its own config and transforms.

/** A request to try: the hook, its headers, its query as received and its body bytes. */
export interface PreviewInput {
  name: string;
  headers: IncomingHttpHeaders;
  rawQuery: string;
  bytes: Buffer;
  /** A stored request whose shared token (`gitlab`, `token`) passed when it arrived: its verdict is on record. */
  verified?: boolean;
  /** Only mappings that name the path may take it (a stored request to the gmail hook). */
  pathOnly?: boolean;
}

/** What a request would become. */
export interface Preview extends Omit<PreviewSink, 'filter'> {
  hook: string;
  /** The answer it would get. */
  status: number;
  code?: string;
  error?: string;
  /** A signed path's verdict over these bytes (with today's secrets; the timestamp's age not held against it). */
  signature?: SignatureVerdict;
  filter?: PreviewSink['filter'];
}

/** What a dry run works with. */
export interface PreviewOptions {
  config: Config;
  transforms: CallTransform;
  /** The last delivery's route, which the `last` channel goes to. */
  lastRoute: () => Route | null;
  clock?: () => number;
}

// A dry run never writes: its store can only say where replies went last.
function _store(lastRoute: () => Route | null) {
  return {
    lastRoute,
    backlog: () => ({ events: 0, bytes: 0 }),
    commit: () => Promise.reject(new Error('Cannot commit: a dry run records nothing')),
  };
}

/** Runs a request through `options.config` without committing anything; every refusal is part of the answer. */
export async function previewHook(options: PreviewOptions, input: PreviewInput): Promise<Preview> {
  const { config } = options;
  const sink: PreviewSink = { transforms: [], actions: [], warnings: [] };
  const preview: Preview = { hook: input.name, status: 0, transforms: sink.transforms, actions: sink.actions, warnings: sink.warnings };
  const signature = signedPaths(config).get(input.name);
  if (signature !== undefined && input.verified === true) {
    preview.signature = { scheme: signature.scheme, ok: true };
  } else if (signature !== undefined) {
    // Checked and reported; the rest is shown as if it had verified, so one try shows every problem.
    const loose = { ...signature, toleranceSeconds: Number.MAX_SAFE_INTEGER };
    preview.signature = signatureVerdict(loose, { headers: input.headers, body: input.bytes, query: input.rawQuery }, (options.clock ?? Date.now)());
  }
  const dispatch = createDispatch({
    config,
    store: _store(options.lastRoute),
    heartbeat: { request() {} },
    log: { info() {}, warn() {}, error() {} },
    newId: randomUUID,
    transforms: options.transforms,
  });
  try {
    if (input.name === '') throw new HttpError(404, ErrorCode.NotFound, 'hook name missing: POST to a path such as /wake or /agent');
    const body = parseHookBody(input.name, input.headers, input.bytes, signature);
    const answer = await dispatch({ id: 'try', name: input.name, body, headers: input.headers, query: new URLSearchParams(input.rawQuery), preview: sink, ...(input.pathOnly === true ? { pathOnly: true } : {}) }, null);
    preview.status = answer.status;
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    Object.assign(preview, { status: error.status, code: error.code, error: error.message });
  }
  if (sink.mapping !== undefined) preview.mapping = sink.mapping;
  if (sink.filter !== undefined) preview.filter = sink.filter;
  if (preview.signature?.ok === false) Object.assign(preview, { status: 401, code: ErrorCode.Unauthorized, error: preview.signature.reason ?? 'invalid signature' });
  return preview;
}
