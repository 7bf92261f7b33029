// The JSONC reader (comments, trailing commas, line and column in errors).

/** The outcome of reading a JSONC text: the value, or one error naming its 1-based line and column. */
export type JsoncResult = { ok: true; value: unknown } | { ok: false; error: string };

/** `at` is a UTF-16 offset into the text after its BOM, null when the parser ran out of input. */
type _Fault = { at: number | null; rule: string };

const _WORDS: Readonly<Record<string, string>> = { t: 'true', f: 'false', n: 'null' };

/** Parses JSON that may carry `//` and `/* *\/` comments, trailing commas and a leading BOM. */
export function parseJsonc(text: string): JsoncResult {
  const body = _unbom(text);
  const { out, fault } = _scan(body);
  let first: _Fault;
  try {
    const value: unknown = JSON.parse(out);
    if (fault === null) return { ok: true, value };
    first = fault;
  } catch (err) {
    const json = _translate((err as Error).message, out);
    // Running out of input is the comment's doing when one swallowed the rest of the text.
    first = fault === null || (json.at !== null && json.at < fault.at) ? json : fault;
  }
  return { ok: false, error: `${_where(body, first.at ?? out.trimEnd().length)}: ${first.rule}` };
}

/**
 * Blanks comments and trailing commas with spaces (newlines kept), so every offset in the result
 * is the offset of the same character in the input; drops a leading BOM. It does not validate.
 */
export function stripJsonc(text: string): string {
  return _scan(_unbom(text)).out;
}

function _unbom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

function _scan(text: string): { out: string; fault: { at: number; rule: string } | null } {
  const out = text.split('');
  const blank = (from: number, to: number): void => {
    for (let k = from; k < to; k++) if (out[k] !== '\n' && out[k] !== '\r') out[k] = ' ';
  };
  let comma = -1; // a comma that turns out trailing if the next token closes its container
  let prev = '';
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i);
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      const end = text.indexOf('\n', i);
      blank(i, end < 0 ? text.length : end);
      i = end < 0 ? text.length : end;
    } else if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      if (end < 0) {
        blank(i, text.length);
        return { out: out.join(''), fault: { at: i, rule: 'unterminated comment' } };
      }
      blank(i, end + 2);
      i = end + 1;
    } else if (!_isSpace(c)) {
      if ((c === ']' || c === '}') && comma >= 0) out[comma] = ' ';
      // `[,]`, `[1,,]` and `{"a":,}` stay as they are so JSON.parse rejects them.
      comma = c === ',' && prev !== '' && !'[{,:'.includes(prev) ? i : -1;
      prev = c;
      if (c === '"') i = _skipString(text, i);
    }
  }
  return { out: out.join(''), fault: null };
}

/** Index of the quote that closes the string opening at `i`, or the text length. */
function _skipString(s: string, i: number): number {
  let j = i + 1;
  while (j < s.length && s[j] !== '"') j += s[j] === '\\' ? 2 : 1;
  return j;
}

function _translate(message: string, out: string): _Fault {
  // V8 appends the offending input ("... is not valid JSON"), which may hold a secret: drop it.
  const rule = message.replace(/ in JSON at position.*$|, (?:\.\.\.)?".*$/s, '');
  const pos = / at position (\d+)/.exec(message);
  const at = pos ? Number(pos[1]) : /end of JSON input/.test(message) ? null : _locate(out);
  return { at, rule: rule.charAt(0).toLowerCase() + rule.slice(1) };
}

/**
 * Finds the error V8 reports without a position: a character that cannot start a value where
 * one is due, or a misspelled `true`/`false`/`null`. Valid JSON never trips it.
 */
function _locate(s: string): number | null {
  let due = true;
  let prev = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charAt(i);
    if (_isSpace(c)) continue;
    const word = _WORDS[c];
    if (c === '"') i = _skipString(s, i);
    else if (due && !(c === ']' && prev === '[')) {
      if (word === undefined && !/[[{\-\d]/.test(c)) return i;
      for (let k = 1; word !== undefined && k < word.length; k++) if (s[i + k] !== word[k]) return i + k;
    }
    due = c === '[' || c === ',' || c === ':';
    prev = c;
  }
  return null;
}

function _where(text: string, at: number): string {
  const before = text.slice(0, at);
  const column = [...before.slice(before.lastIndexOf('\n') + 1)].length + 1;
  return `line ${before.split('\n').length}, column ${column}`;
}

function _isSpace(c: string): boolean {
  return c === ' ' || c === '\t' || c === '\n' || c === '\r';
}
