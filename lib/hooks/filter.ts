// A mapping's filter on headers and payload values.

import { join, type Schema, typeName } from '../schema.ts';
import { clip } from '../text.ts';
import { parsePath, type PathSegment, valueAt } from './template.ts';

/** A mapping's `filter`: every listed header and payload value must be one of those allowed. */
export interface Filter {
  /** Lower-cased header names, each with the exact values allowed. */
  headers: readonly { name: string; values: readonly string[] }[];
  /** Payload paths, each with the JSON values allowed. */
  payload: readonly { path: readonly PathSegment[]; values: readonly unknown[] }[];
}

/** `filter` as the config writes it: `headers` (name → value or list) and `payload` (path → value or list). */
export const filterSchema: Schema<Filter> = (value, at, report) => {
  if (!_isObject(value)) return _fail(report, at, `must be an object, got ${typeName(value)}`);
  const before = report.issues.length;
  const filter: { headers: Filter['headers'][number][]; payload: Filter['payload'][number][] } = {
    headers: [],
    payload: [],
  };
  for (const key of Object.keys(value)) {
    if (key !== 'headers' && key !== 'payload') {
      _fail(report, join(at, key), 'unknown key (a filter has "headers" and "payload")');
    }
  }
  const headers = value['headers'];
  if (headers !== undefined && !_isObject(headers)) {
    _fail(report, join(at, 'headers'), `must be an object, got ${typeName(headers)}`);
  }
  for (const [name, allowed] of Object.entries(_isObject(headers) ? headers : {})) {
    const where = join(join(at, 'headers'), name);
    const values = Array.isArray(allowed) ? allowed : [allowed];
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) _fail(report, where, 'must be keyed by an HTTP header name');
    else if (values.length === 0 || values.some((v) => typeof v !== 'string')) {
      _fail(report, where, 'must be a string or a non-empty list of strings');
    } else filter.headers.push({ name: name.toLowerCase(), values: values as string[] });
  }
  const payload = value['payload'];
  if (payload !== undefined && !_isObject(payload)) {
    _fail(report, join(at, 'payload'), `must be an object, got ${typeName(payload)}`);
  }
  for (const [path, allowed] of Object.entries(_isObject(payload) ? payload : {})) {
    const where = join(join(at, 'payload'), path);
    const segments = parsePath(path.replace(/^payload\./, ''));
    const values = Array.isArray(allowed) ? allowed : [allowed];
    if (segments === null) {
      _fail(report, where, 'must be keyed by a payload path such as "action" or "data.object.status"');
    } else if (values.length === 0) _fail(report, where, 'must be a value or a non-empty list of values');
    else filter.payload.push({ path: segments, values });
  }
  return report.issues.length === before ? filter : undefined;
};

/** What a filter reads of a request: its headers (credential headers hidden) and its payload. */
export interface Filtered {
  headers: Readonly<Record<string, string>>;
  payload: unknown;
}

/** Whether a request passes the filter: each header and payload value listed is one of those allowed. */
export function filterHolds(filter: Filter, request: Filtered): boolean {
  return _miss(filter, request) === null;
}

/**
 * Why a request does not pass the filter, in words naming the first condition it fails and the
 * values allowed (the operator's), never the value found (the request's); `null` when it passes.
 */
export function filterMiss(filter: Filter, request: Filtered): string | null {
  const miss = _miss(filter, request);
  if (miss === null) return null;
  const what = miss.kind === 'header'
    ? `header ${miss.name}`
    : `payload ${miss.path.map((s) => (typeof s === 'number' ? `[${s}]` : s)).join('.').replaceAll('.[', '[')}`;
  if (!miss.found) return `${what} is missing`;
  const allowed = miss.values.slice(0, _NAMED_VALUES).map((v) => clip(JSON.stringify(v) ?? String(v), 64));
  return `${what} is not ${
    miss.values.length === 1
      ? allowed[0]
      : `one of ${allowed.join(', ')}${miss.values.length > _NAMED_VALUES ? ', …' : ''}`
  }`;
}

// Allowed values named in a miss: the rest are in the config.
const _NAMED_VALUES = 5;

type _Miss = { kind: 'header'; name: string; values: readonly unknown[]; found: boolean } | {
  kind: 'payload';
  path: readonly PathSegment[];
  values: readonly unknown[];
  found: boolean;
};

function _miss(filter: Filter, request: Filtered): _Miss | null {
  for (const { name, values } of filter.headers) {
    const found = request.headers[name];
    if (found === undefined || !values.includes(found)) {
      return { kind: 'header', name, values, found: found !== undefined };
    }
  }
  for (const { path, values } of filter.payload) {
    const found = valueAt(request.payload, path);
    if (found === undefined || !values.some((v) => _jsonEqual(v, found))) {
      return { kind: 'payload', path, values, found: found !== undefined };
    }
  }
  return null;
}

// Equality of JSON values: objects by their keys whatever the order, arrays item by item.
function _jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) =>
    Object.hasOwn(b, k) && _jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])
  );
}

function _isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function _fail(report: { issues: { path: string; message: string }[] }, path: string, message: string): undefined {
  report.issues.push({ path, message });
  return undefined;
}
