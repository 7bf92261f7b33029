/**
 * The length of every function in a TypeScript file, read from its text alone (no parser ships with
 * the project): the functions of lib/ longer than a limit, for a person at a terminal and for the
 * spec that keeps lib/'s functions at 60 lines or fewer.
 *
 *   node --import tsx tools/function-lengths.ts [--max 60] [files or folders...]   (default: lib)
 *
 * A function is a body in braces: a `function`, a method, an accessor, a constructor or an arrow
 * function's block. Its length counts the lines from the one its signature starts on to the one its
 * body closes on, nested functions included; an arrow function with an expression body is not counted.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import process, { argv, stdout } from 'node:process';
import { pathToFileURL } from 'node:url';

/** One function of a file: its name as written (`<anonymous>` when it has none), where it starts and how long it is. */
export interface FunctionSpan {
  name: string;
  line: number;
  lines: number;
}

interface Token {
  text: string;
  line: number;
}

// Keywords after which a `(...)` is a condition or a clause, never a parameter list.
const _CLAUSES = new Set(['if', 'for', 'while', 'switch', 'catch', 'with']);
// Tokens after which a `/` starts a regular expression rather than a division.
const _BEFORE_REGEX = new Set([
  '(',
  ',',
  '=',
  ':',
  '[',
  '!',
  '&',
  '|',
  '?',
  '{',
  '}',
  ';',
  '+',
  '-',
  '*',
  '%',
  '<',
  '>',
  '~',
  '^',
  '=>',
  '&&',
  '||',
  '??',
  'return',
  'typeof',
  'case',
  'of',
  'in',
  'yield',
  'await',
  'void',
  'delete',
]);
const _PUNCTUATION = ['=>', '...', '?.', '&&', '||', '??', '==', '!=', '<=', '>='];

/** The tokens of `source` that matter to finding functions: words and punctuation, with comments, strings, templates' text and regular expressions left out. */
function _tokens(source: string): Token[] {
  const tokens: Token[] = [];
  let line = 1;
  let i = 0;
  // Open template literals, each with the brace depth its current `${` started at.
  const templates: number[] = [];
  let braces = 0;
  const push = (text: string): void => {
    tokens.push({ text, line });
  };
  const skipTemplateText = (): void => {
    // Inside a template's text: up to its end (the template closes) or a `${` (an expression opens).
    while (i < source.length) {
      const c = source[i]!;
      if (c === '\\') {
        if (source[i + 1] === '\n') line++;
        i += 2;
        continue;
      }
      if (c === '\n') line++;
      if (c === '`') {
        i++;
        push('`string`');
        return;
      }
      if (c === '$' && source[i + 1] === '{') {
        i += 2;
        templates.push(braces);
        braces++;
        push('(');
        return;
      }
      i++;
    }
  };
  while (i < source.length) {
    const c = source[i]!;
    const next = source[i + 1];
    if (c === '\n') {
      line++;
      i++;
    } else if (c === ' ' || c === '\t' || c === '\r') {
      i++;
    } else if (c === '/' && next === '/') {
      while (i < source.length && source[i] !== '\n') i++;
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      const stop = end === -1 ? source.length : end + 2;
      for (let j = i; j < stop; j++) if (source[j] === '\n') line++;
      i = stop;
    } else if (c === "'" || c === '"') {
      i++;
      while (i < source.length && source[i] !== c && source[i] !== '\n') i += source[i] === '\\' ? 2 : 1;
      i++;
      push('`string`');
    } else if (c === '`') {
      i++;
      skipTemplateText();
    } else if (c === '/' && (tokens.length === 0 || _BEFORE_REGEX.has(tokens[tokens.length - 1]!.text))) {
      // A regular expression: up to its closing slash outside a character class, then its flags.
      i++;
      let inClass = false;
      while (i < source.length && source[i] !== '\n') {
        const r = source[i]!;
        if (r === '\\') {
          i += 2;
          continue;
        }
        if (r === '[') inClass = true;
        else if (r === ']') inClass = false;
        else if (r === '/' && !inClass) break;
        i++;
      }
      i++;
      while (i < source.length && /[a-z]/.test(source[i]!)) i++;
      push('`regex`');
    } else if (/[\w$#@]/.test(c)) {
      let j = i + 1;
      while (j < source.length && /[\w$]/.test(source[j]!)) j++;
      push(source.slice(i, j));
      i = j;
    } else if (c === '{') {
      braces++;
      push('{');
      i++;
    } else if (c === '}') {
      braces--;
      i++;
      if (templates.length > 0 && templates[templates.length - 1] === braces) {
        // The end of a template's `${ }`: back into its text.
        templates.pop();
        push(')');
        skipTemplateText();
      } else {
        push('}');
      }
    } else {
      const long = _PUNCTUATION.find((p) => source.startsWith(p, i));
      push(long ?? c);
      i += long?.length ?? 1;
    }
  }
  return tokens;
}

const _BEFORE_TYPE_LITERAL = new Set([':', '|', '&', '<', ',', '?']);
// Tokens a return type cannot hold: reaching one while walking back from a brace means the brace follows no signature.
const _NOT_A_TYPE = new Set([
  ';',
  '{',
  '(',
  '[',
  '=',
  ',',
  'interface',
  'class',
  'extends',
  'implements',
  'namespace',
  'declare',
  'type',
  'enum',
  'return',
]);

const _OPEN: ReadonlyMap<string, string> = new Map([[')', '('], [']', '['], ['}', '{']]);

/** Every function of `source` with a body in braces, in the order their bodies open. */
export function functionSpans(source: string): FunctionSpan[] {
  const tokens = _tokens(source);
  // The index of each bracket's partner, found once.
  const partner = new Map<number, number>();
  const stack: number[] = [];
  tokens.forEach((token, index) => {
    if (token.text === '(' || token.text === '[' || token.text === '{') stack.push(index);
    const open = _OPEN.get(token.text);
    if (open === undefined) return;
    // Unbalanced text (a misread regular expression, say) pairs what it can.
    while (stack.length > 0 && tokens[stack[stack.length - 1]!]!.text !== open) stack.pop();
    const start = stack.pop();
    if (start === undefined) return;
    partner.set(index, start);
    partner.set(start, index);
  });
  const spans: FunctionSpan[] = [];
  tokens.forEach((token, index) => {
    if (token.text !== '{') return;
    const start = _signatureStart(tokens, partner, index);
    if (start === null) return;
    const close = partner.get(index);
    if (close === undefined) return;
    spans.push({
      name: _name(tokens, start),
      line: tokens[start]!.line,
      lines: tokens[close]!.line - tokens[start]!.line + 1,
    });
  });
  return spans;
}

/** Where the signature of the function whose body opens at `brace` starts (its parameter list's `(`, or the one parameter of `x => {`); `null` when the brace opens no function. */
function _signatureStart(tokens: readonly Token[], partner: ReadonlyMap<number, number>, brace: number): number | null {
  let before = brace - 1;
  if (before < 0) return null;
  if (tokens[before]!.text === '=>') {
    const arrow = before - 1;
    if (arrow < 0) return null;
    if (tokens[arrow]!.text !== ')') {
      // `x => {`, or a return type before the arrow: `(x): T => {`.
      const typed = _typedParameters(tokens, partner, arrow);
      return typed ?? arrow;
    }
    return partner.get(arrow) ?? null;
  }
  // A type literal: `): { ok: boolean } {`, `Promise<{ y: number }>`.
  if (_BEFORE_TYPE_LITERAL.has(tokens[before]!.text)) return null;
  if (tokens[before]!.text !== ')') {
    // A return type between the parameters and the body: `f(x): Promise<T> {`.
    const typed = _typedParameters(tokens, partner, before);
    if (typed === null) return null;
    return _isParameterList(tokens, typed) ? typed : null;
  }
  const open = partner.get(before);
  if (open === undefined) return null;
  return _isParameterList(tokens, open) ? open : null;
}

/** Whether the `(` at `open` starts a parameter list: not a condition, a clause or a call's arguments. */
function _isParameterList(tokens: readonly Token[], open: number): boolean {
  let before = open - 1;
  // Type parameters: `f<T>(`.
  if (before >= 0 && tokens[before]!.text === '>') {
    let depth = 0;
    for (; before >= 0; before--) {
      const text = tokens[before]!.text;
      if (text === '>') depth++;
      else if (text === '<' && --depth === 0) break;
    }
    before--;
  }
  if (before < 0) return false;
  const text = tokens[before]!.text;
  if (_CLAUSES.has(text)) return false;
  return /^[\w$#]+$/.test(text) || text === '*';
}

/** Back from `end` (the last token of a return type) to the `(` of the parameter list the type follows, when `end` closes `(...): Type`; else `null`. */
function _typedParameters(tokens: readonly Token[], partner: ReadonlyMap<number, number>, end: number): number | null {
  for (let i = end; i >= 0; i--) {
    const text = tokens[i]!.text;
    if (text === ')' || text === ']' || text === '}') {
      const open = partner.get(i);
      if (open === undefined) return null;
      // `(...)` followed by `:` is the parameter list this type belongs to.
      if (text === ')' && tokens[i + 1]?.text === ':') return open;
      i = open;
      continue;
    }
    if (_NOT_A_TYPE.has(text)) return null;
  }
  return null;
}

/** The name a function is known by: `function NAME`, a method or accessor's name, or what an arrow function is assigned to. */
function _name(tokens: readonly Token[], start: number): string {
  for (let i = start - 1; i >= Math.max(0, start - 4); i--) {
    const text = tokens[i]!.text;
    if (/^[\w$#]+$/.test(text) && !_NOT_A_NAME.includes(text)) {
      if (
        tokens[i + 1]?.text === '=' || tokens[i + 1]?.text === ':' || tokens[i + 1]?.text === '(' ||
        tokens[i + 1]?.text === '<'
      ) return text;
      if (i + 1 === start) return text;
    }
    if (text === '(' || text === ',' || text === ';' || text === '{') break;
  }
  return '<anonymous>';
}

const _NOT_A_NAME = [
  'function',
  'async',
  'get',
  'set',
  'static',
  'private',
  'public',
  'protected',
  'readonly',
  'new',
  'return',
  'await',
  'yield',
  'typeof',
  'case',
  'export',
  'default',
  'const',
  'let',
  'var',
];

async function _files(paths: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const path of paths) {
    if (path.endsWith('.ts')) {
      files.push(path);
      continue;
    }
    const entries = await readdir(path, { withFileTypes: true, recursive: true });
    for (const entry of entries) {
      if (entry.isFile() && entry.name.endsWith('.ts')) files.push(relative('.', join(entry.parentPath, entry.name)));
    }
  }
  return files.sort();
}

/** Every function longer than `max` lines in `paths` (files or folders), longest first, as `file:line name (n lines)`. */
export async function longFunctions(paths: readonly string[], max: number): Promise<string[]> {
  const found: { where: string; lines: number }[] = [];
  for (const file of await _files(paths)) {
    for (const span of functionSpans(await readFile(file, 'utf8'))) {
      if (span.lines > max) {
        found.push({ where: `${file}:${span.line} ${span.name} (${span.lines} lines)`, lines: span.lines });
      }
    }
  }
  return found.sort((a, b) => b.lines - a.lines).map((f) => f.where);
}

if (argv[1] !== undefined && import.meta.url === pathToFileURL(argv[1]).href) {
  const args = argv.slice(2);
  const at = args.indexOf('--max');
  const max = at === -1 ? 60 : Number(args.splice(at, 2)[1]);
  const long = await longFunctions(args.length > 0 ? args : ['lib'], max);
  stdout.write(long.map((l) => `${l}\n`).join(''));
  if (long.length > 0) process.exitCode = 1;
}
