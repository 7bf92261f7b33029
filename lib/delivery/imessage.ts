import { spawn as nodeSpawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { parseRetryAfter, type Attempt } from '../retry.ts';
import type { Adapter, Sent } from './adapter.ts';

export interface BlueBubblesOptions {
  /** The BlueBubbles server's base URL, e.g. `http://192.168.1.10:1234`. */
  serverUrl: string;
  /** The server password; it travels in the query string, as the server requires. */
  password: string;
  /** `apple-script` works everywhere; `private-api` needs the server's Private API helper. */
  method?: 'apple-script' | 'private-api';
  fetch?: typeof fetch;
}

export interface ImsgOptions {
  /** The `imsg` executable, looked up on PATH unless it is a path. */
  command?: string;
  spawn?: typeof nodeSpawn;
}

const _E164 = /^\+[1-9]\d{6,14}$/;
const _EMAIL = /^[^\s@;]+@[^\s@;]+\.[^\s@;]+$/;
// `<service>;-;<address>` for one person, `<service>;+;chat<digits>` for a group.
const _CHAT_GUID = /^(?:iMessage|SMS|RCS|any);[-+];\S+$/;
// iMessage documents no limit; this keeps one bubble readable and far below any argv limit.
const _MAX_LENGTH = 4000;
// What a failed `imsg` may print that we keep: enough for its error line, not a flood.
const _MAX_OUTPUT = 64 * 1024;

// Both ways to Messages.app take the same recipients: an E.164 phone, an email, or a chat guid.
function _checkRecipient(to: string): string | null {
  return _E164.test(to) || _EMAIL.test(to) || _CHAT_GUID.test(to)
    ? null
    : `Invalid iMessage recipient: expected a phone number in E.164, an email address or a chat guid such as iMessage;+;chat123456789, got ${_show(to)}`;
}

/**
 * iMessage through a BlueBubbles server's REST API. A phone or email becomes the 1:1 chat guid
 * `iMessage;-;<address>`; a chat guid is used as it is. The message id is BlueBubbles' message guid.
 */
export function createBlueBubblesAdapter(options: BlueBubblesOptions): Adapter {
  const { serverUrl, password, method = 'apple-script', fetch: fetchImpl = fetch } = options;
  if (!_isHttpUrl(serverUrl)) throw new TypeError(`Invalid option serverUrl: must be the http(s) URL of the BlueBubbles server, got ${_show(serverUrl)}`);
  if (typeof password !== 'string' || password === '') throw new TypeError('Invalid option password: must be a non-empty string');
  if (method !== 'apple-script' && method !== 'private-api') throw new TypeError(`Invalid option method: must be apple-script or private-api, got ${_show(method)}`);
  if (typeof fetchImpl !== 'function') throw new TypeError('Invalid option fetch: must be a function');
  const endpoint = new URL(`${serverUrl.replace(/\/+$/, '')}/api/v1/message/text`);
  endpoint.searchParams.set('password', password);
  // Scrubbed before clipped, so a cut can never leave half a password behind.
  const tell = (text: string) => _clip(_scrub(text, password));

  const send = async (to: string, text: string, signal?: AbortSignal): Promise<Attempt<Sent>> => {
    const problem = _checkRecipient(to);
    if (problem !== null) return { ok: false, retryable: false, message: problem };
    const chatGuid = _CHAT_GUID.test(to) ? to : `iMessage;-;${to}`;
    // A fresh tempGuid per attempt: the server refuses one it still has queued.
    const payload = { chatGuid, tempGuid: `temp-${randomUUID()}`, message: text, method };
    let status: number;
    let retryAfter: string | null;
    let body: string;
    try {
      const response = await fetchImpl(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(payload),
        ...(signal === undefined ? {} : { signal }),
      });
      status = response.status;
      retryAfter = response.headers.get('retry-after');
      body = await response.text();
    } catch (error) {
      return { ok: false, retryable: true, message: tell(`Cannot reach the BlueBubbles server: ${_reason(error)}`) };
    }
    const reply = _object(_parse(body));
    if (status >= 200 && status < 300) {
      const guid = _object(reply?.['data'])?.['guid'];
      return { ok: true, value: { messageIds: typeof guid === 'string' ? [guid] : [] } };
    }
    const wait = parseRetryAfter(retryAfter);
    return {
      ok: false,
      retryable: status === 429 || status >= 500,
      message: tell(reply === null ? `BlueBubbles answered HTTP ${status}${_detail(body)}` : _describe(status, reply)),
      ...(wait === undefined ? {} : { retryAfterMs: wait }),
    };
  };

  return { channel: 'imessage', maxLength: _MAX_LENGTH, checkRecipient: _checkRecipient, send };
}

/**
 * iMessage through the `imsg` CLI on the Mac that runs Messages.app:
 * `imsg send --to=<phone|email> | --chat-guid=<guid>, --text=<text> --json`. imsg reports no
 * message id, so a success carries none.
 */
export function createImsgAdapter(options: ImsgOptions = {}): Adapter {
  const { command = 'imsg', spawn = nodeSpawn } = options;
  if (typeof command !== 'string' || command === '') throw new TypeError('Invalid option command: must be a non-empty string');
  if (typeof spawn !== 'function') throw new TypeError('Invalid option spawn: must be a function');

  const send = async (to: string, text: string, signal?: AbortSignal): Promise<Attempt<Sent>> => {
    const problem = _checkRecipient(to);
    if (problem !== null) return { ok: false, retryable: false, message: problem };
    // `=` keeps each value attached to its flag: imsg's parser would read a text starting
    // with `-` (a Markdown list, say) as another option.
    const target = _CHAT_GUID.test(to) ? `--chat-guid=${to}` : `--to=${to}`;
    const run = await _run(spawn, command, ['send', target, `--text=${text}`, '--json'], signal);
    if (run.error !== undefined) return { ok: false, retryable: run.aborted, message: _clip(`Cannot run ${command}: ${run.error.message}`) };
    if (run.code !== 0) {
      const said = run.stderr.trim() || run.stdout.trim();
      return { ok: false, retryable: false, message: _clip(said === '' ? `${command} send exited with ${run.code ?? run.signal}` : said) };
    }
    const last = run.stdout.trim().split('\n').pop() ?? '';
    if (_object(_parse(last))?.['status'] === 'sent') return { ok: true, value: { messageIds: [] } };
    return { ok: false, retryable: false, message: _clip(`${command} send did not report the message sent${_detail(run.stdout)}`) };
  };

  return { channel: 'imessage', maxLength: _MAX_LENGTH, checkRecipient: _checkRecipient, send };
}

interface _Run {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  error?: Error;
  aborted: boolean;
}

function _run(spawn: typeof nodeSpawn, command: string, args: string[], signal: AbortSignal | undefined): Promise<_Run> {
  return new Promise((resolve) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outSize = 0;
    let errSize = 0;
    let settled = false;
    const finish = (run: Omit<_Run, 'stdout' | 'stderr' | 'aborted'>) => {
      if (settled) return;
      settled = true;
      resolve({ ...run, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), aborted: signal?.aborted === true });
    };
    let child: ReturnType<typeof nodeSpawn>;
    try {
      child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true, ...(signal === undefined ? {} : { signal }) });
    } catch (error) {
      return finish({ code: null, signal: null, error: error instanceof Error ? error : new Error(String(error)) });
    }
    child.stdout?.on('data', (chunk: Buffer) => {
      if (outSize < _MAX_OUTPUT) out.push(chunk);
      outSize += chunk.length;
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      if (errSize < _MAX_OUTPUT) err.push(chunk);
      errSize += chunk.length;
    });
    child.on('error', (error) => finish({ code: null, signal: null, error }));
    child.on('close', (code, signalName) => finish({ code, signal: signalName }));
  });
}

// BlueBubbles errors: {status, message, error: {type, message}}; the inner message is the useful one.
function _describe(status: number, reply: Record<string, unknown>): string {
  const error = _object(reply['error']);
  const type = typeof error?.['type'] === 'string' ? error['type'] : typeof reply['message'] === 'string' ? reply['message'] : 'Error';
  const inner = typeof error?.['message'] === 'string' ? error['message'] : typeof error?.['error'] === 'string' ? error['error'] : undefined;
  const outer = typeof reply['message'] === 'string' && reply['message'] !== type ? reply['message'] : undefined;
  const said = [outer, inner].filter((part) => part !== undefined && part !== '').join(': ');
  return `BlueBubbles answered ${status} ${type}${said === '' ? '' : `: ${said}`}`;
}

function _scrub(text: string, secret: string): string {
  let out = text;
  for (const form of new Set([secret, encodeURIComponent(secret), new URLSearchParams({ p: secret }).toString().slice(2)])) {
    out = out.split(form).join('[redacted]');
  }
  return out;
}

// A value as a message shows it: quoted, and short.
function _show(value: unknown): string {
  const text = typeof value === 'string' ? value : String(value);
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

function _isHttpUrl(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    const { protocol } = new URL(value);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

function _parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function _object(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

function _detail(body: string): string {
  const text = body.trim();
  return text === '' ? '' : `: ${text}`;
}

function _clip(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 400 ? `${flat.slice(0, 400)}…` : flat;
}

function _reason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? `${error.message} (${error.cause.message})` : error.message;
}
