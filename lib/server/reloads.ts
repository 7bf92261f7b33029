// Reloads of a running server, from SIGHUP or from `hooks-ingress reload` over the control
// channel. Each reload reads the whole config and starts a transform child per mapped module,
// so a burst of requests must not queue a reload each: at most one runs and one waits, and every
// request that comes while one waits shares its verdict. A stop drops the waiting one and aborts
// the running one, so SIGTERM never waits behind reloads.

/** A reload's changes at the level an operator thinks in: names added, removed and changed. */
export interface ReloadChanges {
  /** Endpoint paths served (`/hooks/wake`, `/hooks/github`). */
  hooks: { added: string[]; removed: string[] };
  /** Mapping ids; a changed one with its keys that changed (`github (textTemplate)`). */
  mappings: { added: string[]; removed: string[]; changed: string[] };
  /** Transform modules by path in the transforms directory (`ci.mjs`); changed: the file's content. */
  transforms: { added: string[]; removed: string[]; changed: string[] };
  /** Where the config holds a secret (`hooks.token`, `channels.telegram.botToken`); never the values. */
  secrets: { added: string[]; removed: string[]; changed: string[] };
}

/**
 * What a reload came to: applied (with what changed), refused (the new config has problems; the
 * old one stays), or failed (an unexpected error part way; the log has it).
 */
export type ReloadVerdict =
  | { outcome: 'applied'; at: string; file: string | null; changes: ReloadChanges; needsRestart?: string[] }
  | { outcome: 'refused'; at: string; file: string | null; problems: string[] }
  | { outcome: 'failed'; at: string; file: string | null; problems: string[] };

/** What {@link Reloads.state} tells. */
export interface ReloadState {
  running: boolean;
  pending: boolean;
  requests: number;
}

/** Runs one reload; `signal` aborts it when the server stops (nothing of it is applied then). */
export type ReloadRun = (signal: AbortSignal) => Promise<ReloadVerdict>;

/** The reloads of one server. */
export interface Reloads {
  /** Asks for a reload that starts after this call; resolves with its verdict. */
  request(): Promise<ReloadVerdict>;
  /** The verdict of the last reload that finished, `null` before the first. */
  last(): ReloadVerdict | null;
  /** Whether a reload runs, whether one waits behind it, and how many requests (signals, commands) wait for either. */
  state(): ReloadState;
  /** Drops the waiting reload and aborts the running one; their requests get a 'failed' verdict. Takes no time. */
  stop(): void;
}

/** Reloads coalesced as described above, each carried out by `run`. */
export function coalescedReloads(run: ReloadRun, now: () => number = Date.now): Reloads {
  let running: AbortController | null = null;
  let pending: _Deferred | null = null;
  let last: ReloadVerdict | null = null;
  let stopped = false;
  let requests = 0;
  const stopping = () => _failed(now, 'the server is stopping; the reload was not carried out');

  const start = (resolve: (verdict: ReloadVerdict) => void) => {
    const controller = new AbortController();
    running = controller;
    void run(controller.signal)
      .catch((error: unknown) => _failed(now, String(error)))
      .then((verdict) => {
        running = null;
        if (controller.signal.aborted) return resolve(stopping());
        last = verdict;
        resolve(verdict);
        // The one that waited starts now: it reads the config as it is after every request it serves.
        const next = pending;
        pending = null;
        if (next !== null) start(next.resolve);
      });
  };

  return {
    request() {
      if (stopped) return Promise.resolve(stopping());
      requests++;
      const settled = (verdict: ReloadVerdict) => {
        requests--;
        return verdict;
      };
      if (running === null) return new Promise<ReloadVerdict>((resolve) => start(resolve)).then(settled);
      // One already runs: it may have read the file before this request, so this one waits for the next.
      pending ??= _deferred();
      return pending.promise.then(settled);
    },
    last: () => last,
    state: () => ({ running: running !== null, pending: pending !== null, requests }),
    stop() {
      stopped = true;
      pending?.resolve(stopping());
      pending = null;
      running?.abort();
    },
  };
}

/** A verdict to come, and what settles it. */
interface _Deferred {
  promise: Promise<ReloadVerdict>;
  resolve: (verdict: ReloadVerdict) => void;
}

function _deferred(): _Deferred {
  let resolve!: (verdict: ReloadVerdict) => void;
  const promise = new Promise<ReloadVerdict>((r) => (resolve = r));
  return { promise, resolve };
}

// A reload that was not carried out, and why.
function _failed(now: () => number, problem: string): ReloadVerdict {
  return { outcome: 'failed', at: new Date(now()).toISOString(), file: null, problems: [problem] };
}
