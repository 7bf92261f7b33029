// The URLs of the config that carry a user or password (refused).
//
// A user:password written into a URL of the config: a fetch sends it to any host a redirect names,
// and every message that quotes the URL shows it. Each credential has a key of its own instead.

import { type Issue, join } from '../schema.ts';

/** A problem for every string in `value` that is a URL with a user or password in it, at its key path. */
export function urlCredentials(value: unknown): Issue[] {
  const issues: Issue[] = [];
  // Iterative, so a value nested however deep is no stack overflow.
  const todo: [unknown, string][] = [[value, '']];
  for (let next = todo.pop(); next !== undefined; next = todo.pop()) {
    const [item, at] = next;
    if (typeof item === 'string') {
      if (_hasUserinfo(item)) {
        issues.push({
          path: at,
          message:
            'must not hold a user or password in the URL (user:password@host); put the credential in the key meant for it',
        });
      }
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) todo.push([item[i], join(at, i)]);
    } else if (typeof item === 'object' && item !== null) {
      for (const key of Object.keys(item).reverse()) todo.push([(item as Record<string, unknown>)[key], join(at, key)]);
    }
  }
  return issues;
}

// A whole string that parses as a URL and names a user or a password (`https://u:p@h`, `https://tok@h`).
function _hasUserinfo(text: string): boolean {
  if (!text.includes('@') || !text.includes('://') || !URL.canParse(text.trim())) return false;
  const url = new URL(text.trim());
  return url.username !== '' || url.password !== '';
}
