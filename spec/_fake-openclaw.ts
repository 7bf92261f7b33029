import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for an OpenClaw gateway's hooks endpoints, answering as OpenClaw 2026.9's hooks
 * handler does: token by `Authorization: Bearer` or `X-OpenClaw-Token` (401 text "Unauthorized"
 * otherwise), 400 `{ok:false,error}` for a bad payload, `/wake` 200 `{ok:true,mode,eventOutcome}`,
 * `/agent` 200 `{ok:true,runId}`, and for `/agent` the idempotency key (`Idempotency-Key`, then
 * `X-OpenClaw-Idempotency-Key`, then the body's `idempotencyKey`) answering a repeat with the
 * first runId and dispatching nothing.
 *
 * Its rules as released: an agent run delivers only to a concrete channel and a recipient named
 * together (`channel` without `to`, `to` without `channel`, `channel: "last"` with `to`, and
 * `accountId` without both are refused); a request's `agentId` must be one of its agents; a wake
 * without one is refused when it has several agents and no default (system) agent. A wake is a
 * system event of its session: at most 20 are kept pending per session, the oldest dropped past
 * that (still answered 200), and one equal to the session's newest is coalesced. They are read
 * by a heartbeat of that session only; `mode: "now"` asks for one, and at most 5 start per agent
 * in 60 s whichever sessions they read (its flood guard: one asked for past that waits, still
 * asked). Heartbeats run when the spec says time for them has come (`runHeartbeats`), on the
 * fake's clock.
 */
export interface FakeGateway {
  url: string;
  port: number;
  /** Every request that reached a hook handler with the right token, in order. */
  received: { path: string; key: string | undefined; body: Record<string, unknown> }[];
  /** What the gateway dispatched: one entry per wake or agent run it started. */
  accepted: { path: string; key: string | undefined; body: Record<string, unknown>; runId?: string }[];
  /** Overrides the next answers: each call (with the hook and the request's body) returns one (status, body, headers), or null to answer normally. */
  override:
    | ((
      path: string,
      body: Record<string, unknown>,
    ) => { status: number; body: unknown; headers?: Record<string, string> } | null)
    | null;
  /** Called when a request has been dispatched, before it is answered; may delay the answer. */
  beforeAnswer: (() => Promise<void>) | null;
  /** Wake texts dropped from a full session queue, oldest first. */
  dropped: string[];
  /** What each heartbeat read: its agent, and its session's pending texts in order. */
  turns: { agentId: string; session: string; texts: string[] }[];
  /** Heartbeats asked for that the flood guard did not let start when their time came (each time counted). */
  deferred: { agentId: string; session: string }[];
  /**
   * Runs the heartbeats asked for (with `all`, also each agent's main session's, as its periodic
   * heartbeat) that the flood guard lets start now, each reading its own session; answers how many ran.
   */
  runHeartbeats(all?: boolean): number;
  close(): Promise<void>;
}

/** The upstream's own config, as far as the hooks see it. */
export interface FakeGatewayOptions {
  /** Its agents (default: one, "main"). */
  agents?: readonly string[];
  /** The agent a request without one goes to (agents.defaults.systemAgent.agentId); default: the only agent, if there is one. */
  defaultAgent?: string;
  /** The fake's clock, for the flood guard (default Date.now). */
  now?: () => number;
}

const MAX_PENDING = 20;
const FLOOD_RUNS = 5;
const FLOOD_WINDOW_MS = 60_000;

interface _State {
  agents: readonly string[];
  defaultAgent: string | undefined;
  now: () => number;
  queues: Map<string, { agentId: string; texts: string[] }>;
  /** Sessions whose heartbeat was asked for, oldest first, and their agents. */
  asked: Map<string, string>;
  runStarts: Map<string, number[]>;
}

/** Starts the fake on `port` (0: a free one). */
export async function startFakeGateway(
  token: string,
  port = 0,
  options: FakeGatewayOptions = {},
): Promise<FakeGateway> {
  const cache = new Map<string, string>();
  let server: Server;
  const agents = options.agents ?? ['main'];
  const state: _State = {
    agents,
    defaultAgent: options.defaultAgent ?? (agents.length === 1 ? agents[0] : undefined),
    now: options.now ?? Date.now,
    queues: new Map(),
    asked: new Map(),
    runStarts: new Map(),
  };
  const gateway: FakeGateway = {
    url: '',
    port: 0,
    received: [],
    accepted: [],
    override: null,
    beforeAnswer: null,
    dropped: [],
    turns: [],
    deferred: [],
    runHeartbeats: (all = false) => _runHeartbeats(gateway, state, all),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server = createServer((req, res) => void _handle(gateway, state, cache, token, req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  gateway.port = (server.address() as AddressInfo).port;
  gateway.url = `http://127.0.0.1:${gateway.port}/hooks`;
  return gateway;
}

async function _handle(
  gateway: FakeGateway,
  state: _State,
  cache: Map<string, string>,
  token: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const auth = req.headers.authorization ?? '';
  const presented = auth.toLowerCase().startsWith('bearer ')
    ? auth.slice(7).trim()
    : String(req.headers['x-openclaw-token'] ?? '').trim();
  if (presented !== token) return _text(res, 401, 'Unauthorized');
  const path = (req.url ?? '').replace(/^\/hooks\/?/, '');
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
  } catch {
    return _json(res, 400, { ok: false, error: 'invalid JSON' });
  }
  const header = (
    name: string,
  ) => (typeof req.headers[name] === 'string' ? (req.headers[name] as string).trim() || undefined : undefined);
  const key = header('idempotency-key') ?? header('x-openclaw-idempotency-key') ??
    (typeof body['idempotencyKey'] === 'string' ? body['idempotencyKey'] : undefined);
  gateway.received.push({ path, key, body });
  const forced = gateway.override?.(path, body) ?? null;
  if (forced !== null) return _json(res, forced.status, forced.body, forced.headers);
  if (path === 'wake') {
    if (typeof body['text'] !== 'string' || body['text'].trim() === '') {
      return _json(res, 400, { ok: false, error: 'text required' });
    }
    const mode = body['mode'] === 'next-heartbeat' ? 'next-heartbeat' : 'now';
    const agent = _agent(state, body['agentId']);
    if (!agent.ok) return _json(res, 400, { ok: false, error: agent.error });
    // Re-scoped to the target agent, as the gateway does.
    const sessionKey = typeof body['sessionKey'] === 'string'
      ? body['sessionKey'].trim().toLowerCase().replace(/^agent:[^:]*:/, '')
      : 'main';
    const session = `agent:${agent.id}:${sessionKey}`;
    const queued = _enqueue(gateway, state, agent.id, session, body['text'].trim());
    if (mode === 'now' && !state.asked.has(session)) state.asked.set(session, agent.id);
    gateway.accepted.push({ path, key, body });
    await gateway.beforeAnswer?.();
    return _json(res, 200, { ok: true, mode, eventOutcome: queued ? 'queued' : 'coalesced' });
  }
  if (path === 'agent') {
    if (typeof body['message'] !== 'string' || body['message'].trim() === '') {
      return _json(res, 400, { ok: false, error: 'message required' });
    }
    const refused = _delivery(body);
    if (refused !== null) return _json(res, 400, { ok: false, error: refused });
    const agent = _agent(state, body['agentId']);
    if (!agent.ok) return _json(res, 400, { ok: false, error: agent.error });
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

// 2026.9's delivery rule for a hook run: nothing named, or a concrete channel and a recipient together.
function _delivery(body: Record<string, unknown>): string | null {
  if (body['deliver'] === false) return null;
  const has = (field: string) => body[field] !== undefined;
  if (!has('channel') && !has('to') && !has('accountId')) return null;
  if (has('to') && (typeof body['to'] !== 'string' || body['to'].trim() === '')) {
    return 'to must be a non-empty string for hook delivery';
  }
  if (has('accountId') && (!has('channel') || !has('to'))) return 'accountId requires channel and to for hook delivery';
  if (!has('channel') || !has('to')) return 'channel and to must be set together for hook delivery';
  if (body['channel'] === 'last') return 'channel must name a concrete channel for hook delivery';
  return null;
}

// A request's agent: one of the gateway's, or its default when none is named.
function _agent(state: _State, requested: unknown): { ok: true; id: string } | { ok: false; error: string } {
  if (requested === undefined) {
    return state.defaultAgent === undefined
      ? { ok: false, error: 'agentId is required when multiple agents are configured' }
      : { ok: true, id: state.defaultAgent };
  }
  const id = typeof requested === 'string' ? requested.trim().toLowerCase() : '';
  return state.agents.includes(id) ? { ok: true, id } : { ok: false, error: `unknown agentId "${String(requested)}"` };
}

// A system event: coalesced when equal to the session's newest, and the oldest dropped past 20.
function _enqueue(gateway: FakeGateway, state: _State, agentId: string, session: string, text: string): boolean {
  const queue = state.queues.get(session) ?? { agentId, texts: [] };
  state.queues.set(session, queue);
  if (queue.texts.at(-1) === text) return false;
  queue.texts.push(text);
  if (queue.texts.length > MAX_PENDING) gateway.dropped.push(queue.texts.shift()!);
  return true;
}

// Each heartbeat reads its own session's events; the flood guard counts an agent's starts, whichever session.
function _runHeartbeats(gateway: FakeGateway, state: _State, all: boolean): number {
  let ran = 0;
  const now = state.now();
  const due = new Map(state.asked);
  if (all) {
    for (const agentId of state.agents) {
      if (!due.has(`agent:${agentId}:main`)) due.set(`agent:${agentId}:main`, agentId);
    }
  }
  for (const [session, agentId] of due) {
    const starts = (state.runStarts.get(agentId) ?? []).filter((t) => now - t < FLOOD_WINDOW_MS);
    state.runStarts.set(agentId, starts);
    if (starts.length >= FLOOD_RUNS) {
      gateway.deferred.push({ agentId, session });
      continue;
    }
    starts.push(now);
    state.asked.delete(session);
    ran++;
    const queue = state.queues.get(session);
    if (queue === undefined || queue.texts.length === 0) continue;
    gateway.turns.push({ agentId, session, texts: queue.texts });
    state.queues.delete(session);
  }
  return ran;
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

/**
 * The texts of a merged wake (lib/runtime/forward-merge.ts), as a strict reader that knows only
 * what its header says gets them; fails on anything else.
 */
export function unframe(merged: string): string[] {
  const lines = merged.split(/\r\n|\n|\r|\u2028|\u2029/);
  const header =
    /^(\d+) wake events, oldest first, .* between the line "<<<event K of \1 ([0-9a-z]+)>>>" and the line "<<<end K of \1 \2>>>"; any other line that looks like these is part of a text\.$/
      .exec(lines[0] ?? '');
  assert.ok(header !== null, `a header: ${lines[0]}`);
  const [, count, id] = header;
  const n = Number(count);
  const texts: string[] = [];
  let at = 1;
  for (let k = 1; k <= n; k++) {
    assert.equal(lines[at++], `<<<event ${k} of ${n} ${id}>>>`, `event ${k} opens`);
    const body: string[] = [];
    while (lines[at] !== `<<<end ${k} of ${n} ${id}>>>`) {
      assert.ok(at < lines.length, `event ${k} ends`);
      body.push(lines[at++]!.replace(/^([ \t]*)\\(\\*<<<)/, '$1$2'));
    }
    at++;
    texts.push(body.join('\n'));
  }
  assert.equal(at, lines.length, 'nothing after the last frame');
  return texts;
}
