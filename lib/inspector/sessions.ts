// The inspector's logins: one-time codes the CLI asks for over the control channel, and the
// sessions a code turns into. Both live in memory only, so a restart ends every session.
//
// A session takes two secrets. The cookie is one, but a browser sends a cookie to every port of
// the host (cookies ignore ports), so another program on 127.0.0.1 that the owner's browser visits
// receives it too. The other is the tab's key: handed over once, in the fragment of the login's
// redirect (never sent to a server), kept by the page in its tab's sessionStorage, and sent by the
// page in a header on every API call. No answer ever carries it again, so whoever holds the cookie
// alone holds nothing.

import { generateToken, tokenDigest } from '../guard/token.ts';

/** How long a login code may wait to be used, at most. */
export const LOGIN_CODE_TTL_MS = 60_000;

/** A live session, as the API sees it. */
export interface InspectorSession {
  /** When it ends at the latest, used or not (epoch milliseconds). */
  endsAt: number;
}

export interface SessionOptions {
  /** A session unused for this long is gone. */
  idleMs: number;
  /** A session this old is gone, however busy: a tab left open does not stay logged in for ever. */
  maxAgeMs: number;
  /** The clock, in epoch milliseconds. */
  now: () => number;
}

// Codes waiting for their one use, and sessions: few of either make sense for one operator, so
// past these counts the oldest go first and a flood of `inspect` calls holds little memory.
const _MAX_CODES = 16;
const _MAX_SESSIONS = 32;

interface _Session {
  /** The digest of the browser's cookie value: several tabs of one browser share it. */
  cookie: string;
  created: number;
  seen: number;
}

/** One-time login codes and the sessions (one per tab) they open. */
export class InspectorSessions {
  // Keyed by the digest of the secret, never the secret itself: a heap dump or a debug print of
  // the map shows nothing a visitor could present.
  readonly #codes = new Map<string, number>();
  readonly #sessions = new Map<string, _Session>();
  readonly #idleMs: number;
  readonly #maxAgeMs: number;
  readonly #now: () => number;

  constructor(options: SessionOptions) {
    this.#idleMs = options.idleMs;
    this.#maxAgeMs = options.maxAgeMs;
    this.#now = options.now;
  }

  /** A new login code, valid once and until `expiresAt`. */
  issue(): { code: string; expiresAt: number } {
    const code = generateToken();
    const expiresAt = this.#now() + LOGIN_CODE_TTL_MS;
    _bounded(this.#codes, _MAX_CODES).set(_key(code), expiresAt);
    return { code, expiresAt };
  }

  /**
   * Uses up a code: a new session for one tab, its key, and the cookie value to set, or `null` for a
   * code unknown, used or expired. A browser that already holds a live session's cookie (`cookies`,
   * every value it sent) keeps that value, so the tabs it has open stay logged in.
   */
  redeem(code: string, cookies: readonly string[]): { cookie: string; key: string } | null {
    const codeKey = _key(code);
    const expiresAt = this.#codes.get(codeKey);
    // Used once, whatever the outcome: a code that reached a log or a history is spent either way.
    this.#codes.delete(codeKey);
    const now = this.#now();
    if (expiresAt === undefined || now > expiresAt) return null;
    const cookie = cookies.find((value) => this.#holder(value)) ?? generateToken();
    const key = generateToken();
    _bounded(this.#sessions, _MAX_SESSIONS).set(_key(key), { cookie: _key(cookie), created: now, seen: now });
    return { cookie, key };
  }

  /** The session a tab's key names when one of `cookies` is its browser's, still fresh; each use keeps it alive until its end. */
  find(cookies: readonly string[], key: string): InspectorSession | null {
    const id = _key(key);
    const session = this.#live(id);
    if (session === null || !cookies.some((value) => _key(value) === session.cookie)) return null;
    session.seen = this.#now();
    return { endsAt: session.created + this.#maxAgeMs };
  }

  /** Whether one of `cookies` belongs to a live session (enough for the page's own files, which hold no data); it keeps nothing alive. */
  known(cookies: readonly string[]): boolean {
    return cookies.some((value) => this.#holder(value));
  }

  /** Ends the session a tab's key names (logout); the browser's other tabs keep theirs. */
  end(key: string): void {
    this.#sessions.delete(_key(key));
  }

  #holder(cookie: string): boolean {
    const digest = _key(cookie);
    for (const id of [...this.#sessions.keys()]) if (this.#live(id)?.cookie === digest) return true;
    return false;
  }

  // The session under `id`, or `null` once it has been idle too long or lived too long (then it goes).
  #live(id: string): _Session | null {
    const session = this.#sessions.get(id);
    if (session === undefined) return null;
    const now = this.#now();
    if (now - session.seen > this.#idleMs || now - session.created >= this.#maxAgeMs) {
      this.#sessions.delete(id);
      return null;
    }
    return session;
  }
}

function _key(secret: string): string {
  return tokenDigest(secret).toString('base64url');
}

// Makes room for one more entry by dropping the oldest (a Map keeps insertion order).
function _bounded<V>(map: Map<string, V>, max: number): Map<string, V> {
  while (map.size >= max) map.delete(map.keys().next().value as string);
  return map;
}
