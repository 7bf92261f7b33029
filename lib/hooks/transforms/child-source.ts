// The program a child runs (a string: node -e / a data: URL), and its line protocol.

/**
 * The program a transform child runs: an ES module kept as a string, because the child starts
 * from it directly (`node -e` on Node, a `data:` URL on Deno) and so needs no file the permission
 * system would have to open for it, and no `.ts` file a child without tsx could not load.
 *
 * Protocol, one JSON document per line: the parent writes `{ id, url, name, input, probe, max }`
 * on stdin, several calls at once when they share the child; the child answers `{ id, result }`
 * on stdout, with a TransformResult, in the order the calls finish, the answers of one turn in
 * one write. stdout is the protocol's alone: console output goes to stderr. A result whose line
 * would be longer than `max` bytes is not sent; the parent enforces the same cap on what arrives,
 * since the transform could write to stdout itself.
 */
export const CHILD_SOURCE = `
import { format } from 'node:util';
import process from 'node:process';
import { Buffer } from 'node:buffer';
import { setImmediate } from 'node:timers';

const write = process.stdout.write.bind(process.stdout);
// Answers finished in one turn leave in one write (a pipe write is a system call, and wakes the parent).
let held = '';
const flush = () => {
  if (held !== '') write(held);
  held = '';
};
const out = (text) => {
  if (held === '') setImmediate(flush);
  held += text;
};
const err = process.stderr.write.bind(process.stderr);
for (const name of ['log', 'info', 'debug', 'warn', 'error', 'trace', 'dir', 'table']) {
  console[name] = (...args) => { err(format(...args) + '\\n'); };
}

const picked = new Map();

const describe = (error) => {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return 'a value that cannot be printed';
  }
};

// Where a thrown error was raised: the first frame in a file (the transform's module or one it
// imports), read past the message, since a message may hold text that looks like a frame.
const FRAME = /^\\s+at (?:.*?\\()?(file:\\/\\/[^\\s()]+):(\\d+):\\d+\\)?$/;
const frame = (error) => {
  try {
    const stack = error instanceof Error ? error.stack : undefined;
    if (typeof stack !== 'string') return undefined;
    const message = String(error.message);
    const from = message === '' ? 0 : stack.indexOf(message);
    if (from === -1) return undefined;
    for (const line of stack.slice(from + message.length).split('\\n')) {
      const found = FRAME.exec(line);
      if (found !== null) return { url: found[1], line: Number(found[2]) };
    }
  } catch {}
  return undefined;
};

const freeze = (value) => {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) freeze(value[key]);
  }
  return value;
};

const reply = (id, result, max) => {
  let line;
  try {
    const kind = result.ok ? typeof result.value : '';
    if (kind === 'function' || kind === 'symbol') throw new TypeError('a ' + kind + ' is not JSON');
    line = JSON.stringify({ id, result });
  } catch (error) {
    line = JSON.stringify({ id, result: { ok: false, reason: 'threw', detail: 'the return value cannot be passed back: ' + describe(error) } });
  }
  if (Buffer.byteLength(line) > max) {
    line = JSON.stringify({ id, result: { ok: false, reason: 'too-large', detail: 'the result is larger than ' + max + ' bytes' } });
  }
  out(line + '\\n');
};

const pick = async (url, name) => {
  const key = name === null ? url : url + '#' + name;
  if (picked.has(key)) return picked.get(key);
  const namespace = await import(url);
  const fn = name === null ? (namespace.default ?? namespace.transform) : namespace[name];
  if (typeof fn === 'function') picked.set(key, fn);
  return fn;
};

const serve = async ({ id, url, name, input, probe, max }) => {
  let fn;
  try {
    fn = await pick(url, name);
  } catch (error) {
    return reply(id, { ok: false, reason: 'load-failed', detail: describe(error) }, max);
  }
  if (typeof fn !== 'function') {
    const what = name === null ? 'neither a default nor a "transform" export' : 'export "' + name + '"';
    return reply(id, { ok: false, reason: 'not-a-function', detail: what + ' is not a function (found ' + typeof fn + ')' }, max);
  }
  if (probe) return reply(id, { ok: true, value: null }, max);
  try {
    const value = await fn(freeze(input));
    reply(id, value === undefined ? { ok: true } : { ok: true, value }, max);
  } catch (error) {
    const where = frame(error);
    reply(id, { ok: false, reason: 'threw', detail: describe(error), ...(where === undefined ? {} : { where }) }, max);
  }
};

let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  for (let end = pending.indexOf('\\n'); end !== -1; end = pending.indexOf('\\n')) {
    const line = pending.slice(0, end);
    pending = pending.slice(end + 1);
    void serve(JSON.parse(line));
  }
});
// The parent closing our stdin is the signal to go.
process.stdin.on('end', () => {
  flush();
  process.exit(0);
});
`;
