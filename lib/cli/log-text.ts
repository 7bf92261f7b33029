// The log as a person at a terminal reads it: one line per record with the time, the level, the
// message and the other fields as key=value. The logger always produces JSON lines; this turns
// them into text on the way out, so the logger (and its buffering) stays one code path.

import { LINES_LEFT_OUT, REFUSED_ALIKE } from '../edge/request-log.ts';

/** Which form `serve` writes its log in. */
export type LogFormat = 'json' | 'text';

export const LOG_FORMATS: readonly LogFormat[] = ['json', 'text'];

/** The form to use: the one asked for, else text on a terminal and JSON anywhere else (journald, a pipe). */
export function chooseLogFormat(asked: LogFormat | undefined, isTerminal: boolean): LogFormat {
  return asked ?? (isTerminal ? 'text' : 'json');
}

/** Rewrites a chunk of JSON log lines as text lines; a line that is not a JSON object passes unchanged. */
export function jsonLinesToText(chunk: string): string {
  return chunk.replace(/[^\n]+/g, (line) => {
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      return line;
    }
    return typeof record === 'object' && record !== null && !Array.isArray(record)
      ? formatRecord(record as Record<string, unknown>)
      : line;
  });
}

/** `2026-11-22T08:02:51.101Z info  request  id=ci-run-17 status=200 path=/hooks/wake`: one record as text. */
export function formatRecord(record: Record<string, unknown>): string {
  const { time, level, msg, ...fields } = record;
  const head = `${_text(time)} ${_text(level).padEnd(5)} ${_text(msg)}`;
  const counted = msg === REFUSED_ALIKE || msg === LINES_LEFT_OUT ? _counted(fields) : null;
  const rest = _pairs(counted === null ? fields : counted.rest);
  const said = counted === null ? head : `${head}  ${counted.text}`;
  return rest === '' ? said : `${said}  ${rest}`;
}

// A count of requests read as a sentence: `503 ERR_UNAVAILABLE ×41,233 from 127.0.0.1 in 10 s`.
function _counted(fields: Record<string, unknown>): { text: string; rest: Record<string, unknown> } | null {
  const { status, code, count, client, seconds, ...rest } = fields;
  if (typeof status !== 'number' || typeof count !== 'number' || typeof seconds !== 'number') return null;
  const what = typeof code === 'string' ? `${status} ${_safe(code)}` : String(status);
  const from = typeof client === 'string' ? ` from ${_safe(client)}` : '';
  return { text: `${what} ×${String(count).replace(/\B(?=(\d{3})+(?!\d))/g, ',')}${from} in ${seconds} s`, rest };
}

function _pairs(fields: Record<string, unknown>): string {
  return Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${_safe(key)}=${_value(value)}`)
    .join(' ');
}

// A bare word when it cannot be misread; otherwise JSON quoting, which also escapes every control character.
function _value(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  return _safe(typeof value === 'string' && !/^[\w.:/@+,-]+$/.test(value) ? JSON.stringify(text) : text);
}

function _text(value: unknown): string {
  return _safe(typeof value === 'string' ? value : String(value ?? ''));
}

// Messages and keys come from the code, but a stack or an error text may carry anything.
const _NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
function _safe(text: string): string {
  return text.replace(
    /[\u0000-\u001F\u007F-\u009F\u2028\u2029]/g,
    (char) => _NAMED[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
