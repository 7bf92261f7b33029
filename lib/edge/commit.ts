// Every effect of a planned request, and nothing that decides what it comes to: the plan's log
// lines, a refusal counted against the client, then for an accepted request its events and runs
// (or forward mode's outbox entries) and its idempotency key in one journal commit, the runs
// queued, a heartbeat asked for, the outbox woken, the wait for the runs. The capacity bounds are
// checked here, with no await before the journal's commit, because holding a queue slot is itself
// an effect and requests arriving together must be counted together; a refusal there is traced.

import type { AgentAction, NoticeSpec, RunSpec, WakeAction } from '../model/actions.ts';
import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { Auth } from '../guard/auth.ts';
import type { Logger } from '../log.ts';
import { upstreamAgent, upstreamWake } from '../runtime/forward-body.ts';
import type { WakeTarget } from '../policy/admit.ts';
import type { Became } from '../model/ledger-entry.ts';
import type { EventOutcome, NewEvent } from '../store/journal/session-events.ts';
import type { OutboxSpec } from '../store/journal/outbox.ts';
import type { Effects, Joined, Store } from '../store/journal/store.ts';
import type { HeldWake } from '../store/journal/pauses.ts';
import type { IdempotencyWrite, NoticeRecord, RunRecord, SessionEvent, StoredAnswer } from '../model/records.ts';
import type { Alerts } from '../model/alerts.ts';
import { type Answer, refusedAnswer, withTrace } from './answer.ts';
import { coalescedAnswer, joinedIds, joinedRuns } from './coalesced.ts';
import { admitEvents, reserveHookRuns, reserveRuns, type RunQueue, unavailable } from './capacity.ts';
import type { IdempotencyKey } from './idempotency.ts';
import type { Accepted, HookRequest, Plan } from './plan.ts';
import type { Said, Trace } from './trace.ts';
import type { Waiter } from './wait.ts';
import { hookLimits } from '../hooks/limits.ts';
import { workHook } from '../model/work-hook.ts';
import { gateLimits } from './limit-gate.ts';
import type { BudgetNotice, WorkLimits } from './work-limits.ts';
import { extend } from '../object.ts';

/** What committing writes to and tells. */
export interface CommitOptions {
  config: Config;
  store: Pick<Store, 'commit' | 'backlog'> & Partial<Pick<Store, 'joining'>>;
  heartbeat: { request(reason: string): void };
  log: Logger;
  newId: () => string;
  /** Counts a refused signature against its client (the failure limiter). */
  auth: Pick<Auth, 'refuse'>;
  /** The agent runtime's queue: accepted runs go there; a full queue answers 503. */
  runs?: RunQueue;
  /** Holds a `waitForCompletion` answer until its runs finished; without it such requests are answered at once. */
  wait?: Waiter;
  /** Forward mode: told when new outbox entries are on disk, so it sends them at once. */
  forwarded?: () => void;
  /** Told of a refused signature, a request refused at a bound and a journal that could not be written (the owner's alerts). */
  alerts?: Alerts;
  /** The hooks' rate limits and budgets (work-limits.ts); without it none is applied. */
  limits?: WorkLimits;
}

/** Carries out a plan; `idem` is the key the answer is remembered under. The answer carries the trace, with what the request became. */
export type Commit = (
  plan: Plan,
  request: Pick<HookRequest, 'id' | 'client' | 'name' | 'gone' | 'settle'>,
  idem: IdempotencyKey | null,
) => Answer | Promise<Answer>;

// Where accepted actions go, chosen once when the committer is built.
type _Destination = (
  ctx: CommitOptions,
  request: Pick<HookRequest, 'id' | 'name' | 'gone' | 'settle'>,
  accepted: Accepted,
  idem: IdempotencyKey | null,
  answer: Answer,
) => Promise<{ answer: Answer; became: Became }>;

/** Builds the committer of one (re)load: into this process's journal and runtime, or in forward mode into the outbox bound upstream. */
export function createCommit(options: CommitOptions): Commit {
  const destination = options.config.hooks.forward === null ? _local : _forward;
  const limiting = _limiting(options);
  return (plan, request, idem) => {
    if (plan.trace.said !== undefined) _write(options.log, plan.trace.said);
    switch (plan.kind) {
      case 'refused': {
        if (plan.count !== undefined) {
          options.alerts?.note({
            kind: 'signature-failures',
            hook: request.name,
            code: plan.trace.signature?.why ?? 'bad-signature',
          });
        }
        const refusal = plan.count === undefined ? plan.refusal : options.auth.refuse(request.client, plan.count);
        return refused(plan.trace, refusal);
      }
      case 'answered':
        return withTrace(plan.answer, plan.trace);
      case 'accepted':
        return _accept(options, destination, plan, request, idem, limiting);
    }
  };
}

/** A refusal's answer, carrying the trace with the refusal in it. */
export function refused(trace: Trace, refusal: HttpError): Answer {
  return refusedAnswer(refusal, extend(trace, { refusal }));
}

async function _accept(
  options: CommitOptions,
  destination: _Destination,
  plan: Plan & { kind: 'accepted' },
  request: Pick<HookRequest, 'id' | 'name' | 'gone' | 'settle'>,
  idem: IdempotencyKey | null,
  limiting: _Limiting | null,
): Promise<Answer> {
  // The hook's rate limit and budget (after dedupe, before the backlog bounds): nothing to ask when no hook sets one.
  const gated = limiting === null ? null : limiting(plan, request);
  if (gated?.kind === 'answered') return gated.answer;
  const trace = gated === null || gated.marks.length === 0 ? plan.trace : extend(plan.trace, { limits: gated.marks });
  let made: { answer: Answer; became: Became };
  try {
    made = gated === null
      ? await destination(options, request, plan.accepted, idem, plan.answer)
      : await destination(options, gated.request, gated.accepted, idem, gated.answer);
  } catch (error) {
    gated?.undo();
    if (!(error instanceof HttpError)) throw error;
    return refused(trace, error);
  }
  return withTrace(
    made.answer,
    extend(trace, { became: gated === null ? made.became : extend(made.became, gated.became) }),
  );
}

type _Limiting = (
  plan: Plan & { kind: 'accepted' },
  request: Pick<HookRequest, 'id' | 'name' | 'gone' | 'settle'>,
) => ReturnType<typeof gateLimits> | null;

// The hooks' limits of one (re)load, or null when no hook sets one. A budget's notice goes to the
// main session: here as a system event, in forward mode upstream as a wake; either way with the
// line that marks the day's notice posted.
function _limiting(ctx: CommitOptions): _Limiting | null {
  const { limits } = ctx;
  const settings = hookLimits(ctx.config.hooks);
  if (limits === undefined || settings.size === 0) return null;
  const { store } = ctx;
  const joining = store.joining === undefined ? undefined : (runs: readonly RunSpec[]) => store.joining!(runs);
  const tell = (notice: BudgetNotice) => {
    // Once a day per hook, as the notice itself: the owner's alert says which hook, never request text.
    ctx.alerts?.note({ kind: 'budget', hook: notice.told.hook, code: ErrorCode.BudgetExceeded });
    const effects: Effects = ctx.config.hooks.forward === null
      ? { events: [{ kind: 'system', text: notice.text, source: 'budget', mode: 'next-heartbeat' }] }
      : {
        outbox: [{
          id: ctx.newId(),
          target: 'wake',
          body: upstreamWake({ text: notice.text, mode: 'next-heartbeat' }, ctx.config.hooks.forward.agentId),
          hook: notice.told.hook,
        }],
      };
    ctx.store.commit(extend(effects, { budget: [notice.told] })).then(
      () => ctx.forwarded?.(),
      (error: unknown) => ctx.log.error('budget notice not recorded', { hook: notice.told.hook, error: String(error) }),
    );
  };
  return (plan, request) => {
    const hook = workHook({ mapping: plan.trace.mapping }, request.name === 'wake' ? 'wake' : 'agent');
    const set = settings.get(hook);
    return set === undefined ? null : gateLimits(limits, set, hook, plan, request, tell, joining);
  };
}

function _write(log: Logger, said: readonly Said[]): void {
  for (const line of said) log[line.level](line.message, line.fields);
}

// Local: events for the main session and runs for this runtime, in one commit.
const _local: _Destination = async (ctx, request, accepted, idem, answer) => {
  const { events, runs, notices } = _effects(accepted, request.id);
  const planned = accepted.wait && runs.length > 0 && ctx.wait !== undefined ? runs.map((r) => r.runId) : undefined;
  // A run that joined a pending one (coalescing) is answered, and waited for, as that run.
  const told = (outcomes: readonly EventOutcome[], joined: Joined) =>
    coalescedAnswer(_withOutcome(answer, outcomes), joined);
  const waiting = (joined: Joined) => (planned === undefined ? undefined : joinedIds(planned, joined));
  const idemFor = idem === null
    ? undefined
    : (outcomes: readonly EventOutcome[], joined: Joined) =>
      _remember(idem, request.id, told(outcomes, joined), waiting(joined))!;
  // A replay's record rides on the same line: a crash leaves both or neither.
  const { became, outcomes, joined } = await _commit(
    ctx,
    request.name,
    _settled(request, answer.status, { events, runs, notices }),
    idemFor,
    accepted.field,
  );
  if (accepted.recorded !== undefined) _write(ctx.log, accepted.recorded);
  for (const e of events) {
    if (e.mode !== 'now') continue;
    ctx.heartbeat.request(accepted.source);
    break;
  }
  const waitFor = waiting(joined);
  const first = told(outcomes, joined);
  return { answer: waitFor === undefined ? first : await ctx.wait!(extend(first, { waitFor }), request.gone), became };
};

// A request's effects, with a replay's record on the same line (a live request has none).
function _settled(request: Pick<HookRequest, 'settle'>, status: number, effects: Effects): Effects {
  return request.settle === undefined ? effects : extend(request.settle(status), effects);
}

// A plan's actions as a commit's effects, in one pass: a wake is a system event of its target's
// session (one equal to that session's newest unread event coalesces into it), a run for this
// runtime, a notify mapping's delivery.
function _effects(
  accepted: Accepted,
  requestId: string,
): { events: NewEvent[]; runs: RunSpec[]; notices: NoticeSpec[] } {
  const events: NewEvent[] = [];
  const runs: RunSpec[] = [];
  const notices: NoticeSpec[] = [];
  for (const a of accepted.actions) {
    if (a.kind === 'wake') {
      const event: NewEvent = {
        kind: 'system',
        text: a.action.text,
        source: accepted.source,
        coalesce: true,
        // The hook whose pause holds it (model/work-hook.ts).
        workHook: workHook(accepted, 'wake'),
      };
      event.mode = a.action.mode;
      event.requestId = requestId;
      if (a.target.agentId !== undefined) event.agentId = a.target.agentId;
      if (a.target.sessionKey !== undefined) event.sessionKey = a.target.sessionKey;
      events.push(event);
    } else if (a.kind === 'agent') runs.push(a.run);
    else notices.push(a.notice);
  }
  return { events, runs, notices };
}

// Forward mode: the actions as the upstream gateway's /wake and /agent take them, into the outbox.
const _forward: _Destination = async (ctx, request, accepted, idem, answer) => {
  // A notify action never gets here: the plan refuses it in forward mode, which has no channel of its own.
  const outbox = accepted.actions.flatMap((a) =>
    a.kind === 'wake'
      ? [_outboxWake(ctx, a.action, a.target, accepted, request)]
      : a.kind === 'agent'
      ? [_outboxAgent(ctx, a.action, a.run, request)]
      : []
  );
  // Queued for the upstream, which decides on its own whether it coalesces.
  const told = _withOutcome(answer, accepted.actions.flatMap((a) => (a.kind === 'wake' ? ['queued' as const] : [])));
  await ctx.store.commit(_settled(request, told.status, { outbox }), _remember(idem, request.id, told))
    .catch(
      (error: unknown) => {
        _unwritten(ctx, request.name, error);
        throw unavailable(error);
      },
    );
  ctx.forwarded?.();
  if (accepted.recorded !== undefined) _write(ctx.log, accepted.recorded);
  return { answer: told, became: { outbox: outbox.map((o) => o.id) } };
};

// Bounds are checked (and queue slots held) with no await before the commit, so requests that
// arrive together are counted together; the slots go back once the runs are queued or refused.
// `field` names a wake text that is too long.
async function _commit(
  ctx: CommitOptions,
  hook: string,
  effects: Effects,
  idem: ((outcomes: readonly EventOutcome[], joined: Joined) => IdempotencyWrite) | undefined,
  field: (i: number) => string,
): Promise<{ became: Became; outcomes: EventOutcome[]; joined: Joined }> {
  try {
    admitEvents(ctx.store, ctx.config, _systemTexts(effects.events), field);
  } catch (error) {
    throw _noted(ctx, hook, 'hooks.maxBacklogEvents', error);
  }
  // A run that joins a pending one (coalescing) adds nothing to the queue: only new runs are held for.
  const release = _reserve(ctx, hook, _newRuns(ctx, effects.runs));
  try {
    const committed = await ctx.store.commit(effects, idem);
    for (const run of committed.runs) ctx.runs?.enqueue(run);
    for (const notice of committed.notices) ctx.runs?.notify?.(notice);
    return { became: _became(committed), outcomes: committed.outcomes, joined: committed.joined };
  } catch (error) {
    _unwritten(ctx, hook, error);
    throw unavailable(error);
  } finally {
    release();
  }
}

// The hook's own backlog bound, then the global one; the slots the first held go back when the second refuses.
function _reserve(ctx: CommitOptions, hook: string, runs: readonly RunSpec[]): () => void {
  // Every wake: no run, so no slot to hold.
  if (runs.length === 0) return _NOTHING;
  let own: () => void;
  try {
    own = reserveHookRuns(ctx.runs, runs, ctx.config);
  } catch (error) {
    throw _noted(ctx, hook, 'maxQueued', error);
  }
  try {
    const all = reserveRuns(ctx.runs, runs.length, ctx.config);
    return () => {
      all();
      own();
    };
  } catch (error) {
    own();
    throw _noted(ctx, hook, 'hooks.maxQueuedRuns', error);
  }
}

const _NOTHING = (): void => {};

// The runs that will not join a pending run (coalescing): the ones the backlog bounds count.
function _newRuns(ctx: CommitOptions, runs: readonly RunSpec[] | undefined): readonly RunSpec[] {
  if (runs === undefined || runs.length === 0 || ctx.store.joining === undefined) return runs ?? _NO_RUNS;
  const joining = ctx.store.joining(runs);
  return joining.size === 0 ? runs : runs.filter((run) => !joining.has(run.runId));
}

const _NO_RUNS: readonly RunSpec[] = Object.freeze([]);

// The texts of a commit's system events: what the backlog bound counts.
function _systemTexts(events: readonly NewEvent[] | undefined): string[] {
  const texts: string[] = [];
  for (const e of events ?? []) if (e.kind === 'system') texts.push(e.text);
  return texts;
}

// A bound reached (503) is told to the owner's alerts under the bound's key; a text too large (413) is the sender's.
function _noted(ctx: CommitOptions, hook: string, bound: string, error: unknown): unknown {
  if (error instanceof HttpError && error.status === 503) ctx.alerts?.note({ kind: 'backlog', hook, code: bound });
  return error;
}

// The journal could not take the line: the owner hears of it by the error's code, never its text.
function _unwritten(ctx: CommitOptions, hook: string, error: unknown): void {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  ctx.alerts?.note({
    kind: 'storage',
    hook,
    code: `journal ${typeof code === 'string' && /^[A-Z_]{2,32}$/.test(code) ? code : 'write failed'}`,
  });
}

// The outbox entries of forward mode: what the upstream gateway's /wake and /agent take.
function _outboxWake(
  ctx: CommitOptions,
  action: WakeAction,
  target: WakeTarget,
  { defaultAgentId, mapping }: Pick<Accepted, 'defaultAgentId' | 'mapping'>,
  request: Pick<HookRequest, 'id' | 'name'>,
): OutboxSpec {
  // The agent as the request or mapping named it, unless it fell back to the default (then the upstream's own choice, hooks.forward.agentId).
  const resolved = (target.agentId ?? defaultAgentId).toLowerCase();
  const { agentId, ...rest } = action;
  const sent = agentId !== undefined && agentId.toLowerCase() === resolved ? extend(rest, { agentId }) : rest;
  return {
    id: ctx.newId(),
    target: 'wake',
    body: upstreamWake(sent, ctx.config.hooks.forward?.agentId),
    hook: request.name,
    ...(mapping === undefined ? {} : { mapping }),
    requestId: request.id,
  };
}

function _outboxAgent(
  ctx: CommitOptions,
  action: AgentAction,
  run: RunSpec,
  request: Pick<HookRequest, 'id' | 'name'>,
): OutboxSpec {
  return {
    id: ctx.newId(),
    target: 'agent',
    body: upstreamAgent(action, run),
    hook: request.name,
    ...(run.mapping === undefined ? {} : { mapping: run.mapping }),
    requestId: request.id,
    runId: run.runId,
  };
}

// The answer to a request that added wakes says what became of them, as OpenClaw's does:
// `queued` when any became an event, `coalesced` when each was already its session's newest unread one;
// and `held` when none became an event because its hook is paused.
function _withOutcome(answer: Answer, outcomes: readonly EventOutcome[]): Answer {
  if (outcomes.length === 0) return answer;
  const outcome = outcomes.includes('queued') ? 'queued' : outcomes.includes('held') ? 'held' : 'coalesced';
  return { ...answer, body: extend(answer.body, { eventOutcome: outcome }) };
}

// What a commit made, for the ledger: only the kinds it made.
function _became(
  committed: {
    events: readonly SessionEvent[];
    runs: readonly RunRecord[];
    notices: readonly NoticeRecord[];
    joined: Joined;
    held: readonly HeldWake[];
  },
): Became {
  const became: Became = {};
  if (committed.events.length > 0) became.events = committed.events.map((e) => e.seq);
  if (committed.runs.length > 0) became.runs = committed.runs.map((r) => r.runId);
  if (committed.joined.size > 0) became.joined = joinedRuns(committed.joined);
  if (committed.notices.length > 0) became.deliveries = committed.notices.map((n) => n.deliveryId);
  if (committed.held.length > 0) became.held = committed.held.map((h) => h.id);
  return became;
}

// A request that waits is remembered with its runs, so a retry waits for the same ones.
function _remember(
  idem: IdempotencyKey | null,
  requestId: string,
  answer: StoredAnswer,
  waitFor?: readonly string[],
): IdempotencyWrite | undefined {
  if (idem === null) return undefined;
  const write: IdempotencyWrite = extend(idem, { status: answer.status, body: answer.body, requestId });
  if (waitFor !== undefined) write.waitFor = waitFor;
  return write;
}
