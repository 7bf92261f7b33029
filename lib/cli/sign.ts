// The sign command: what a provider would send for a signed hook, printed as curl or sent.

import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Config } from '../config/types.ts';
import { signRequest } from '../guard/signatures/verify.ts';
import type { Signature } from '../guard/signatures/config.ts';
import { post } from '../delivery/http-call.ts';
import { hideUrlCredentials } from '../text.ts';
import { type Command, COMMON } from './command.ts';
import { FAILURE, type Io, USAGE } from './io.ts';
import { loadConfigFor } from './load-config.ts';
import { usageLine } from './usage.ts';

const OPTIONS = {
  ...COMMON,
  hook: { type: 'string' },
  body: { type: 'string' },
  header: { type: 'string', multiple: true },
  id: { type: 'string' },
  send: { type: 'string' },
} as const;

const HELP = `Usage: hooks-ingress sign --hook NAME [options]

Build the request a real sender of the hook's signature scheme would send for a
body: the headers the provider adds, signed with the configured secret (the first
one of a list). Prints it as a curl command line, or with --send posts it and
prints the answer. Exits 0 when it was printed or answered 2xx, 1 otherwise.

Options:
  -c, --config PATH     config file
      --hook NAME       the hook (a mapping's match.path) whose signature is used
      --body FILE|-     the body to sign, from a file or "-" for stdin
                        (default: {} for JSON schemes, empty for twilio)
      --header 'N: V'   one more header to send, such as "X-GitHub-Event: push"
                        (repeatable; filters often read it)
      --id ID           the delivery id (default: a new random one)
      --send URL        post the request to URL, the server's base address
                        (http://127.0.0.1:8789) or the hook's full URL
  -h, --help            show this help
`;

export interface SignFlags {
  config?: string;
  hook?: string;
  body?: string;
  header?: string[];
  id?: string;
  send?: string;
}

// Headers whose value is the shared secret itself: they are sent, never printed.
const SECRET_BEARING = new Set(['x-gitlab-token', 'authorization']);

/** `hooks-ingress sign`: what a provider would send, printed as curl or sent. */
export const sign: Command = {
  options: OPTIONS,
  help: HELP,
  run: (flags, _positionals, io) => signCommand(flags, io),
};

/** What `sign` does, with the clock and standard input injectable. */
export async function signCommand(
  flags: SignFlags,
  io: Io & { stdin?: () => Promise<Buffer> },
  clock: () => number = Date.now,
): Promise<number> {
  if (flags.hook === undefined || flags.hook.trim() === '') {
    io.stderr(usageLine('sign', 'give --hook NAME'));
    return USAGE;
  }
  const config = await loadConfigFor(flags, io);
  if (config === null) return FAILURE;
  const hook = flags.hook.replace(/^\/+|\/+$/g, '');
  const signature = config.hooks.mappings.find((m) => m.match.path === hook && m.signature !== undefined)?.signature;
  if (signature === undefined) {
    io.stderr(`hooks-ingress sign: no mapping with match.path "${hook}" carries a signature\n`);
    return FAILURE;
  }
  const body = await _body(flags.body, signature, io);
  if (body === null) return FAILURE;
  const extra = _headers(flags.header ?? [], io);
  if (extra === null) return USAGE;
  const headers = {
    ...signRequest(signature, body, clock(), flags.id ?? `msg_${randomUUID().replaceAll('-', '')}`),
    ...extra,
  };
  const url = _url(config, hook, flags.send);
  if (flags.send === undefined) {
    io.stdout(`${_curl(url, headers, flags.body, body, io)}\n`);
    return 0;
  }
  // The exact bytes that were signed: a body that is not UTF-8 must not be re-encoded on the way.
  // As every outgoing call: a redirect is not followed, and the answer is read up to its cap.
  const answer = await post(url, new Uint8Array(body), { fetch, headers });
  if (!answer.ok) {
    // fetch refuses a URL with user:password, quoting it: neither copy is printed.
    io.stderr(hideUrlCredentials(`hooks-ingress sign: cannot reach ${url}: ${answer.message}\n`));
    return FAILURE;
  }
  io.stdout(`${answer.status} ${answer.text}\n`);
  return answer.status >= 200 && answer.status < 300 ? 0 : FAILURE;
}

async function _body(
  source: string | undefined,
  signature: Signature,
  io: Io & { stdin?: () => Promise<Buffer> },
): Promise<Buffer | null> {
  if (source === undefined) return Buffer.from(signature.scheme === 'twilio' ? '' : '{}');
  try {
    if (source === '-') return io.stdin === undefined ? await _readStdin() : await io.stdin();
    return await readFile(source);
  } catch (error) {
    io.stderr(`hooks-ingress sign: cannot read ${source}: ${(error as NodeJS.ErrnoException).code ?? String(error)}\n`);
    return null;
  }
}

async function _readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function _headers(lines: readonly string[], io: Io): Record<string, string> | null {
  const out: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, Math.max(0, colon)).trim().toLowerCase();
    if (colon < 1 || !/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name)) {
      io.stderr(usageLine('sign', `--header must be written "Name: value", got ${JSON.stringify(line)}`));
      return null;
    }
    out[name] = line.slice(colon + 1).trim();
  }
  return out;
}

// A bare server address gets the hook's path; a URL with a path is used as given.
function _url(config: Config, hook: string, send: string | undefined): string {
  const base = send ??
    `http://${
      config.gateway.bind.includes(':') ? `[${config.gateway.bind}]` : config.gateway.bind
    }:${config.gateway.port}`;
  const url = new URL(base);
  if (url.pathname === '/' || url.pathname === '') url.pathname = `${config.hooks.path}/${hook}`;
  return url.href;
}

function _curl(url: string, headers: Record<string, string>, source: string | undefined, body: Buffer, io: Io): string {
  const parts = ['curl', '-sS', '-X', 'POST', _quote(url)];
  for (const [name, value] of Object.entries(headers)) {
    if (SECRET_BEARING.has(name)) {
      io.stderr(`hooks-ingress sign: ${name} carries the secret itself, so it is not printed; use --send\n`);
    }
    parts.push('-H', _quote(`${name}: ${SECRET_BEARING.has(name) ? '<secret>' : value}`));
  }
  // The exact bytes were signed: a file is sent as it is, anything else inline.
  parts.push(
    '--data-binary',
    source !== undefined && source !== '-' ? _quote(`@${source}`) : _quote(body.toString('utf8')),
  );
  return parts.join(' ');
}

function _quote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}
