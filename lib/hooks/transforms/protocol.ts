// The wire between the pool and a transform child: what a mapping calls, what the transform
// receives and returns, and the JSON lines they travel as.
import { basename, isAbsolute, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

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

/** The transform's return value (`null` or `undefined` mean skip), or why there is none (`at`: where a thrown error was raised, `ci.mjs:4`, when its stack said). */
export type TransformResult =
  | { ok: true; value: unknown }
  | { ok: false; reason: TransformFailure; detail: string; at?: string };

/** Where a child says a thrown error was raised: a file URL and a line. */
export interface Frame {
  url: string;
  line: number;
}

/** Where a frame is, as the operator knows the file: its path in the transforms root (`root` real), else its name alone, and the line (`ci/build.mjs:4`). */
export function frameAt(frame: Frame, root: string): string {
  let path: string;
  try {
    path = fileURLToPath(frame.url);
  } catch {
    return `a module:${frame.line}`;
  }
  const inside = relative(root, path);
  const name = inside === '' || inside.startsWith('..') || isAbsolute(inside)
    ? basename(path)
    : inside.split(sep).join('/');
  return `${name}:${frame.line}`;
}

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
  return `{"id":${id},"url":${JSON.stringify(url)},"name":${
    JSON.stringify(name)
  },"probe":${probe},"max":${max},"input":${probe ? 'null' : (input ?? 'null')}}\n`;
}

/** A child's answer line: the call it answers, its result and where a thrown error was raised, or `null` when the line is not an answer. */
export function parseAnswer(line: string): { id: number; result: TransformResult; where?: Frame } | null {
  try {
    const message = JSON.parse(line) as {
      id?: unknown;
      result?: {
        ok?: unknown;
        value?: unknown;
        reason?: unknown;
        detail?: unknown;
        where?: { url?: unknown; line?: unknown };
      };
    };
    const result = message.result;
    if (typeof message.id !== 'number' || typeof result !== 'object' || result === null) return null;
    if (result.ok === true) return { id: message.id, result: { ok: true, value: result.value } };
    const failed = {
      id: message.id,
      result: { ok: false as const, reason: result.reason as TransformFailure, detail: String(result.detail) },
    };
    const where = result.where;
    const fair = typeof where?.url === 'string' && where.url.startsWith('file:') && Number.isSafeInteger(where.line) &&
      (where.line as number) > 0;
    return fair ? { ...failed, where: { url: where.url as string, line: where.line as number } } : failed;
  } catch {
    return null;
  }
}
