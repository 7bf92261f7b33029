// iMessage through BlueBubbles or the imsg CLI.

import { spawn as nodeSpawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { checkUrl, failure, invalidOption, MESSAGE_MAX, parseJson, postJson, retryAfterMs } from './http-call.ts';
import { asObject } from '../object.ts';
import { clipLine, detail, show } from '../text.ts';
import type { Adapter } from './adapter.ts';
import { CHAT_GUID } from '../policy/recipients.ts';
import { checkFetch, platformAdapter, retryableStatus, sent, tellFor } from './_platform.ts';

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

// Both ways to Messages.app: iMessage documents no limit; 4000 keeps one bubble readable and far below any argv limit.
const _IMESSAGE = { channel: 'imessage', name: 'iMessage', maxLength: 4000 } as const;
// What a failed `imsg` may print that we keep: enough for its error line, not a flood.
const _MAX_OUTPUT = 64 * 1024;

/**
 * iMessage through a BlueBubbles server's REST API. A phone or email becomes the 1:1 chat guid
 * `iMessage;-;<address>`; a chat guid is used as it is. The message id is BlueBubbles' message guid.
 */
export function createBlueBubblesAdapter(options: BlueBubblesOptions): Adapter {
  const { serverUrl, password, method = 'apple-script', fetch = globalThis.fetch } = options;
  const base = checkUrl('serverUrl', serverUrl, 'must be the http(s) URL of the BlueBubbles server');
  if (typeof password !== 'string' || password === '') throw invalidOption('password', 'must be a non-empty string');
  if (method !== 'apple-script' && method !== 'private-api') {
    throw invalidOption('method', `must be apple-script or private-api, got ${show(method)}`);
  }
  checkFetch(fetch);
  const endpoint = new URL(`${base}/api/v1/message/text`);
  endpoint.searchParams.set('password', password);
  const tell = tellFor([password]);
  return platformAdapter({
    ..._IMESSAGE,
    service: 'BlueBubbles',
    tell,
    unreachable: 'Cannot reach the BlueBubbles server',
    post(to, text, signal) {
      const chatGuid = CHAT_GUID.test(to) ? to : `iMessage;-;${to}`;
      // A fresh tempGuid per attempt: the server refuses one it still has queued.
      const payload = { chatGuid, tempGuid: `temp-${randomUUID()}`, message: text, method };
      return postJson(endpoint, payload, { fetch, headers: { accept: 'application/json' }, signal });
    },
    answer(reply) {
      const { status } = reply;
      const body = asObject(reply.json);
      if (status >= 200 && status < 300) return sent(asObject(body?.['data'])?.['guid']);
      const message = body === null
        ? `BlueBubbles answered HTTP ${status}${detail(reply.text)}`
        : _describe(status, body);
      return failure(tell(message), retryableStatus(status), retryAfterMs(reply.headers, Date.now()));
    },
  });
}

/**
 * iMessage through the `imsg` CLI on the Mac that runs Messages.app:
 * `imsg send --to=<phone|email> | --chat-guid=<guid>, --text=<text> --json`. imsg reports no
 * message id, so a success carries none.
 */
export function createImsgAdapter(options: ImsgOptions = {}): Adapter {
  const { command = 'imsg', spawn = nodeSpawn } = options;
  if (typeof command !== 'string' || command === '') throw invalidOption('command', 'must be a non-empty string');
  if (typeof spawn !== 'function') throw invalidOption('spawn', 'must be a function');
  const clipped = (message: string) => clipLine(message, MESSAGE_MAX.delivery);
  return platformAdapter({
    ..._IMESSAGE,
    tell: tellFor([]),
    async deliver(to, text, signal) {
      // `=` keeps each value attached to its flag: imsg's parser would read a text starting
      // with `-` (a Markdown list, say) as another option.
      const target = CHAT_GUID.test(to) ? `--chat-guid=${to}` : `--to=${to}`;
      const run = await _run(spawn, command, ['send', target, `--text=${text}`, '--json'], signal);
      // An abort is the caller's stop, worded as every adapter words it (the stopped run's AbortError
      // is not a command that cannot run); neither it nor a command that cannot start is retried. A
      // run that exited 0 before the stop came ended of itself, and is read like any other, as an
      // HTTP adapter reads an answer that arrived before its stop.
      if (run.aborted && run.code !== 0) return failure(`${_IMESSAGE.name} request aborted`, false);
      if (run.error !== undefined) return failure(clipped(`Cannot run ${command}: ${run.error.message}`), false);
      if (run.code !== 0) {
        const said = run.stderr.trim() || run.stdout.trim();
        return failure(clipped(said === '' ? `${command} send exited with ${run.code ?? run.signal}` : said), false);
      }
      const last = run.stdout.trim().split('\n').pop() ?? '';
      if (asObject(parseJson(last))?.['status'] === 'sent') return { ok: true, value: { messageIds: [] } };
      return failure(clipped(`${command} send did not report the message sent${detail(run.stdout)}`), false);
    },
  });
}

interface _Run {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  error?: Error;
  aborted: boolean;
}

function _run(
  spawn: typeof nodeSpawn,
  command: string,
  args: string[],
  signal: AbortSignal | undefined,
): Promise<_Run> {
  return new Promise((resolve) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outSize = 0;
    let errSize = 0;
    let settled = false;
    const finish = (run: Omit<_Run, 'stdout' | 'stderr' | 'aborted'>) => {
      if (settled) return;
      settled = true;
      resolve({
        ...run,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        aborted: signal?.aborted === true,
      });
    };
    let child: ReturnType<typeof nodeSpawn>;
    try {
      child = spawn(command, args, {
        stdio: ['ignore', 'pipe', 'pipe'],
        windowsHide: true,
        ...(signal === undefined ? {} : { signal }),
      });
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
  const error = asObject(reply['error']);
  const type = typeof error?.['type'] === 'string'
    ? error['type']
    : typeof reply['message'] === 'string'
    ? reply['message']
    : 'Error';
  const inner = typeof error?.['message'] === 'string'
    ? error['message']
    : typeof error?.['error'] === 'string'
    ? error['error']
    : undefined;
  const outer = typeof reply['message'] === 'string' && reply['message'] !== type ? reply['message'] : undefined;
  const said = [outer, inner].filter((part) => part !== undefined && part !== '').join(': ');
  return `BlueBubbles answered ${status} ${type}${said === '' ? '' : `: ${said}`}`;
}
