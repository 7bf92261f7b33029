import type { IncomingHttpHeaders } from 'node:http';
import type { AgentAction, RunSpec, WakeAction } from '../actions.ts';
import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import { parseAgent } from '../hooks/agent.ts';
import { applyMappings, type CallTransform } from '../hooks/mappings.ts';
import { detectInjection, nameLine, wrapUntrusted } from '../hooks/untrusted.ts';
import { parseWake } from '../hooks/wake.ts';
import type { Logger } from '../log.ts';
import { admitRun } from '../policy/admit.ts';
import { checkRoute, routesOf } from '../policy/route.ts';
import type { Effects, IdempotencyWrite, StoredAnswer, Store } from '../store/store.ts';
import { admitEvents, reserveRuns, unavailable, type RunQueue } from './admission.ts';
import type { WaitingReply } from './wait.ts';
import { upstreamAgent, upstreamWake } from '../hooks/upstream.ts';
import type { OutboxSpec } from '../store/outbox.ts';

/** An answer on its way out: status, JSON body and extra headers. */
export interface Answer extends StoredAnswer {
  headers?: Record<string, string>;
  /** A body that is not JSON (the metrics page), with its content type. */
  text?: string;
  contentType?: string;
}

/** An authenticated hook request with its parsed body. */
export interface HookCall {
  /** The request id, for logs and for the runs it creates. */
  id: string;
  /** The hook name after `hooks.path`. */
  name: string;
  body: Record<string, unknown>;
  headers: IncomingHttpHeaders;
  query: URLSearchParams;
}

/** The hook path and key a request is made idempotent by. */
export type IdempotencyKey = Pick<IdempotencyWrite, 'scope' | 'key'>;

export interface DispatchOptions {
  config: Config;
  store: Store;
  heartbeat: { request(reason: string): void };
  log: Logger;
  newId: () => string;
  transforms: CallTransform;
  /** The agent runtime's queue: accepted runs go there; a full queue answers 503. */
  runs?: RunQueue;
  /** Holds a `waitForCompletion` answer until its runs finished; without it such requests are answered at once. */
  wait?: (reply: WaitingReply) => Promise<StoredAnswer>;
  /** Forward mode: told when new outbox entries are on disk, so it sends them at once. */
  forwarded?: () => void;
}

/**
 * Turns a hook request into its effects: `/wake` and `/agent` by their schemas, any other name
 * through the mappings; every action through policy; all of a request's effects (and its
 * idempotency key) into the store as one commit, and the accepted runs to the runtime.
 */
export function createDispatch(options: DispatchOptions): (call: HookCall, idem: IdempotencyKey | null) => Promise<Answer> {
  const { config, store, heartbeat, log, newId, transforms, runs: queue, wait, forwarded } = options;
  // Forward mode: actions go to the upstream gateway's outbox instead of this runtime.
  const forward = config.hooks.forward !== null;
  const outboxWake = (action: Pick<WakeAction, 'text' | 'mode'>, call: HookCall): OutboxSpec =>
    ({ id: newId(), target: 'wake', body: upstreamWake(action), hook: call.name, requestId: call.id });
  const outboxAgent = (action: AgentAction, run: RunSpec, call: HookCall): OutboxSpec =>
    ({ id: newId(), target: 'agent', body: upstreamAgent(action, run), hook: call.name, requestId: call.id, runId: run.runId });
  const commitForward = async (outbox: OutboxSpec[], idem: IdempotencyWrite | undefined) => {
    await store.commit({ outbox }, idem).catch((error: unknown) => {
      throw unavailable(error);
    });
    forwarded?.();
  };

  // Bounds are checked (and queue slots held) with no await before the commit, so requests that
  // arrive together are counted together; the slots go back once the runs are queued or refused.
  const commit = async (effects: Effects, idem: IdempotencyWrite | undefined, field: (i: number) => string) => {
    const events = effects.events ?? [];
    admitEvents(store, config, events.filter((e) => e.kind === 'system').map((e) => e.text), field);
    const release = reserveRuns(queue, effects.runs?.length ?? 0, config);
    try {
      const { runs } = await store.commit(effects, idem);
      for (const run of runs) queue?.enqueue(run);
    } catch (error) {
      throw unavailable(error);
    } finally {
      release();
    }
  };

  // A reply that could never be delivered is refused now, while the sender can still fix it.
  const routes = routesOf(config.channels);
  const routeProblem = (run: RunSpec) => (run.deliver ? checkRoute(routes, store.lastRoute(), run.channel, run.to) : null);

  const dispatch = async (call: HookCall, idem: IdempotencyKey | null): Promise<Answer> => {
    const { name, body } = call;
    if (name === 'wake') {
      const parsed = parseWake(body);
      if (!parsed.ok) throw new HttpError(400, ErrorCode.InvalidPayload, parsed.error);
      const answer: Answer = { status: 200, body: { ok: true, mode: parsed.action.mode } };
      const { text, mode } = parsed.action;
      if (forward) {
        await commitForward([outboxWake(parsed.action, call)], _remember(idem, answer));
        return answer;
      }
      await commit({ events: [{ kind: 'system', text, source: 'wake', mode }] }, _remember(idem, answer), () => 'text');
      if (mode === 'now') heartbeat.request('wake');
      return answer;
    }
    if (name === 'agent') {
      const parsed = parseAgent(body);
      if (!parsed.ok) throw new HttpError(400, ErrorCode.InvalidPayload, parsed.error);
      const injections = detectInjection(parsed.action.message);
      if (injections.length > 0) log.warn('possible prompt injection (content wrapped)', { id: call.id, hook: name, kinds: injections.join(',') });
      parsed.action.message = wrapUntrusted(parsed.action.message, { source: 'Webhook' });
      parsed.action.name = nameLine(parsed.action.name) || 'Hook';
      const admitted = admitRun(parsed.action, name, config, newId);
      if (!admitted.ok) throw new HttpError(400, ErrorCode.Forbidden, admitted.error);
      const run: RunSpec = { ...admitted.value, requestId: call.id };
      if (forward) {
        // The upstream delivers, so its channels (not ours) decide what is routable; no local queue either.
        const answer: Answer = { status: 202, body: { ok: true, runId: run.runId, sessionKey: run.sessionKey, agentId: run.agentId, channel: run.channel } };
        await commitForward([outboxAgent(parsed.action, run, call)], _remember(idem, answer));
        return answer;
      }
      const unroutable = routeProblem(run);
      if (unroutable !== null) throw new HttpError(400, ErrorCode.InvalidPayload, unroutable);
      const answer: Answer = { status: 202, body: { ok: true, runId: run.runId, sessionKey: run.sessionKey, agentId: run.agentId, channel: run.channel } };
      const waitFor = parsed.action.waitForCompletion === true && wait !== undefined ? [run.runId] : undefined;
      await commit({ runs: [run] }, _remember(idem, answer, waitFor), () => 'message');
      return waitFor === undefined ? answer : wait!({ ...answer, waitFor });
    }
    return mapped(call, idem);
  };

  const mapped = async (call: HookCall, idem: IdempotencyKey | null): Promise<Answer> => {
    const { name } = call;
    const request = { name, payload: call.body, headers: call.headers, query: Object.fromEntries(call.query), now: new Date() };
    const outcome = await applyMappings(config.hooks.mappings, request, transforms);
    switch (outcome.kind) {
      case 'unmatched':
        throw new HttpError(404, ErrorCode.NotFound, 'no hook with this name');
      case 'ignored':
        // Senders post every event type; one the operator filtered out is acknowledged, not failed, and leaves no trace.
        return { status: 200, body: { ok: true, ignored: true } };
      case 'skip':
        return { status: 204, body: {} };
      case 'invalid':
        throw new HttpError(400, ErrorCode.InvalidPayload, outcome.error);
      case 'failed':
        log.error('hook mapping failed', { id: call.id, mapping: outcome.mappingId, detail: outcome.detail });
        throw new HttpError(500, ErrorCode.MappingFailed, 'hook mapping failed');
    }
    const source = `hook:${nameLine(name)}`;
    const events: Effects['events'] & {} = [];
    const runs: RunSpec[] = [];
    const outbox: OutboxSpec[] = [];
    for (const { action, injections } of outcome.actions) {
      if (injections.length > 0) log.warn('possible prompt injection (content wrapped)', { id: call.id, hook: nameLine(name), kinds: injections.join(',') });
      if (action.kind === 'wake') {
        events.push({ kind: 'system', text: action.text, source, mode: action.mode });
        if (forward) outbox.push(outboxWake(action, call));
        continue;
      }
      const admitted = admitRun(action, name, config, newId);
      if (!admitted.ok) throw new HttpError(400, ErrorCode.Forbidden, `mapping ${outcome.mappingId}: ${admitted.error}`);
      if (forward) {
        runs.push({ ...admitted.value, requestId: call.id });
        outbox.push(outboxAgent(action, admitted.value, call));
        continue;
      }
      const unroutable = routeProblem(admitted.value);
      if (unroutable !== null) throw new HttpError(400, ErrorCode.InvalidPayload, `mapping ${outcome.mappingId}: ${unroutable}`);
      runs.push({ ...admitted.value, requestId: call.id });
    }
    const first = runs[0];
    const answer: Answer = outcome.forEach
      ? runs.length > 0
        ? { status: 202, body: { ok: true, runIds: runs.map((r) => r.runId), ...(events.length > 0 ? { events: events.length } : {}) } }
        : { status: 200, body: { ok: true, mode: events[0]!.mode, events: events.length } }
      : first !== undefined
        ? { status: 202, body: { ok: true, runId: first.runId, sessionKey: first.sessionKey, agentId: first.agentId, channel: first.channel } }
        : { status: 200, body: { ok: true, mode: events[0]!.mode } };
    if (forward) {
      await commitForward(outbox, _remember(idem, answer));
      return answer;
    }
    const waitFor = outcome.waitForCompletion && runs.length > 0 && wait !== undefined ? runs.map((r) => r.runId) : undefined;
    await commit({ events, runs }, _remember(idem, answer, waitFor), (i) => `mapping ${outcome.mappingId}: wake text${events.length > 1 ? ` [${i}]` : ''}`);
    if (events.some((e) => e.mode === 'now')) heartbeat.request(source);
    return waitFor === undefined ? answer : wait!({ ...answer, waitFor });
  };

  return dispatch;
}

// A request that waits is remembered with its runs, so a retry waits for the same ones.
function _remember(idem: IdempotencyKey | null, answer: StoredAnswer, waitFor?: readonly string[]): IdempotencyWrite | undefined {
  if (idem === null) return undefined;
  return { ...idem, status: answer.status, body: answer.body, ...(waitFor === undefined ? {} : { waitFor }) };
}
