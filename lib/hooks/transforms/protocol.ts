// The wire between the pool and a transform child: what a mapping calls, what the transform
// receives and returns, and the JSON lines they travel as.

/** Which transform a mapping calls: a module (a real path inside the root) and an optional export name. */
export interface TransformRef {
  module: string;
  export?: string;
}

/** What a transform receives, deep-frozen. */
export interface TransformInput {
  payload: unknown;
  headers: Record<string, string>;
  query: Record<string, string>;
  path: string;
}

/** Why a transform call produced no value. */
export type TransformFailure =
  | 'threw'
  | 'timeout'
  | 'crashed'
  | 'not-a-function'
  | 'load-failed'
  | 'unsupported-ts'
  | 'escaped'
  | 'too-large';

/** The transform's return value (`null` or `undefined` mean skip), or why there is none. */
export type TransformResult =
  | { ok: true; value: unknown }
  | { ok: false; reason: TransformFailure; detail: string };

/** A call's input as the line a child reads. */
export function encodeInput(input: TransformInput): string {
  const json = JSON.stringify(input);
  if (typeof json !== 'string') throw new TypeError('Invalid transform input: cannot be written as JSON');
  return json;
}

/** What the pool asks a child: call (with `probe`, only load) an export of the module at `url`, its result capped at `max` bytes. */
export interface CallMessage {
  id: number;
  url: string;
  name: string | null;
  probe: boolean;
  max: number;
  /** The input as encodeInput() wrote it; a probe sends none. */
  input: string | null;
}

/** A call as the line a child reads. The input is JSON already: spliced in, not parsed and written again. */
export function encodeCall({ id, url, name, probe, max, input }: CallMessage): string {
  return `{"id":${id},"url":${JSON.stringify(url)},"name":${JSON.stringify(name)},"probe":${probe},"max":${max},"input":${probe ? 'null' : (input ?? 'null')}}\n`;
}

/** A child's answer line: the call it answers and its result, or `null` when the line is not an answer. */
export function parseAnswer(line: string): { id: number; result: TransformResult } | null {
  try {
    const message = JSON.parse(line) as { id?: unknown; result?: { ok?: unknown; value?: unknown; reason?: unknown; detail?: unknown } };
    const result = message.result;
    if (typeof message.id !== 'number' || typeof result !== 'object' || result === null) return null;
    if (result.ok === true) return { id: message.id, result: { ok: true, value: result.value } };
    return { id: message.id, result: { ok: false, reason: result.reason as TransformFailure, detail: String(result.detail) } };
  } catch {
    return null;
  }
}
