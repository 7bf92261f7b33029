// {{ }} templates and payload paths, reading own properties only.

import type { Schema } from '../schema.ts';

/** A step in a path: a string names an own property, a number indexes a real array. */
export type PathSegment = string | number;

/** One compiled `{{ }}` expression; `text` is the expression as written (trimmed), for reports. */
export type TemplateExpr =
  & { readonly text: string }
  & (
    | { readonly root: 'payload'; readonly path: readonly PathSegment[] }
    | { readonly root: 'headers' | 'query'; readonly name: string }
    | { readonly root: 'path' | 'now' }
  );

/** A template compiled once at config load; render it any number of times. */
export interface Template {
  readonly source: string;
  readonly parts: readonly (string | TemplateExpr)[];
}

/** What an expression can read: the request as the mapping sees it. */
export interface TemplateContext {
  payload: unknown;
  headers: Record<string, string>;
  query: Record<string, string>;
  /** The hook name. */
  path: string;
  now: Date;
}

export type CompileResult = { ok: true; template: Template } | { ok: false; error: string };

/**
 * A rendered template: the text, and the expressions (as written, each once, in order) that
 * resolved to nothing — missing, `null`, or not data — and so rendered as the empty string.
 * An expression that found an empty string did resolve.
 */
export interface Rendered {
  text: string;
  unresolved: string[];
}

// Not exhaustive on purpose: with own-property reads these are the names that could
// still reach a prototype or a constructor, so they never resolve, even as own keys.
const _BLOCKED = new Set(['__proto__', 'prototype', 'constructor']);
const _HEAD = /^[\w$-]+/;
// `.name`, `[3]` or `["any key"]` (a JSON string literal, so `"` and `\` can be escaped).
const _SEGMENT = /\.([\w$-]+)|\[(0|[1-9]\d*)\]|\[("(?:[^"\\]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*")\]/y;

/**
 * Compiles `{{ expr }}` templates. An expression ends at the first `}}`; text outside
 * expressions, a lone `{` or `}` included, is copied verbatim.
 */
export function compileTemplate(source: string): CompileResult {
  const parts: (string | TemplateExpr)[] = [];
  let at = 0;
  for (let open = source.indexOf('{{'); open !== -1; open = source.indexOf('{{', at)) {
    const close = source.indexOf('}}', open + 2);
    if (close === -1) return { ok: false, error: `unclosed "{{" at offset ${open}` };
    const expr = _parseExpr(source.slice(open + 2, close).trim());
    if (typeof expr === 'string') return { ok: false, error: `${expr} at offset ${open}` };
    if (open > at) parts.push(source.slice(at, open));
    parts.push(expr);
    at = close + 2;
  }
  if (at < source.length) parts.push(source.slice(at));
  return { ok: true, template: { source, parts } };
}

/** The config's schema of a template: a string that compiles, checked (and compiled) at load. */
export const templateSchema: Schema<Template> = (value, at, report) => {
  if (typeof value !== 'string') {
    report.issues.push({ path: at, message: 'must be a string' });
    return undefined;
  }
  const compiled = compileTemplate(value);
  if (!compiled.ok) report.issues.push({ path: at, message: `must be a valid template: ${compiled.error}` });
  return compiled.ok ? compiled.template : undefined;
};

/** True when `source` holds at least one `{{ }}`, i.e. its value depends on the request. */
export function isTemplated(source: string): boolean {
  const open = source.indexOf('{{');
  return open !== -1 && source.indexOf('}}', open + 2) !== -1;
}

/**
 * Renders a compiled template; anything missing renders as the empty string and is named in
 * `unresolved`, so a caller can say which placeholders found nothing rather than send a hollow text.
 */
export function render(template: Template, context: TemplateContext): Rendered {
  let text = '';
  let unresolved: string[] | undefined;
  for (const part of template.parts) {
    if (typeof part === 'string') {
      text += part;
      continue;
    }
    const value = _format(_evaluate(part, context));
    if (value === undefined) {
      unresolved ??= [];
      if (!unresolved.includes(part.text)) unresolved.push(part.text);
    } else text += value;
  }
  return { text, unresolved: unresolved ?? [] };
}

function _parseExpr(text: string): TemplateExpr | string {
  if (text === '') return 'empty expression';
  const path = parsePath(text);
  if (path === null) return `invalid expression ${JSON.stringify(text)}`;
  const [head, ...rest] = path;
  if (head === 'path' || head === 'now') {
    return rest.length === 0 ? { text, root: head } : `"${head}" takes no path`;
  }
  if (head === 'headers' || head === 'query') {
    const [name] = rest;
    return rest.length === 1 && typeof name === 'string'
      ? { text, root: head, name }
      : `"${head}" takes exactly one name`;
  }
  return { text, root: 'payload', path: head === 'payload' ? rest : path };
}

/** Parses a payload path such as `messages[0].subject` into its segments, or `null` when malformed. */
export function parsePath(text: string): PathSegment[] | null {
  const head = _HEAD.exec(text);
  if (head === null) return null;
  const segments: PathSegment[] = [head[0]];
  for (let at = head[0].length; at < text.length; at = _SEGMENT.lastIndex) {
    _SEGMENT.lastIndex = at;
    const m = _SEGMENT.exec(text);
    if (m === null) return null;
    segments.push(m[1] ?? (m[2] !== undefined ? Number(m[2]) : (JSON.parse(m[3] ?? '""') as string)));
  }
  return segments;
}

function _evaluate(expr: TemplateExpr, context: TemplateContext): unknown {
  switch (expr.root) {
    case 'payload':
      return valueAt(context.payload, expr.path);
    case 'headers':
      return _own(context.headers, expr.name.toLowerCase());
    case 'query':
      return _own(context.query, expr.name);
    case 'path':
      return context.path;
    case 'now':
      return context.now.toISOString();
  }
}

/**
 * The value at `path` below `root`, reading own data properties only (as templates do; number
 * segments index arrays only); `undefined` when anything along it is missing.
 */
export function valueAt(value: unknown, path: readonly PathSegment[]): unknown {
  let current = value;
  for (const segment of path) {
    if (typeof segment === 'number') current = Array.isArray(current) ? _own(current, String(segment)) : undefined;
    else current = _own(current, segment);
    if (current === undefined) return undefined;
  }
  return current;
}

// Own data properties of real objects only: no prototype chain, no getter runs, and no
// primitive is boxed (so a string's `length` or `0` is not readable, an array's is).
function _own(value: unknown, key: string): unknown {
  if (typeof value !== 'object' || value === null || _BLOCKED.has(key)) return undefined;
  return Object.getOwnPropertyDescriptor(value, key)?.value;
}

// The text of a value, or `undefined` for one that is not data (missing, null, a function, a symbol).
function _format(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (typeof value === 'object' && value !== null) return JSON.stringify(value);
  return undefined;
}
