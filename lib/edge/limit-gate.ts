// A request's hook limits as commit asks them, after dedupe and before the backlog bounds: the
// rate limit (a place in the window, held runs, dropped or refused), then the budget (runs charged
// to a day, held until the next one, or refused). What passes goes on with its runs' start time and
// its budget charge riding on the journal line of its effects; what a later step refuses gives its
// place and charge back.

import type { HttpError } from '../errors.ts';
import type { Became } from '../model/ledger-entry.ts';
import type { HookLimits } from '../hooks/limits.ts';
import type { RunSpec } from '../model/actions.ts';
import type { BudgetCharge } from '../store/journal/budgets.ts';
import { type Answer, refusedAnswer } from './answer.ts';
import { extend } from '../object.ts';
import type { Accepted, HookRequest, Plan } from './plan.ts';
import type { PlannedAction, Trace } from './trace.ts';
import type { BudgetNotice, LimitMark, WorkLimits } from './work-limits.ts';

type _Request = Pick<HookRequest, 'id' | 'name' | 'gone' | 'settle'>;

/** A request its hook's limits let through: what commit records instead of the plan's, and how to take it back. */
export interface Passed {
  kind: 'pass';
  accepted: Accepted;
  answer: Answer;
  request: _Request;
  /** What the ledger adds to what the request became (`heldUntil`). */
  became: Became;
  marks: readonly LimitMark[];
  /** Gives back the window's place and the budget's charge: a later step refused the request, or its commit failed. */
  undo(): void;
}

/** The limits' verdict: answered here (dropped by `ignore`, refused), or passed on. */
export type Gated = { kind: 'answered'; answer: Answer } | Passed;

/** Which of a request's runs would join a pending run (coalescing): they start no run of their own. */
export type Joining = (runs: readonly RunSpec[]) => ReadonlySet<string>;

/**
 * Asks the hook's limits about an accepted plan, in the order of the checks: the rate limit, then
 * (coalescing having joined what it joins) the budget, which charges only the runs that start
 * anew; `tell` posts a budget's notice (local or forwarded).
 */
export function gateLimits(
  limits: WorkLimits,
  settings: HookLimits,
  hook: string,
  plan: Plan & { kind: 'accepted' },
  request: _Request,
  tell: (notice: BudgetNotice) => void,
  joining?: Joining,
): Gated {
  const { actions } = plan.accepted;
  const runs = actions.filter((a) => a.kind === 'agent').length;
  const marks: LimitMark[] = [];
  let at = limits.now();
  let undoRate = () => {};
  if (settings.rateLimit !== undefined) {
    const step = limits.rate(hook, settings.rateLimit, { runs, other: runs < actions.length });
    if (step.mark !== null) marks.push(step.mark);
    if (step.kind === 'ignored') {
      const trace: Trace = extend(plan.trace, { became: { limited: true }, limits: marks });
      return { kind: 'answered', answer: { status: 200, body: { ok: true, limited: true }, trace } };
    }
    if (step.kind === 'refused') return _refused(plan.trace, step.refusal, marks);
    at = step.at;
    undoRate = step.undo;
  }
  let notBefore = at > limits.now() ? at : null;
  let charged: { charge: BudgetCharge; undo: () => void } | null = null;
  const fresh = settings.budget === undefined || runs === 0 ? 0 : _fresh(actions, joining);
  if (settings.budget !== undefined && fresh > 0) {
    const { step, notice } = limits.budget(hook, settings.budget, fresh, at);
    if (notice !== null) tell(notice);
    if (step.mark !== null) marks.push(step.mark);
    if (step.kind === 'refused') {
      undoRate();
      return _refused(plan.trace, step.refusal, marks);
    }
    if (step.notBefore !== null) notBefore = Math.max(notBefore ?? 0, step.notBefore);
    charged = { charge: step.charge, undo: step.undo };
  }
  return _passed(plan, request, notBefore, charged, marks, undoRate);
}

function _passed(
  plan: Plan & { kind: 'accepted' },
  request: _Request,
  notBefore: number | null,
  charged: { charge: BudgetCharge; undo: () => void } | null,
  marks: readonly LimitMark[],
  undoRate: () => void,
): Passed {
  const heldUntil = notBefore === null ? undefined : new Date(notBefore).toISOString();
  return {
    kind: 'pass',
    accepted: heldUntil === undefined ? plan.accepted : _held(plan.accepted, heldUntil),
    answer: heldUntil === undefined ? plan.answer : { ...plan.answer, body: extend(plan.answer.body, { heldUntil }) },
    request: charged === null ? request : _withCharge(request, charged.charge),
    became: heldUntil === undefined ? {} : { heldUntil },
    marks,
    undo: () => {
      undoRate();
      charged?.undo();
    },
  };
}

// The runs that start anew: a run that joins a pending one is charged nothing.
function _fresh(actions: readonly PlannedAction[], joining: Joining | undefined): number {
  const runs = actions.flatMap((a) => (a.kind === 'agent' ? [a.run] : []));
  if (joining === undefined) return runs.length;
  const joined = joining(runs);
  return runs.filter((run) => !joined.has(run.runId)).length;
}

// The runs of the request, not started before `heldUntil`.
function _held(accepted: Accepted, heldUntil: string): Accepted {
  const actions = accepted.actions.map((a): PlannedAction =>
    a.kind === 'agent' ? { ...a, run: extend(a.run, { notBefore: heldUntil }) } : a
  );
  return { ...accepted, actions };
}

// The charge rides on the line of the request's effects, as a replay's record does: both or neither.
function _withCharge(
  request: _Request,
  charge: BudgetCharge,
): _Request {
  const { settle } = request;
  return extend(request, {
    settle: (status: number) => {
      const effects = settle?.(status) ?? {};
      return extend(effects, { budget: [...(effects.budget ?? []), charge] });
    },
  });
}

function _refused(trace: Trace, refusal: HttpError, marks: readonly LimitMark[]): Gated {
  return { kind: 'answered', answer: refusedAnswer(refusal, extend(trace, { refusal, limits: marks })) };
}
