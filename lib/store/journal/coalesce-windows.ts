// The coalescing windows open in the journal: which pending run holds each group's window, and a
// commit's runs turned into new runs or joins of a pending one (lib/model/coalesce.ts says what a
// window is). Decided in the store, with no await between the decision and the line's place in
// memory, so two requests of one group arriving together cannot both open a window.

import type { RunSpec } from '../../model/actions.ts';
import { heldUntil, joinedMessage, joinedWindow, messageFits, type RunJoin } from '../../model/coalesce.ts';
import type { RunRecord } from '../../model/records.ts';
import { workHook } from '../../model/work-hook.ts';
import { extend } from '../../object.ts';

/** A commit's runs as the windows make them: the runs it adds, the joins it writes, and which planned run joined which. */
export interface Admitted {
  runs: RunRecord[];
  joins: readonly RunJoin[];
  /** By the planned run's id: the pending run it joined, as it stands with this commit's joins. */
  joined: ReadonlyMap<string, RunRecord>;
}

const _NONE: readonly never[] = Object.freeze([]);
const _NOTHING_JOINED: ReadonlyMap<string, RunRecord> = new Map();
// Shared by every commit with no run; nothing writes to it.
const _NO_RUNS: Admitted = Object.freeze({
  runs: Object.freeze([]) as unknown as RunRecord[],
  joins: _NONE,
  joined: _NOTHING_JOINED,
});

/** A run with a request joined: counted, and its message the latest or every one (the one rule, for the writer and the readers). */
export function joinRun(run: RunRecord, join: RunJoin): RunRecord {
  if (run.coalesce === undefined) return run;
  const message = join.message === undefined ? run.message : joinedMessage(run.message, run.coalesce, join.message);
  return extend(run, { message, coalesce: joinedWindow(run.coalesce, join) });
}

/** The open windows: per group, the newest pending run that holds one. */
export class Windows {
  #open = new Map<string, string>();
  // Runs whose opening line is still being written: a request that would join one waits for that
  // line, so a join is never acknowledged into a run that then failed to reach the disk.
  #writing = new Map<string, Promise<void>>();

  /** The lines still being written that opened the windows these runs would join. */
  unwritten(specs: readonly RunSpec[] | undefined): readonly Promise<void>[] {
    if (this.#writing.size === 0 || specs === undefined) return _NONE;
    return specs.flatMap((spec) => {
      const id = spec.coalesce === undefined ? undefined : this.#open.get(spec.coalesce.group);
      return (id === undefined ? undefined : this.#writing.get(id)) ?? [];
    });
  }

  /** A line that opens windows is being written; `written` settles once it is on disk or failed. */
  writing(runs: readonly RunRecord[], written: Promise<void>): void {
    const opened = runs.filter((run) => run.coalesce !== undefined);
    if (opened.length === 0) return;
    const settled = written.then(() => undefined, () => undefined);
    for (const run of opened) this.#writing.set(run.runId, settled);
    void settled.then(() => {
      for (const run of opened) if (this.#writing.get(run.runId) === settled) this.#writing.delete(run.runId);
    });
  }

  /** Keeps the index in step with a run as it changes (`run` undefined: removed). */
  track(id: string, old: RunRecord | undefined, run: RunRecord | undefined): void {
    const group = old?.coalesce?.group;
    if (group !== undefined && this.#open.get(group) === id) this.#open.delete(group);
    if (run?.coalesce !== undefined && run.status === 'pending') this.#open.set(run.coalesce.group, id);
  }

  /** How many windows are open now (pending runs still taking requests), by work hook. */
  open(get: (id: string) => RunRecord | undefined, now: number): Map<string, number> {
    const open = new Map<string, number>();
    for (const id of this.#open.values()) {
      const run = get(id);
      if (run === undefined || heldUntil(run, now) === null) continue;
      const hook = workHook(run, 'agent');
      open.set(hook, (open.get(hook) ?? 0) + 1);
    }
    return open;
  }

  /**
   * The runs of one commit at `time`: a run whose group has a window open at `now` joins its run
   * (its message carried while it fits the window's bound), any other is a new pending run, one
   * that asked for a window opening its own.
   */
  admit(
    specs: readonly RunSpec[],
    time: string,
    now: number,
    get: (id: string) => RunRecord | undefined,
  ): Admitted {
    // No run (a wake, a heartbeat's line), or none that asks for a window: the runs as they are.
    if (specs.length === 0) return _NO_RUNS;
    if (!specs.some((spec) => spec.coalesce !== undefined)) {
      return { runs: specs.map((spec) => _newRun(spec, time)), joins: _NONE, joined: _NOTHING_JOINED };
    }
    const admitted = { runs: [] as RunRecord[], joins: [] as RunJoin[], joined: new Map<string, RunRecord>() };
    // This commit's own new and joined runs, as they will stand once it is applied.
    const here = new Map<string, RunRecord>();
    const current = (id: string) => here.get(id) ?? get(id);
    for (const spec of specs) {
      const holder = spec.coalesce === undefined ? undefined : this.#holder(spec.coalesce.group, here, current, now);
      if (holder === undefined) {
        const run = _newRun(spec, time);
        admitted.runs.push(run);
        if (run.coalesce !== undefined) here.set(run.runId, run);
        continue;
      }
      const message = messageFits(holder.message, holder.coalesce!, spec.message) ? spec.message : undefined;
      const join: RunJoin = {
        runId: holder.runId,
        ...(spec.requestId === undefined ? {} : { requestId: spec.requestId }),
        at: time,
        ...(message === undefined ? {} : { message }),
      };
      const run = joinRun(holder, join);
      here.set(run.runId, run);
      admitted.joins.push(join);
      admitted.joined.set(spec.runId, run);
    }
    return admitted;
  }

  // The pending run whose window for `group` is open at `now`: one this commit opened, else the index's.
  #holder(
    group: string,
    here: ReadonlyMap<string, RunRecord>,
    current: (id: string) => RunRecord | undefined,
    now: number,
  ): RunRecord | undefined {
    let found: RunRecord | undefined;
    for (const run of here.values()) if (run.coalesce?.group === group) found = run;
    const id = found?.runId ?? this.#open.get(group);
    const run = id === undefined ? undefined : current(id);
    return run !== undefined && run.status === 'pending' && heldUntil(run, now) !== null ? run : undefined;
  }
}

function _newRun(spec: RunSpec, time: string): RunRecord {
  // One copy for a run with no window, as every run was made before coalescing.
  if (spec.coalesce === undefined) {
    return extend(spec as Omit<RunSpec, 'coalesce'>, { status: 'pending' as const, acceptedAt: time, attempts: 0 });
  }
  const { coalesce, ...rest } = spec;
  const run: RunRecord = extend(rest, { status: 'pending' as const, acceptedAt: time, attempts: 0 });
  run.coalesce = extend(coalesce, { count: 1, firstAt: time, lastAt: time });
  return run;
}

/** Taking back a line's joins: `applied` once the line is in memory, `undo` if it never reached the disk. */
export interface JoinsUndo {
  applied(): void;
  undo(): void;
}

/**
 * Taking back the joins of a line that never reached the disk: each run as it was before them,
 * unless a later change replaced it since. Made before the line is applied.
 */
export function joinsUndo(
  joins: readonly RunJoin[] | undefined,
  get: (id: string) => RunRecord | undefined,
  set: (id: string, run: RunRecord) => void,
): JoinsUndo | null {
  if (joins === undefined || joins.length === 0) return null;
  const before = new Map<string, RunRecord>();
  for (const { runId } of joins) {
    const run = get(runId);
    if (run !== undefined && !before.has(runId)) before.set(runId, run);
  }
  const after = new Map<string, RunRecord | undefined>();
  return {
    applied: () => {
      for (const id of before.keys()) after.set(id, get(id));
    },
    undo: () => {
      for (const [id, run] of before) if (get(id) === after.get(id)) set(id, run);
    },
  };
}
