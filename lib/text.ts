// Text helpers for messages: what a log line, an error or a summary quotes stays on one line and short;
// what a terminal is shown of text others chose has its control characters escaped.

/** `text` on one line: each run of whitespace one space, none at either end. */
export function collapseSpace(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** `text` cut to at most `max` characters, the last of them `…` when anything was cut. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  // Never half a surrogate pair: a lone one is not text, and shows as garbage.
  const code = text.charCodeAt(max - 2);
  return `${text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 2 : max - 1)}…`;
}

/** `text` on one line and at most `max` characters: a summary or preview of a longer text. */
export function clipLine(text: string, max: number): string {
  return clip(collapseSpace(text), max);
}

/** `value` as a message quotes it: JSON, and short. */
export function show(value: unknown): string {
  return clip(JSON.stringify(value) ?? String(value), 65);
}

/** What a body that is not the API's JSON says: a proxy's short text is worth passing on; nothing or an HTML page is not. */
export function plainText(text: string): string {
  const trimmed = text.trim();
  return trimmed === '' || trimmed.startsWith('<') ? 'no error description' : trimmed;
}

/** `: <text>` for a body with something in it, else nothing: the end of a message that quotes the body. */
export function detail(text: string): string {
  const trimmed = text.trim();
  return trimmed === '' ? '' : `: ${trimmed}`;
}

/**
 * `text` with the user:password (or user) part of every URL in it replaced by `[redacted]`: a log
 * line or a message that quotes a URL never shows a credential written into it.
 */
export function hideUrlCredentials(text: string): string {
  let out = '';
  let from = 0;
  // A scan from each "://" to where the authority ends: linear, where a regex anchored on the scheme is not.
  for (let at = text.indexOf('://'); at !== -1; at = text.indexOf('://', at + 3)) {
    const start = at + 3;
    let last = -1;
    for (let i = start; i < text.length && !_AUTHORITY_END.has(text[i]!); i++) if (text[i] === '@') last = i;
    if (last === -1) continue;
    out += `${text.slice(from, start)}[redacted]`;
    from = last;
  }
  return from === 0 ? text : out + text.slice(from);
}

// Where the authority of a URL ends in a message: its own delimiters, or what cannot be part of it in text.
const _AUTHORITY_END = new Set(['/', '?', '#', ' ', '\t', '\n', '\r', '"', "'", '<', '>', '\\']);

/** `path` without slashes at either end: a hook name as routes and mappings compare it. */
export function trimSlashes(path: string): string {
  return path.replace(/^\/+|\/+$/g, '');
}

/** `path` without trailing slashes: a base path or URL to append to. */
export function trimTrailingSlashes(path: string): string {
  return path.replace(/\/+$/, '');
}

/** Quotes an argument for a POSIX shell when it holds anything but plain characters. */
export function shellWord(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

// C0 and C1 controls with DEL, the Unicode line and paragraph separators, and the bidirectional
// embeddings, overrides and isolates that can reorder what a line appears to say.
const _UNSAFE = /[\u0000-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069]/g;
const _NAMED: Readonly<Record<string, string>> = {
  '\n': '\\n',
  '\t': '\\t',
  '\r': '\\r',
  '\v': '\\v',
  '\f': '\\f',
  '\b': '\\b',
  '\0': '\\0',
};

/** `text` with every unsafe character as an escape (`\r`, `\x1b`, `\u2028`); "\n" too unless kept. */
export function escapeControls(text: string, keepNewlines: boolean): string {
  return text.replace(_UNSAFE, (char) => {
    if (char === '\n' && keepNewlines) return char;
    const named = _NAMED[char];
    if (named !== undefined) return named;
    const code = char.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/**
 * `value` as one line of JSON in which every unsafe character is a `\u` escape: JSON.stringify
 * escapes the C0 controls but leaves DEL, the C1 controls, the line separators and the
 * bidirectional controls as they are. The same value for a JSON reader; nothing for a terminal.
 */
export function jsonLine(value: unknown): string {
  return `${
    (JSON.stringify(value) ?? 'null').replace(
      _UNSAFE,
      (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
    )
  }\n`;
}
