import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for an OpenClaw gateway's hooks endpoints, answering as OpenClaw's hooks
 * handler does: token by `Authorization: Bearer` or `X-OpenClaw-Token` (401 text "Unauthorized"
 * otherwise), 400 `{ok:false,error}` for a bad payload, `/wake` 200 `{ok:true,mode}`, `/agent`
 * 200 `{ok:true,runId}`, and for `/agent` the idempotency key (`Idempotency-Key`, then
 * `X-OpenClaw-Idempotency-Key`, then the body's `idempotencyKey`) answering a repeat with the
 * first runId and dispatching nothing.
 */
export interface FakeGateway {
  url: string;
  port: number;
  /** Every request that reached a hook handler with the right token, in order. */
  received: { path: string; key: string | undefined; body: Record<string, unknown> }[];
  /** What the gateway dispatched: one entry per wake or agent run it started. */
  accepted: { path: string; key: string | undefined; body: Record<string, unknown>; runId?: string }[];
  /** Overrides the next answers: each call (with the hook and the request's body) returns one (status, body, headers), or null to answer normally. */
  override: ((path: string, body: Record<string, unknown>) => { status: number; body: unknown; headers?: Record<string, string> } | null) | null;
  /** Called when a request has been dispatched, before it is answered; may delay the answer. */
  beforeAnswer: (() => Promise<void>) | null;
  close(): Promise<void>;
}

/** Starts the fake on `port` (0: a free one). */
export async function startFakeGateway(token: string, port = 0): Promise<FakeGateway> {
  const cache = new Map<string, string>();
  let server: Server;
  const gateway: FakeGateway = {
    url: '',
    port: 0,
    received: [],
    accepted: [],
    override: null,
    beforeAnswer: null,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server = createServer((req, res) => void _handle(gateway, cache, token, req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  gateway.port = (server.address() as AddressInfo).port;
  gateway.url = `http://127.0.0.1:${gateway.port}/hooks`;
  return gateway;
}

async function _handle(gateway: FakeGateway, cache: Map<string, string>, token: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const auth = req.headers.authorization ?? '';
  const presented = auth.toLowerCase().startsWith('bearer ') ? auth.slice(7).trim() : String(req.headers['x-openclaw-token'] ?? '').trim();
  if (presented !== token) return _text(res, 401, 'Unauthorized');
  const path = (req.url ?? '').replace(/^\/hooks\/?/, '');
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
  } catch {
    return _json(res, 400, { ok: false, error: 'invalid JSON' });
  }
  const header = (name: string) => (typeof req.headers[name] === 'string' ? (req.headers[name] as string).trim() || undefined : undefined);
  const key = header('idempotency-key') ?? header('x-openclaw-idempotency-key') ?? (typeof body['idempotencyKey'] === 'string' ? body['idempotencyKey'] : undefined);
  gateway.received.push({ path, key, body });
  const forced = gateway.override?.(path, body) ?? null;
  if (forced !== null) return _json(res, forced.status, forced.body, forced.headers);
  if (path === 'wake') {
    if (typeof body['text'] !== 'string' || body['text'].trim() === '') return _json(res, 400, { ok: false, error: 'text required' });
    const mode = body['mode'] === 'next-heartbeat' ? 'next-heartbeat' : 'now';
    gateway.accepted.push({ path, key, body });
    await gateway.beforeAnswer?.();
    return _json(res, 200, { ok: true, mode });
  }
  if (path === 'agent') {
    if (typeof body['message'] !== 'string' || body['message'].trim() === '') return _json(res, 400, { ok: false, error: 'message required' });
    const cached = key === undefined ? undefined : cache.get(key);
    if (cached !== undefined) return _json(res, 200, { ok: true, runId: cached });
    const runId = randomUUID();
    if (key !== undefined) cache.set(key, runId);
    gateway.accepted.push({ path, key, body, runId });
    await gateway.beforeAnswer?.();
    return _json(res, 200, { ok: true, runId });
  }
  return _text(res, 404, 'Not Found');
}

function _json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}

function _text(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(text);
}

/** A port on 127.0.0.1 that was free a moment ago (nothing listens on it now). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
