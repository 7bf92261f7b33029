// Exact and prefix path matching, splitting a target into path and query.

import { trimSlashes } from '../text.ts';

/** A route: the methods it answers and what handles it. */
export interface Route<H> {
  methods: readonly string[];
  handler: H;
}

/** A matched route and the rest of the path after a `/*` pattern (decoded; `''` when none). */
export interface Match<H> {
  route: Route<H>;
  rest: string;
}

/**
 * A tiny router: exact paths, and prefixes written `/base/*` that also match `/base`
 * itself. It matches paths only; the caller decides what an unlisted method means,
 * because some checks (a token in the URL) come before the method check.
 */
export class Router<H> {
  #routes: { path: string; wildcard: boolean; route: Route<H> }[] = [];

  /** Adds a route; earlier routes win. */
  add(methods: readonly string[], pattern: string, handler: H): this {
    const wildcard = pattern.endsWith('/*');
    this.#routes.push({ path: wildcard ? pattern.slice(0, -2) : pattern, wildcard, route: { methods, handler } });
    return this;
  }

  /** Finds the route for a path, or `null` (also for a path whose escapes do not decode). */
  find(pathname: string): Match<H> | null {
    for (const { path, wildcard, route } of this.#routes) {
      if (pathname === path) return { route, rest: '' };
      if (!wildcard || !pathname.startsWith(`${path}/`)) continue;
      // `/hooks//wake/` names the same hook as `/hooks/wake`.
      const raw = pathname.slice(path.length + 1);
      const trimmed = raw.startsWith('/') || raw.endsWith('/') ? trimSlashes(raw) : raw;
      // Most names carry no escape: they are their own decoding.
      const rest = trimmed.includes('%') ? _decode(trimmed) : trimmed;
      return rest === null ? null : { route, rest };
    }
    return null;
  }
}

// Most targets have no query: they all share this one, which nothing may change.
const _NO_QUERY = new URLSearchParams();

/** Splits a request target into its path and query without trusting it to be a full URL; the query is read-only. */
export function splitTarget(target: string): { pathname: string; query: URLSearchParams } {
  const mark = target.indexOf('?');
  if (mark === -1) return { pathname: target === '' ? '/' : target, query: _NO_QUERY };
  const pathname = target.slice(0, mark);
  return { pathname: pathname === '' ? '/' : pathname, query: new URLSearchParams(target.slice(mark + 1)) };
}

function _decode(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}
