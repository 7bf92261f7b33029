import { generateToken, tokenDigest } from '../guard/token.ts';

// The inspector's logins: one-time codes the CLI asks for over the control channel, and the
// sessions a code turns into. Both live in memory only, so a restart ends every session.

/** How long a login code may wait to be used, at most. */
export const LOGIN_CODE_TTL_MS = 60_000;

/** A live session: the cookie value is its key; the CSRF token guards its state-changing requests. */
export interface InspectorSession {
  csrf: string;
}

export interface SessionOptions {
  /** A session unused for this long is gone. */
  idleMs: number;
  /** The clock, in epoch milliseconds. */
  now: () => number;
}

// Codes waiting for their one use, and sessions: few of either make sense for one operator, so
// past these counts the oldest go first and a flood of `inspect` calls holds little memory.
const _MAX_CODES = 16;
const _MAX_SESSIONS = 32;

/** One-time login codes and the sessions they open. */
export class InspectorSessions {
  // Keyed by the digest of the secret, never the secret itself: a heap dump or a debug print of
  // the map shows nothing a visitor could present.
  readonly #codes = new Map<string, number>();
  readonly #sessions = new Map<string, InspectorSession & { seen: number }>();
  readonly #idleMs: number;
  readonly #now: () => number;

  constructor(options: SessionOptions) {
    this.#idleMs = options.idleMs;
    this.#now = options.now;
  }

  /** A new login code, valid once and until `expiresAt`. */
  issue(): { code: string; expiresAt: number } {
    const code = generateToken();
    const expiresAt = this.#now() + LOGIN_CODE_TTL_MS;
    _bounded(this.#codes, _MAX_CODES).set(_key(code), expiresAt);
    return { code, expiresAt };
  }

  /** Uses up a code: a new session's cookie value and CSRF token, or `null` for a code unknown, used or expired. */
  redeem(code: string): { id: string; session: InspectorSession } | null {
    const key = _key(code);
    const expiresAt = this.#codes.get(key);
    // Used once, whatever the outcome: a code that reached a log or a history is spent either way.
    this.#codes.delete(key);
    if (expiresAt === undefined || this.#now() > expiresAt) return null;
    const id = generateToken();
    const session = { csrf: generateToken(), seen: this.#now() };
    _bounded(this.#sessions, _MAX_SESSIONS).set(_key(id), session);
    return { id, session: { csrf: session.csrf } };
  }

  /** The session a cookie value names, still fresh; each use keeps it alive. */
  find(id: string): InspectorSession | null {
    const key = _key(id);
    const session = this.#sessions.get(key);
    if (session === undefined) return null;
    const now = this.#now();
    if (now - session.seen > this.#idleMs) {
      this.#sessions.delete(key);
      return null;
    }
    session.seen = now;
    return { csrf: session.csrf };
  }

  /** Ends a session (logout). */
  end(id: string): void {
    this.#sessions.delete(_key(id));
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
