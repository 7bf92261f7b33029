// `hooks-ingress try`: what a request would become — the mapping and its filter, the transform's
// result, the rendered text (with the placeholders that found nothing), the policy decisions —
// with nothing enqueued. The running server answers it with the config file as it is on disk (the
// CLI sends its text: an edit is tried before it is reloaded), read as a reload would read it, with
// the server's environment and transform sandbox; with none running it is tried here, and says so.

import { readFile } from 'node:fs/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { locateConfig } from '../config/locate.ts';
import { CONTROL_LINE_MAX } from '../control/server.ts';
import type { Preview, PreviewInput } from '../edge/preview.ts';
import { ErrorCode } from '../errors.ts';
import { findEntry } from '../store/ledger/read.ts';
import type { LedgerEntry } from '../model/ledger-entry.ts';
import type { Fingerprints } from '../guard/fingerprint.ts';
import { readLastRoute } from '../store/journal/read.ts';
import { type Command, COMMON, type Flags } from './command.ts';
import { callServer, type ControlAnswer } from '../control/client.ts';
import { clipLine, escapeControls, jsonLine } from '../text.ts';
import { formatPreview } from './preview-text.ts';
import { FAILURE, type Io, messagePrefix, printResult, USAGE } from './io.ts';
import { ledgerOf } from './ledger-access.ts';
import { stateDirFor } from './state-dir.ts';
import { REPLAY_OP, TRY_OP } from '../control/operations.ts';
import { changeLines, VARIABLES_LINE } from './reload.ts';
import type { ReplayResult } from '../server/replay.ts';
import type { TriedConfig, TryArgs } from '../server/try.ts';
import { usageLine } from './usage.ts';

/** `hooks-ingress try`. */
export const tryCommand: Command = {
  options: {
    ...COMMON,
    'state-dir': { type: 'string' },
    body: { type: 'string' },
    header: { type: 'string', multiple: true, short: 'H' },
    request: { type: 'string' },
    json: { type: 'boolean' },
  },
  positionals: true,
  help: `Usage: hooks-ingress try HOOK --body FILE [--header K:V]... [options]
       hooks-ingress try --request ID [options]

Show what a request to HOOK would become, without enqueuing anything: the mapping
that takes it and its filter's verdict, each transform's result or error, the text
or message as the agent would read it (every template placeholder that found
nothing listed as a warning), and the policy decisions (agent, session key, model,
channel). A signed path's signature is checked and reported, without its
timestamp's age. The config file is tried as it is on disk, before any reload:
the running server reads its text as a reload would (with the server's
environment for \${VAR} and its transform sandbox), applies nothing, and says
what in it differs from what the server runs; with none running, it is tried
here with the same sandbox, and the output says so. A stored request (--request)
is tried with what the server runs.

Options:
  -c, --config PATH     config file
      --state-dir DIR   state directory
      --body FILE       the request body (JSON, or a form for form-posting senders)
  -H, --header K:V      a request header (repeatable); content-type defaults to JSON
      --request ID      try a stored request (an entry id or request id of
                        "hooks-ingress requests") instead of HOOK and --body
      --json            print the result as one JSON object
  -h, --help            show this help
`,
  run: (flags, positionals, io) => _try(flags, positionals, io),
};

async function _try(flags: Flags, positionals: string[], io: Io): Promise<number> {
  const request = await _request(flags, positionals, io);
  if (typeof request === 'number') return request;
  const config = 'entry' in request || request.dir === null ? null : await _configText(flags, io);
  // A stored request is tried as its replay would run (`requests replay --dry-run`), so the two agree.
  const answer: ControlAnswer = request.dir === null
    ? { kind: 'no-server', why: '' }
    : 'entry' in request
    ? await callServer(request.dir, REPLAY_OP, { ids: [request.entry.id], dryRun: true })
    : await callServer(request.dir, TRY_OP, {
      ..._args(request.input),
      ...(config === null ? {} : { config: config.text }),
    });
  const tried = await _tried(flags, io, request, answer, config);
  if (typeof tried === 'number') return tried;
  const { preview, where } = tried;
  return printResult(io, messagePrefix(io), () => {
    if (flags.json) io.stdout(jsonLine({ ...preview, triedBy: where }));
    else {io.stdout(`${
        where === 'local'
          ? 'no server is running: tried here, with the config file and the same transform sandbox\n'
          : _triedBy(preview.configFile, config?.path ?? null)
      }${formatPreview(preview)}`);}
    return preview.status >= 400 ? FAILURE : 0;
  });
}

type _Shown = Preview & { configFile?: TriedConfig };

// The preview the server's answer holds, or one made here when no server runs; an exit code once
// the reason there is none is said.
async function _tried(
  flags: Flags,
  io: Io,
  request: _Request,
  answer: ControlAnswer,
  config: { text: string } | null,
): Promise<{ preview: _Shown; where: 'server' | 'local' } | number> {
  const prefix = messagePrefix(io);
  if (answer.kind === 'result') {
    let preview: _Shown | undefined;
    const found = printResult(io, prefix, () => {
      const shown = _serverPreview(io, request, answer.result);
      if ('exit' in shown) return shown.exit;
      preview = shown.preview;
      return 0;
    });
    if (found !== 0) return found;
    const shown: _Shown | undefined = preview;
    return shown === undefined ? FAILURE : { preview: shown, where: 'server' };
  }
  if (answer.kind === 'no-server') {
    const local = await _local(flags, io, request);
    return local === null ? FAILURE : { preview: local, where: 'local' };
  }
  if (answer.kind === 'error' && answer.code === ErrorCode.ControlTooLarge) {
    io.stderr(
      `${prefix}: the config file (${
        config?.text.length ?? 0
      } characters) and the body together are over the ${CONTROL_LINE_MAX} bytes the control channel takes; nothing was sent\n`,
    );
    return FAILURE;
  }
  io.stderr(
    `${prefix}: ${
      answer.kind === 'timeout' ? 'the server did not answer in time' : escapeControls(answer.message, false)
    }\n`,
  );
  return FAILURE;
}

// The preview in the server's result: a try's, or a stored request's dry-run replay; an exit code
// once a refused config file or a failed replay is said. (What the server sent is not trusted to
// be a preview: printing it says so when it is not.)
function _serverPreview(io: Io, request: _Request, result: unknown): { preview: _Shown } | { exit: number } {
  const prefix = messagePrefix(io);
  const refused = 'entry' in request
    ? undefined
    : (result as { configRefused?: { file: string; problems: string[] } }).configRefused;
  if (refused !== undefined) {
    io.stderr(
      `${prefix}: ${
        escapeControls(refused.file, false)
      } has problems; the server tried nothing (a reload would refuse it):\n${
        refused.problems.map((p) => `  ${escapeControls(p, false)}\n`).join('')
      }`,
    );
    return { exit: FAILURE };
  }
  const replayed = 'entry' in request
    ? (result as { results: ReplayResult[] }).results[0]
    : { id: '', ok: true as const, preview: result as Preview };
  if (replayed === undefined || !replayed.ok || !('preview' in replayed)) {
    io.stderr(
      `${prefix}: ${
        escapeControls(
          replayed !== undefined && !replayed.ok ? String(replayed.error) : 'the server gave no preview',
          false,
        )
      }\n`,
    );
    return { exit: FAILURE };
  }
  return { preview: replayed.preview };
}

// The config file's text, sent for the server to try; `null` (said on stderr unless there is no
// file at the default place) when it cannot be read: the server then tries what it runs.
async function _configText(flags: Flags, io: Io): Promise<{ path: string; text: string } | null> {
  const { path, implicit } = locateConfig(flags.config, io.env);
  try {
    return { path, text: await readFile(path, 'utf8') };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (!(implicit && code === 'ENOENT')) {
      io.stderr(
        `${messagePrefix(io)}: warning: cannot read config ${path} (${
          code ?? String(error)
        }): tried with the config the server runs\n`,
      );
    }
    return null;
  }
}

// The head of a server's try: which config it tried, and how that differs from what it runs.
function _triedBy(tried: TriedConfig | undefined, sent: string | null): string {
  if (tried === undefined) return 'tried by the running server, with the config it runs\n';
  const file = escapeControls(tried.file, false);
  const lines = changeLines(tried.changes);
  return (
    'tried by the running server, with the config file as it is on disk\n' +
    (sent !== null && sent !== tried.file
      ? `  the text of ${escapeControls(sent, false)}, read as the server's config file ${file}\n`
      : '') +
    (!tried.differs
      ? '  the same config the server runs\n'
      : `  it differs from what the server runs (not applied; "hooks-ingress reload" applies it)${
        lines.length === 0 ? ' in keys other than hooks, mappings, transforms and secrets' : ':'
      }\n${lines.map((l) => `    ${l}\n`).join('')}`) +
    (tried.needsRestart.length === 0
      ? ''
      : `  not applied until the next start: ${tried.needsRestart.map((k) => escapeControls(k, false)).join(', ')}\n`) +
    `  ${VARIABLES_LINE}\n`
  );
}

/** A request written on the command line, or a stored one. */
type _Request = { input: PreviewInput; dir: string | null } | { entry: LedgerEntry; dir: string };

function _args(input: PreviewInput): TryArgs {
  return {
    hook: input.name,
    headers: input.headers as Record<string, string | string[]>,
    query: input.rawQuery,
    body: input.bytes.toString('base64'),
  };
}

// The request to try: HOOK, --body and --header, or a stored one (--request).
async function _request(flags: Flags, positionals: string[], io: Io): Promise<_Request | number> {
  if (flags.request !== undefined) {
    if (positionals.length > 0 || flags.body !== undefined || flags.header !== undefined) {
      io.stderr(usageLine('try', '--request takes no HOOK, --body or --header (the stored request has them)'));
      return USAGE;
    }
    const ledger = await ledgerOf(flags, io);
    if (ledger === null) return FAILURE;
    const entries = await ledger.read();
    if (entries === null) return FAILURE;
    const found = findEntry(entries, flags.request);
    if (!found.ok) {
      io.stderr(`${messagePrefix(io)}: ${escapeControls(found.error, false)}\n`);
      return FAILURE;
    }
    return { entry: found.entry, dir: ledger.dir };
  }
  const [hook, ...rest] = positionals;
  if (hook === undefined || rest.length > 0 || flags.body === undefined) {
    io.stderr(
      usageLine(
        'try',
        hook === undefined
          ? 'name the HOOK to try (or give --request ID)'
          : rest.length > 0
          ? `unexpected argument "${rest[0]}"`
          : '--body FILE is required',
      ),
    );
    return USAGE;
  }
  const headers: IncomingHttpHeaders = { 'content-type': 'application/json' };
  for (const line of flags.header ?? []) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    if (colon < 1 || !/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name)) {
      io.stderr(usageLine('try', `--header must be NAME:VALUE, got "${clipLine(line, 60)}"`));
      return USAGE;
    }
    headers[name] = line.slice(colon + 1).trim();
  }
  let bytes: Buffer;
  try {
    bytes = await readFile(flags.body);
  } catch (error) {
    io.stderr(
      `${messagePrefix(io)}: cannot read --body ${flags.body}: ${
        (error as NodeJS.ErrnoException).code ?? String(error)
      }\n`,
    );
    return FAILURE;
  }
  const dir = await stateDirFor(flags, io);
  if (dir === null) return FAILURE;
  return { input: { name: hook.replace(/^\/+|\/+$/g, ''), headers, rawQuery: '', bytes }, dir };
}

// No server: the config loaded here, its transforms in the same sandbox, the last route from the
// journal. Loaded only on this path: with a server running, try reads the state directory alone.
async function _local(flags: Flags, io: Io, request: _Request): Promise<Preview | null> {
  const [{ loadConfigFor }, { replayPreview, replayProblem }, { previewHook }, { TransformReloader }] = await Promise
    .all([
      import('./load-config.ts'),
      import('../edge/replay.ts'),
      import('../edge/preview.ts'),
      import('../hooks/transforms/reloader.ts'),
    ]);
  const config = await loadConfigFor(flags, io, { transforms: true });
  if (config === null) return null;
  let input: PreviewInput;
  if ('entry' in request) {
    // The token it came with is checked as a replay checks it, by the state directory's key (read, never made here).
    const credentials = { fingerprints: await _fingerprints(request.dir) };
    const problem = replayProblem(request.entry, config, credentials);
    if (problem !== null) {
      io.stderr(`${messagePrefix(io)}: entry ${request.entry.id} cannot be tried: ${escapeControls(problem, false)}\n`);
      return null;
    }
    input = replayPreview(request.entry, config, credentials);
  } else {
    input = request.input;
  }
  const transforms = new TransformReloader({ info() {}, warn() {}, error() {} });
  transforms.configure(config);
  try {
    const lastRoute = request.dir === null ? null : await readLastRoute(request.dir).catch(() => null);
    return await previewHook({ config, transforms: transforms.call, lastRoute: () => lastRoute }, input);
  } finally {
    await transforms.close();
  }
}

// The state directory's fingerprints, or `null` when its key cannot be read (the replay's reason says so).
async function _fingerprints(dir: string): Promise<Fingerprints | null> {
  const [{ openCredentialKey }, { fingerprints }] = await Promise.all([
    import('../store/state/credential-key.ts'),
    import('../guard/fingerprint.ts'),
  ]);
  const key = await openCredentialKey(dir, { make: false });
  return key.ok ? fingerprints(key.key) : null;
}
