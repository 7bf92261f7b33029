// Test helper: what every chat adapter promises, registered once by each adapter's spec (as srvx's
// test/_tests.ts is run by each runtime's spec through addTests). The skeleton the adapters share
// (lib/delivery/_platform.ts) makes these promises for all of them, so a platform's spec keeps only
// what its platform does differently: the endpoint, the body shape and what an answer means.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test, type TestContext } from 'node:test';
import type { Adapter } from '../lib/delivery/adapter.ts';
import { closedUrl, fake, type Handler, type Received } from './_fake-server.ts';

/** One platform's adapter against a fake of the platform, for one test. */
export interface Rig {
  adapter: Adapter;
  /** How many calls the platform has had (an HTTP request, a command run). */
  calls(): number | Promise<number>;
  /** From now on a message reaches the platform and gets no answer; resolves once one has arrived. */
  hang(): Promise<void>;
}

/** What every adapter's spec says about its platform. */
export interface AdapterCase {
  /** The platform's name in a refused text or recipient (`Telegram`, `iMessage`). */
  name: string;
  channel: string;
  maxLength: number;
  /** Recipients the platform reaches, some it cannot, and what a refusal says it expected. */
  recipients: { good: readonly string[]; bad: readonly string[]; expected: string };
  /** What an abort is answered with. */
  aborted: string;
  rig(t: TestContext): Promise<Rig>;
}

/** Registers the contract of every adapter for `label` (`telegram`, `imsgAdapter`). */
export function addAdapterTests(label: string, c: AdapterCase): void {
  const [to = '', bad = ''] = [c.recipients.good[0], c.recipients.bad[0]];

  test(`${label} names its channel, ${c.channel}, and its limit of ${c.maxLength} characters`, async (t) => {
    const { adapter } = await c.rig(t);
    assert.equal(adapter.channel, c.channel);
    assert.equal(adapter.maxLength, c.maxLength);
  });

  test(`${label}.checkRecipient() accepts what ${c.name} reaches and refuses anything else with the reason and the value`, async (t) => {
    const { adapter } = await c.rig(t);
    for (const good of c.recipients.good) assert.equal(adapter.checkRecipient(good), null, good);
    const refusal = (got: string) => `Invalid ${c.name} recipient: expected ${c.recipients.expected}, got ${got}`;
    for (const wrong of c.recipients.bad) {
      assert.equal(adapter.checkRecipient(wrong), refusal(JSON.stringify(wrong)), wrong);
    }
    assert.equal(adapter.checkRecipient('x'.repeat(500)), refusal(`"${'x'.repeat(63)}…`));
  });

  test(`${label}.send() throws a RangeError for empty text or text over its limit (the caller chunks), before it calls anything`, async (t) => {
    const rig = await c.rig(t);
    for (const empty of ['', '  ', ' \n ']) {
      await assert.rejects(rig.adapter.send(to, empty), {
        name: 'RangeError',
        message: 'Cannot send text: it is empty',
      });
    }
    await assert.rejects(rig.adapter.send(to, 'x'.repeat(c.maxLength + 1)), {
      name: 'RangeError',
      message: `Cannot send text: ${c.maxLength + 1} characters exceed the ${c.name} limit of ${c.maxLength}`,
    });
    assert.equal(await rig.calls(), 0);
  });

  test(`${label}.send() refuses a malformed recipient without calling anything, and does not retry`, async (t) => {
    const rig = await c.rig(t);
    assert.deepEqual(await rig.adapter.send(bad, 'hi'), {
      ok: false,
      retryable: false,
      message: rig.adapter.checkRecipient(bad),
    });
    assert.equal(await rig.calls(), 0);
  });

  test(`${label}.send() answers an abort, while the platform has not answered or before it starts, as a failure that is not retried`, async (t) => {
    const rig = await c.rig(t);
    const controller = new AbortController();
    const arrived = rig.hang();
    const pending = rig.adapter.send(to, 'hi', controller.signal);
    await arrived;
    controller.abort();
    assert.deepEqual(await pending, { ok: false, retryable: false, message: c.aborted });
    assert.deepEqual(await rig.adapter.send(to, 'hi', AbortSignal.abort()), {
      ok: false,
      retryable: false,
      message: c.aborted,
    });
  });
}

/** What the spec of an adapter that speaks HTTP says about its platform. */
export interface HttpAdapterCase extends Omit<AdapterCase, 'rig' | 'aborted'> {
  /** Who answers, where it differs from `name` (BlueBubbles serves iMessage). */
  service?: string;
  /** The adapter with `base` as its URL option, and `fetch` in place of the global one when given. */
  make(base: string, fetch?: typeof globalThis.fetch): Adapter;
  /** The URL option `make` sets, and its rule where it is not `must be an http(s) URL`. */
  url: { option: string; rule?: string };
  /** Where on the fake `base` points (`/api/v10`). */
  path?: string;
  /** A fresh fake of the platform: it answers every call the contract does not script. */
  platform(): Handler;
  /** Whether a call sends a message (Teams asks for a token first); every call does by default. */
  isMessage?(req: Received): boolean;
  /** The platform's error answer saying `text`, and the failure message the adapter makes of it. */
  refuse(res: ServerResponse, status: number, text: string, headers?: Record<string, string>): void;
  says(status: number, text: string): string;
  /** How the message of a call that reached nothing starts (`Telegram request failed: `). */
  unreachable: string;
  /** The credential the adapter sends, and what it becomes in a message. */
  secret?: { value: string; mask: string };
  /** How long a message quoting a long answer is; MESSAGE_MAX.delivery by default. */
  clippedTo?: number;
}

/** An HTTP adapter's rig: the fake's origin and what it saw, and the answer to the next message. */
export interface HttpRig extends Rig {
  url: string;
  seen: Received[];
  /** Answers the next message with `answer` instead of as the platform would. */
  next(answer: Handler): void;
}

/** Registers the contract of an adapter that speaks HTTP: {@link addAdapterTests}, then what every HTTP call promises. */
export function addHttpAdapterTests(label: string, c: HttpAdapterCase): void {
  const service = c.service ?? c.name;
  const to = c.recipients.good[0] ?? '';
  const secret = c.secret;
  const rig = async (t: TestContext): Promise<HttpRig> => {
    const scripted: Handler[] = [];
    const platform = c.platform();
    const server = await fake(t, (req, res) => {
      const script = (c.isMessage?.(req) ?? true) ? scripted.shift() : undefined;
      (script ?? platform)(req, res);
    });
    const hang = () => new Promise<void>((arrived) => scripted.push(() => arrived()));
    return {
      url: server.url,
      seen: server.seen,
      adapter: c.make(`${server.url}${c.path ?? ''}`),
      calls: () => server.seen.length,
      hang,
      next: (answer) => scripted.push(answer),
    };
  };
  addAdapterTests(label, { ...c, aborted: `${service} request aborted`, rig });
  // A message made of what a platform said holds no secret: not as it is, URL-encoded, nor its first or last eight characters.
  const assertMasked = (message: string) => {
    if (secret === undefined) return;
    for (
      const form of [secret.value, encodeURIComponent(secret.value), secret.value.slice(0, 8), secret.value.slice(-8)]
    ) assert.ok(!message.includes(form), message);
  };

  test(`${label}: a fetch that is not a function and a ${c.url.option} that is not an http(s) URL are refused, naming the option`, () => {
    assert.throws(() => c.make('http://127.0.0.1:9', 'fetch' as unknown as typeof fetch), {
      name: 'TypeError',
      message: 'Invalid option fetch: must be a function',
    });
    assert.throws(() => c.make('not a url'), (error: Error) => {
      assert.ok(error instanceof TypeError);
      assert.equal(
        error.message,
        `Invalid option ${c.url.option}: ${c.url.rule ?? 'must be an http(s) URL'}, got "not a url"`,
      );
      return true;
    });
  });

  test(`${label}.send() fails on a redirect without following it, and does not retry`, async (t) => {
    const { adapter, url, seen, next } = await rig(t);
    next((_req, res) => void res.writeHead(302, { location: `${url}/elsewhere` }).end('moved'));
    const sent = await adapter.send(to, 'hi');
    assert.equal(sent.ok || sent.retryable, false);
    assert.ok(!seen.some((req) => req.url === '/elsewhere'));
  });

  test(`${label}.send() refuses an answer larger than the cap without reading it, and does not retry`, async (t) => {
    const { adapter, next } = await rig(t);
    next((_req, res) =>
      void res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(1024 ** 3) }).write('{')
    );
    assert.deepEqual(await adapter.send(to, 'hi'), {
      ok: false,
      retryable: false,
      message:
        `${service} answer refused: the answer (HTTP 200) is larger than 8388608 bytes; it was not read past them`,
    });
  });

  test(`${label}.send() says what ${c.name} refused in its own words and does not retry it; it retries a 5xx, and a 429 after its Retry-After`, async (t) => {
    const { adapter, next } = await rig(t);
    next((_req, res) => c.refuse(res, 400, 'Bad Request: the text is odd'));
    next((_req, res) => c.refuse(res, 503, 'Down for maintenance'));
    next((_req, res) => c.refuse(res, 429, 'Too many requests', { 'retry-after': '2' }));
    assert.deepEqual(await adapter.send(to, 'a'), {
      ok: false,
      retryable: false,
      message: c.says(400, 'Bad Request: the text is odd'),
    });
    assert.deepEqual(await adapter.send(to, 'b'), {
      ok: false,
      retryable: true,
      message: c.says(503, 'Down for maintenance'),
    });
    assert.deepEqual(await adapter.send(to, 'c'), {
      ok: false,
      retryable: true,
      message: c.says(429, 'Too many requests'),
      retryAfterMs: 2000,
    });
  });

  test(`${label}.send() puts a long answer on one line and clips it after masking the secret, never leaving part of it`, async (t) => {
    const { adapter, next } = await rig(t);
    const value = secret?.value ?? '';
    next((_req, res) => c.refuse(res, 400, `Bad:\n  ${'x'.repeat(380)}${value}${'y'.repeat(500)}`));
    const sent = await adapter.send(to, 'hi');
    assert.ok(!sent.ok);
    assert.ok(sent.message.endsWith('…') && !sent.message.includes('\n'), sent.message);
    assert.equal(sent.message.length, c.clippedTo ?? 401);
    assertMasked(sent.message);
  });

  if (secret !== undefined) {
    test(`${label}.send() masks the secret in an answer that echoes it, as it is or URL-encoded`, async (t) => {
      const { adapter, next } = await rig(t);
      next((_req, res) => c.refuse(res, 403, `refused ${secret.value}, encoded ${encodeURIComponent(secret.value)}`));
      assert.deepEqual(await adapter.send(to, 'hi'), {
        ok: false,
        retryable: false,
        message: c.says(403, `refused ${secret.mask}, encoded ${secret.mask}`),
      });
    });
  }

  test(`${label}.send() retries when a call reaches nothing, and masks the secret in what the error quotes`, async () => {
    const refused = await c.make(`${await closedUrl()}${c.path ?? ''}`).send(to, 'hi');
    assert.ok(!refused.ok && refused.retryable && refused.message.startsWith(c.unreachable), JSON.stringify(refused));
    assertMasked(refused.message);
    // A fetch error that quotes the whole request: where it went, its headers and its body.
    const quoting = c.make('http://127.0.0.1:9', async (input, init) => {
      throw new TypeError(`error sending request for url (${String(input)})`, {
        cause: new Error(`headers ${JSON.stringify(init?.headers)}, body ${String(init?.body)}`),
      });
    });
    const quoted = await quoting.send(to, 'hi');
    assert.ok(
      !quoted.ok && quoted.retryable &&
        quoted.message.startsWith(`${c.unreachable}error sending request for url (http://127.0.0.1:9`),
      JSON.stringify(quoted),
    );
    assertMasked(quoted.message);
    if (secret !== undefined) assert.ok(quoted.message.includes(secret.mask), quoted.message);
    const odd = c.make('http://127.0.0.1:9', () => Promise.reject('socket hang up'));
    assert.deepEqual(await odd.send(to, 'hi'), {
      ok: false,
      retryable: true,
      message: `${c.unreachable}socket hang up`,
    });
  });
}
