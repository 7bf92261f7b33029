/**
 * A tiny schema checker: each schema checks one value, reports every problem with its
 * key path, and returns the checked value (or `undefined` when it is invalid). Used for
 * the configuration at load and for every request payload.
 */

import { isPlainObject } from './object.ts';

/** One problem found in a value, at a key path such as `hooks.path` or `agents.list[0].id`. */
export interface Issue {
  path: string;
  message: string;
}

/** Collects problems, and keys that load but are not acted on (they are reported, not refused). */
export interface Report {
  issues: Issue[];
  ignored: string[];
}

/** Checks `value` found at `at`; pushes problems to `report`; returns `undefined` when invalid. */
export type Schema<T> = (value: unknown, at: string, report: Report) => T | undefined;

interface Field<T> {
  schema: Schema<T>;
  optional: boolean;
}
type Shape = Record<string, Schema<unknown> | Field<unknown>>;
type Out<F> = F extends Field<infer T> ? T : F extends Schema<infer T> ? T : never;
type RequiredKeys<S> = { [K in keyof S]: S[K] extends Field<unknown> ? never : K }[keyof S];
type OptionalKeys<S> = Exclude<keyof S, RequiredKeys<S>>;
type Flatten<T> = { [K in keyof T]: T[K] } & {};
/** The checked value type of an object shape: optional fields may be absent. */
export type Infer<S> = Flatten<{ [K in RequiredKeys<S>]: Out<S[K]> } & { [K in OptionalKeys<S>]?: Out<S[K]> }>;

/** The outcome of checking a value against a schema. */
export type Checked<T> = { ok: true; value: T; ignored: string[] } | { ok: false; issues: Issue[]; ignored: string[] };

/** Runs a schema over a whole value. */
export function check<T>(schema: Schema<T>, value: unknown, at = ''): Checked<T> {
  const report: Report = { issues: [], ignored: [] };
  const result = schema(value, at, report);
  if (report.issues.length > 0 || result === undefined) {
    return { ok: false, issues: report.issues, ignored: report.ignored };
  }
  return { ok: true, value: result, ignored: report.ignored };
}

/** Formats an issue as `path: message` (just the message at the root). */
export function formatIssue(issue: Issue): string {
  return issue.path === '' ? issue.message : `${issue.path}: ${issue.message}`;
}

const _IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** Appends a key to a path: `a.b`, or `a["odd key"]` when the key is not a plain name. */
export function join(at: string, key: string | number): string {
  if (typeof key === 'number') return `${at}[${key}]`;
  if (!_IDENTIFIER.test(key)) return `${at}[${JSON.stringify(key)}]`;
  return at === '' ? key : `${at}.${key}`;
}

/** Marks an object field as optional: absent (or `undefined`) is fine, anything else is checked. */
export function optional<T>(schema: Schema<T>): Field<T> {
  return { schema, optional: true };
}

/** Describes a value's type for messages: `null`, `array`, `string`, ... */
export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/**
 * A value an object, array or record takes as it is, without judging it: the config keeps a key's
 * `${NAME}` text this way when the command reading it does not need that variable.
 */
export class Unjudged {
  readonly value: unknown;
  constructor(value: unknown) {
    this.value = value;
  }
}

function _item<T>(schema: Schema<T>, value: unknown, at: string, report: Report): T | undefined {
  return value instanceof Unjudged ? (value.value as T) : schema(value, at, report);
}

function _fail(report: Report, path: string, message: string): undefined {
  report.issues.push({ path, message });
  return undefined;
}

export interface StringRules {
  /** Trim white space before the other rules apply; the trimmed text is the value. */
  trim?: boolean;
  nonEmpty?: boolean;
  maxLength?: number;
  /** A pattern the value must match, with the rule's wording for messages. */
  pattern?: { regex: RegExp; rule: string };
}

/** A string, optionally trimmed, non-empty, bounded or matching a pattern. */
export function string(rules: StringRules = {}): Schema<string> {
  return (value, at, report) => {
    if (typeof value !== 'string') return _fail(report, at, `must be a string, got ${typeName(value)}`);
    const text = rules.trim ? value.trim() : value;
    if (rules.nonEmpty && text.length === 0) return _fail(report, at, 'must be a non-empty string');
    if (rules.maxLength !== undefined && text.length > rules.maxLength) {
      return _fail(report, at, `must be at most ${rules.maxLength} characters`);
    }
    if (rules.pattern && !rules.pattern.regex.test(text)) return _fail(report, at, rules.pattern.rule);
    return text;
  };
}

/** One of a fixed set of strings. */
export function literal<const T extends readonly string[]>(...values: T): Schema<T[number]> {
  return (value, at, report) => {
    if (typeof value === 'string' && values.includes(value)) return value as T[number];
    return _fail(report, at, `must be one of ${values.map((v) => JSON.stringify(v)).join(', ')}`);
  };
}

/** `true` or `false`. */
export const boolean: Schema<boolean> = (value, at, report) =>
  typeof value === 'boolean' ? value : _fail(report, at, `must be a boolean, got ${typeName(value)}`);

export interface NumberRules {
  integer?: boolean;
  min?: number;
  max?: number;
  /** Strictly greater than this. */
  above?: number;
}

/** A finite number within bounds. */
export function number(rules: NumberRules = {}): Schema<number> {
  return (value, at, report) => {
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      return _fail(report, at, `must be a number, got ${typeName(value)}`);
    }
    if (rules.integer && !Number.isInteger(value)) return _fail(report, at, 'must be an integer');
    if (rules.above !== undefined && !(value > rules.above)) {
      return _fail(report, at, `must be greater than ${rules.above}`);
    }
    if (rules.min !== undefined && value < rules.min) return _fail(report, at, `must be at least ${rules.min}`);
    if (rules.max !== undefined && value > rules.max) return _fail(report, at, `must be at most ${rules.max}`);
    return value;
  };
}

/** An array whose every item passes `item`. */
export function array<T>(item: Schema<T>, rules: { maxItems?: number } = {}): Schema<T[]> {
  return (value, at, report) => {
    if (!Array.isArray(value)) return _fail(report, at, `must be an array, got ${typeName(value)}`);
    if (rules.maxItems !== undefined && value.length > rules.maxItems) {
      return _fail(report, at, `must have at most ${rules.maxItems} items`);
    }
    const before = report.issues.length;
    const out = value.map((v, i) => _item(item, v, join(at, i), report));
    return report.issues.length === before ? (out as T[]) : undefined;
  };
}

/** A plain object used as a map: any keys, every value passing `item`. */
export function record<T>(item: Schema<T>): Schema<Record<string, T>> {
  return (value, at, report) => {
    if (!isPlainObject(value)) return _fail(report, at, `must be an object, got ${typeName(value)}`);
    const before = report.issues.length;
    const out: Record<string, T> = {};
    for (const [key, v] of Object.entries(value)) {
      const checked = _item(item, v, join(at, key), report);
      if (checked !== undefined) out[key] = checked;
    }
    return report.issues.length === before ? out : undefined;
  };
}

export interface ObjectOptions {
  /** Keys accepted and reported as ignored instead of refused (e.g. keys of a pasted config we do not act on). */
  ignored?: readonly string[];
  /** `ignore`: every unknown key is accepted and reported as ignored, as `ignored` does for the keys it names. */
  unknown?: 'refuse' | 'ignore';
}

/** An object with exactly these fields: a missing required field or an unknown key is a problem. */
export function object<S extends Shape>(shape: S, options: ObjectOptions = {}): Schema<Infer<S>> {
  const known = Object.keys(shape);
  // Each key's place in a path is worked out once, not on every value checked (a journal replay checks thousands).
  const fields = Object.entries(shape).map(([key, spec]) => ({
    key,
    field: (typeof spec === 'function' ? { schema: spec, optional: false } : spec) as Field<unknown>,
    first: join('', key),
    after: _IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`,
  }));
  return (value, at, report) => {
    if (!isPlainObject(value)) return _fail(report, at, `must be an object, got ${typeName(value)}`);
    const before = report.issues.length;
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      if (Object.hasOwn(shape, key)) continue;
      if (options.unknown === 'ignore' || options.ignored?.includes(key)) {
        report.ignored.push(join(at, key));
        continue;
      }
      const guess = suggest(key, known);
      _fail(report, join(at, key), `unknown key${guess === null ? '' : ` (did you mean "${guess}"?)`}`);
    }
    for (const { key, field, first, after } of fields) {
      const v = Object.hasOwn(value, key) ? value[key] : undefined;
      const path = at === '' ? first : at + after;
      if (v === undefined) {
        if (!field.optional) _fail(report, path, 'is required');
        continue;
      }
      const checked = _item(field.schema, v, path, report);
      if (checked !== undefined) out[key] = checked;
    }
    return report.issues.length === before ? (out as Infer<S>) : undefined;
  };
}

/** Adds a rule to a schema; `rule` returns a message when the (already valid) value breaks it. */
export function refine<T>(schema: Schema<T>, rule: (value: T) => string | null): Schema<T> {
  return (value, at, report) => {
    const checked = schema(value, at, report);
    if (checked === undefined) return undefined;
    const problem = rule(checked);
    return problem === null ? checked : _fail(report, at, problem);
  };
}

/** The closest known name to a misspelt one, or `null` when none is close enough to be a typo. */
export function suggest(name: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Math.max(2, Math.floor(name.length / 3)) + 1;
  for (const candidate of known) {
    const d = _distance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

// Levenshtein distance over two rows; names are short, so this is cheap.
function _distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
    }
    prev = row;
  }
  return prev[b.length]!;
}
