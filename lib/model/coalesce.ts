/**
 * Coalescing: agent requests of one hook with the same key, arriving within a window, become one
 * run. The window a pending run is held open for, what a later request adds to it when it joins,
 * and when the window closes, as plain values the edge, the store and the runtime read alike.
 */

/** What a coalesced run's message carries: the latest request's message, or every request's. */
export const COALESCE_MESSAGES = ['latest', 'all'] as const;
export type CoalesceMessages = (typeof COALESCE_MESSAGES)[number];

/** A run's window as the plan asks for it: who may join, and for how long. */
export interface CoalesceSpec {
  /** Requests whose runs have the same group join one run: the hook, the rendered key, and where the reply goes. */
  group: string;
  /** The key as the mapping's template rendered it (request text, shown in listings only). */
  key: string;
  windowSeconds: number;
  maxWaitSeconds: number;
  messages: CoalesceMessages;
  /** With `messages: "all"`, the messages together stay within this many UTF-8 bytes (`hooks.maxBodyBytes`). */
  maxBytes: number;
}

/** What a mapping asks of one request's run: its key, rendered, and the window's settings. */
export type CoalesceAsked = Pick<CoalesceSpec, 'key' | 'windowSeconds' | 'maxWaitSeconds' | 'messages'>;

/** A pending run's window as the journal keeps it: the spec, and the requests that joined so far. */
export interface CoalesceWindow extends CoalesceSpec {
  /** Requests the run stands for, the first included. */
  count: number;
  /** When the first and the latest request were accepted (ISO). */
  firstAt: string;
  lastAt: string;
  /** With `messages: "all"`: requests whose message did not fit within `maxBytes` (counted, not carried). */
  leftOut?: number;
}

/** A request that joined a pending run: the journal line that acknowledges it carries this. */
export interface RunJoin {
  runId: string;
  /** The request that joined. */
  requestId?: string;
  /** When it was accepted (ISO): the window's quiet time counts from here. */
  at: string;
  /** Its message (wrapped as untrusted content); absent when it did not fit within the bound. */
  message?: string;
}

/** When a window closes (epoch ms): quiet for `windowSeconds` after the latest request, or `maxWaitSeconds` after the first. */
export function windowClosesAt(
  window: Pick<CoalesceWindow, 'firstAt' | 'lastAt' | 'windowSeconds' | 'maxWaitSeconds'>,
): number {
  return Math.min(
    Date.parse(window.lastAt) + window.windowSeconds * 1000,
    Date.parse(window.firstAt) + window.maxWaitSeconds * 1000,
  );
}

/** Until when (epoch ms) a run waits for its window, or `null` when it may start (no window, or closed by `now`). */
export function heldUntil(run: { readonly coalesce?: CoalesceWindow | undefined }, now: number): number | null {
  if (run.coalesce === undefined) return null;
  const closes = windowClosesAt(run.coalesce);
  return now < closes ? closes : null;
}

// The line between two messages of a run that carries every message.
function _heading(n: number): string {
  return `Message ${n}:\n`;
}

/**
 * A run's message once a request joined: the latest message in place of the one before, or with
 * `messages: "all"` appended under its number (the first numbered when the second arrives).
 */
export function joinedMessage(message: string, window: CoalesceWindow, next: string): string {
  if (window.messages === 'latest') return next;
  const before = window.count === 1 ? `${_heading(1)}${message}` : message;
  return `${before}\n\n${_heading(window.count + 1)}${next}`;
}

/** Whether another message fits within the window's bound, joined as `joinedMessage` joins it. */
export function messageFits(message: string, window: CoalesceWindow, next: string): boolean {
  return window.messages === 'latest' || Buffer.byteLength(joinedMessage(message, window, next)) <= window.maxBytes;
}

/** A window with a request joined: counted, its time the window's latest. */
export function joinedWindow(window: CoalesceWindow, join: RunJoin): CoalesceWindow {
  const joined: CoalesceWindow = { ...window, count: window.count + 1, lastAt: join.at };
  if (join.message === undefined) joined.leftOut = (window.leftOut ?? 0) + 1;
  return joined;
}
