import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { defer } from './_cleanup.ts';

/** A request as a fake server read it: the body as text. */
export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A request with its body parsed: JSON when it is JSON, else the text exactly as it arrived. */
export interface Seen<B = unknown> {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: B;
}

export type Handler = (req: Received, res: ServerResponse) => void;

/** A real HTTP server on 127.0.0.1: its origin, and every request it has read so far. */
export interface FakeServer<S = Received> {
  url: string;
  seen: S[];
  close(): Promise<void>;
}

/** One canned answer; a string body goes as it is, anything else as JSON. */
export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

/** A fake platform that answers from `queue` while it holds anything, and as the platform would after that. */
export interface QueuedFake {
  url: string;
  seen: Seen[];
  queue: Answer[];
}

/** Starts a fake server that reads each request whole, records it, then lets `handler` answer. */
export async function listen(handler: Handler): Promise<FakeServer> {
  const seen: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      seen.push(request);
      // No keep-alive, so specs never share a socket.
      res.setHeader('connection', 'close');
      handler(request, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = () =>
    new Promise<void>((resolve) => {
      // A handler may never answer; its connection must not hold the close up.
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close };
}

/** {@link listen} for one test: the server closes when the test ends. */
export async function fake(t: TestContext, handler: Handler): Promise<FakeServer> {
  const server = await listen(handler);
  defer(t, server.close);
  return server;
}

/** {@link listen} that records, and hands `answer`, each request with its body parsed. */
export async function listenJson<B = unknown>(
  answer: (seen: Seen<B>, res: ServerResponse) => void,
): Promise<FakeServer<Seen<B>>> {
  const seen: Seen<B>[] = [];
  const server = await listen((req, res) => {
    const entry: Seen<B> = { method: req.method, path: req.url, headers: req.headers, body: _parse(req.body) as B };
    seen.push(entry);
    answer(entry, res);
  });
  return { url: server.url, seen, close: server.close };
}

/** {@link listenJson} for one test: the server closes when the test ends. */
export async function fakeJson<B = unknown>(
  t: TestContext,
  answer: (seen: Seen<B>, res: ServerResponse) => void,
): Promise<FakeServer<Seen<B>>> {
  const server = await listenJson(answer);
  defer(t, server.close);
  return server;
}

/** Runs `run` against a {@link QueuedFake} that behaves as `behave` says once its queue is empty. */
export async function withQueue(
  behave: (seen: Seen) => Answer,
  run: (fake: QueuedFake) => Promise<void>,
): Promise<void> {
  const queue: Answer[] = [];
  const seen: Seen[] = [];
  const server = await listen(answering((request) => (seen.push(request), queue.shift() ?? behave(request))));
  try {
    await run({ url: server.url, seen, queue });
  } finally {
    await server.close();
  }
}

/** A {@link Handler} that answers each request, its body parsed, with what `behave` says. */
export function answering(behave: (seen: Seen) => Answer): Handler {
  return (req, res) => {
    const answer = behave({ method: req.method, path: req.url, headers: req.headers, body: _parse(req.body) });
    const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(text);
  };
}

/** A request as a spec compares it whole: its method, path, the headers named in `headers`, and its body. */
export function picked(seen: Seen, headers: readonly string[]): Seen {
  return {
    method: seen.method,
    path: seen.path,
    headers: Object.fromEntries(headers.map((name) => [name, seen.headers[name]])),
    body: seen.body,
  };
}

/** Answers `body` as JSON. */
export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/** The origin of a port on 127.0.0.1 that was just closed, so a connection to it is refused. */
export async function closedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

function _parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // Kept as text: the spec then sees exactly what arrived.
    return text;
  }
}
