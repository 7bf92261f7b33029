// Test helper: what every model provider promises, registered once by each provider's spec (as
// srvx's test/_tests.ts is run by each runtime's spec through addTests). The HTTP providers share
// one skeleton (lib/runtime/providers/_http.ts), so their specs keep only what differs: the path,
// the headers, the body shape and what an answer or a failure status means.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test, type TestContext } from 'node:test';
import type { Provider, TurnRequest } from '../lib/runtime/providers/provider.ts';
import { closedUrl, fake, type Handler } from './_fake-server.ts';
import { turnRequest } from './_turn.ts';

/** One provider against a fake of what it calls, for one test. */
export interface ProviderRig {
  provider: Provider;
  /** How many calls it has made (an HTTP request, a process started). */
  calls(): number | Promise<number>;
  /** From now on a turn gets no answer; resolves once one has been asked. */
  hang(): Promise<void>;
}

/** Registers what every provider promises for `label` (`createOpenAiProvider()`). */
export function addProviderTests(label: string, rig: (t: TestContext) => Promise<ProviderRig>): void {
  test(`${label} answers aborted, not to be retried, when the signal fires before the answer, and calls nothing for a signal already aborted`, async (t) => {
    const { provider, calls, hang } = await rig(t);
    const controller = new AbortController();
    const asked = hang();
    const pending = provider.complete(turn({ signal: controller.signal }));
    await asked;
    controller.abort();
    assert.deepEqual(await pending, { ok: false, retryable: false, message: 'aborted' });
    const before = await calls();
    assert.deepEqual(await provider.complete(turn({ signal: AbortSignal.abort() })), {
      ok: false,
      retryable: false,
      message: 'aborted',
    });
    assert.equal(await calls(), before);
  });
}

/** Options every HTTP provider takes. */
export interface HttpProviderOptions {
  baseUrl: string;
  apiKey?: string;
  fetch?: typeof globalThis.fetch;
  now?: () => number;
}

/** What the spec of an HTTP provider says about its API. */
export interface HttpProviderCase {
  make(options: HttpProviderOptions): Provider;
  /** Where on the fake `baseUrl` points (`/v1`). */
  path?: string;
  key: string;
  /** The API's error answer saying `text`, and the failure message the provider makes of it. */
  refuse(res: ServerResponse, status: number, text: string, headers?: Record<string, string>): void;
  says(status: number, text: string): string;
}

/** Registers the contract of an HTTP provider: {@link addProviderTests}, then what its calls promise. */
export function addHttpProviderTests(label: string, c: HttpProviderCase): void {
  // A fake API whose every answer a test scripts; past the script it takes a turn and never answers.
  const rig = async (t: TestContext, options: Omit<HttpProviderOptions, 'baseUrl'> = { apiKey: c.key }) => {
    const scripted: Handler[] = [];
    let asked = () => {};
    const server = await fake(t, (req, res) => (scripted.shift() ?? asked)(req, res));
    const hang = () => new Promise<void>((resolve) => (asked = resolve));
    const provider = c.make({ baseUrl: `${server.url}${c.path ?? ''}`, ...options });
    return {
      provider,
      calls: () => server.seen.length,
      hang,
      next: (...answers: Handler[]) => scripted.push(...answers),
    };
  };
  addProviderTests(label, rig);

  test(`${label} answers aborted when the answer stalls after its headers`, async (t) => {
    const { provider, next } = await rig(t);
    // Aborted once the headers and the start of the body are on their way, not on a clock.
    const stalled = new AbortController();
    next((_req, res) =>
      void res.writeHead(200, { 'content-type': 'application/json' }).write('{"choices": [', () => stalled.abort())
    );
    assert.deepEqual(await provider.complete(turn({ signal: stalled.signal })), {
      ok: false,
      retryable: false,
      message: 'aborted',
    });
  });

  test(`${label} refuses an answer larger than the cap without reading it, and does not retry`, async (t) => {
    const { provider, next } = await rig(t);
    next((_req, res) =>
      void res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(1024 ** 3) }).write('{')
    );
    assert.deepEqual(await provider.complete(turn()), {
      ok: false,
      retryable: false,
      message: 'Answer refused: the answer (HTTP 200) is larger than 8388608 bytes; it was not read past them',
    });
  });

  test(`${label} fails a 4xx permanently in the API's words, with the key masked and the message on one line of at most 300 characters`, async (t) => {
    const { provider, next } = await rig(t);
    const long = `Invalid value:\n${'x'.repeat(1000)}`;
    next(
      (_req, res) => c.refuse(res, 401, `Incorrect API key provided: ${c.key}.`),
      (_req, res) => c.refuse(res, 400, long),
    );
    assert.deepEqual(await provider.complete(turn()), {
      ok: false,
      retryable: false,
      message: c.says(401, 'Incorrect API key provided: [redacted].'),
    });
    assert.deepEqual(await provider.complete(turn()), {
      ok: false,
      retryable: false,
      message: `${c.says(400, long.replace('\n', ' ')).slice(0, 299)}…`,
    });
  });

  test(`${label} words an answer that is not JSON by its text or else its status, retrying a 5xx`, async (t) => {
    const { provider, next } = await rig(t);
    next(
      (_req, res) => void res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad   Gateway</h1>\n'),
      (_req, res) => void res.writeHead(503).end(),
      (_req, res) => void res.writeHead(400).end(),
    );
    assert.deepEqual(await provider.complete(turn()), {
      ok: false,
      retryable: true,
      message: 'HTTP 502: <h1>Bad Gateway</h1>',
    });
    assert.deepEqual(await provider.complete(turn()), {
      ok: false,
      retryable: true,
      message: 'HTTP 503: Service Unavailable',
    });
    assert.deepEqual(await provider.complete(turn()), {
      ok: false,
      retryable: false,
      message: 'HTTP 400: Bad Request',
    });
  });

  test(`${label} retries a 5xx after retry-after-ms over Retry-After, or an HTTP-date Retry-After read on its clock, unless x-should-retry is false`, async (t) => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    const { provider, next } = await rig(t, { apiKey: c.key, now: () => now });
    next(
      (_req, res) => c.refuse(res, 503, 'Overloaded', { 'retry-after-ms': '250', 'retry-after': '9' }),
      (_req, res) => c.refuse(res, 503, 'Overloaded', { 'retry-after': new Date(now + 5000).toUTCString() }),
      (_req, res) => c.refuse(res, 500, 'The server had an error', { 'x-should-retry': 'false' }),
    );
    assert.deepEqual(await provider.complete(turn()), {
      ok: false,
      retryable: true,
      message: c.says(503, 'Overloaded'),
      retryAfterMs: 250,
    });
    assert.deepEqual(await provider.complete(turn()), {
      ok: false,
      retryable: true,
      message: c.says(503, 'Overloaded'),
      retryAfterMs: 5000,
    });
    assert.deepEqual(await provider.complete(turn()), {
      ok: false,
      retryable: false,
      message: c.says(500, 'The server had an error'),
    });
  });

  test(`${label} retries a call that reached nothing, in the words of the error, with the key masked`, async () => {
    const refused = await c.make({ baseUrl: `${await closedUrl()}${c.path ?? ''}`, apiKey: c.key }).complete(turn());
    assert.ok(
      !refused.ok && refused.retryable && refused.message.startsWith('Connection failed: '),
      JSON.stringify(refused),
    );
    const failing = (error: unknown) =>
      c.make({ baseUrl: 'http://127.0.0.1:9', apiKey: c.key, fetch: () => Promise.reject(error) }).complete(turn());
    assert.deepEqual(await failing(new TypeError(`fetch failed for ${c.key}`)), {
      ok: false,
      retryable: true,
      message: 'Connection failed: fetch failed for [redacted]',
    });
    assert.deepEqual(await failing('boom'), { ok: false, retryable: true, message: 'Connection failed: boom' });
    assert.deepEqual(await failing(new Error('')), { ok: false, retryable: true, message: 'Connection failed: Error' });
  });

  test(`${label} refuses a base URL that is not an http(s) URL`, () => {
    for (
      const [baseUrl, reason] of [
        ['not a url', '"not a url" is not a URL'],
        ['', '"" is not a URL'],
        ['file:///tmp/x', 'file: is not http: or https:'],
        ['ftp://127.0.0.1', 'ftp: is not http: or https:'],
      ]
    ) {
      assert.throws(() => c.make({ baseUrl: baseUrl! }), {
        name: 'TypeError',
        message: `Cannot use provider base URL: ${reason}`,
      });
    }
  });
}

function turn(overrides: Partial<TurnRequest> = {}): TurnRequest {
  return turnRequest('model-test', overrides);
}
