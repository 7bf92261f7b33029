/**
 * The source of a transform worker, started with `eval: true`. It is a string because a worker
 * file named by URL would be `.ts` under tsx (whose loader does not reach workers) and still `.ts`
 * after the tsc build. It is a classic script that loads its one built-in with a dynamic import,
 * which Node and Deno both allow there (messages sent before it listens wait in the port).
 *
 * Protocol: it receives `{ id, url, name, input }` and answers `{ id, result }` with a
 * TransformResult. Picked functions are cached per (url, export name) for the worker's life.
 */
export const WORKER_SOURCE = `'use strict';
const picked = new Map();
let parentPort;

const describe = (error) => {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return 'a value that cannot be printed';
  }
};

const freeze = (value) => {
  if (typeof value === 'object' && value !== null && !ArrayBuffer.isView(value) && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Reflect.ownKeys(value)) freeze(value[key]);
  }
  return value;
};

const reply = (id, result) => {
  try {
    parentPort.postMessage({ id, result });
  } catch (error) {
    const detail = 'the return value cannot be passed back: ' + describe(error);
    parentPort.postMessage({ id, result: { ok: false, reason: 'threw', detail } });
  }
};

const pick = async (url, name) => {
  const key = name === null ? url : url + '#' + name;
  if (picked.has(key)) return picked.get(key);
  const namespace = await import(url);
  const fn = name === null ? (namespace.default ?? namespace.transform) : namespace[name];
  if (typeof fn === 'function') picked.set(key, fn);
  return fn;
};

const onMessage = async ({ id, url, name, input, probe }) => {
  let fn;
  try {
    fn = await pick(url, name);
  } catch (error) {
    return reply(id, { ok: false, reason: 'load-failed', detail: describe(error) });
  }
  if (typeof fn !== 'function') {
    const what = name === null ? 'neither a default nor a "transform" export' : 'export "' + name + '"';
    const detail = what + ' is not a function (found ' + typeof fn + ')';
    return reply(id, { ok: false, reason: 'not-a-function', detail });
  }
  if (probe) return reply(id, { ok: true, value: null });
  // Called from a fresh task, not a microtask: Deno reports a heap-limit stop
  // (ERR_WORKER_OUT_OF_MEMORY) only when it happens in a task; otherwise the worker just stalls.
  // setImmediate, not setTimeout(0): Node holds a zero timeout for a whole millisecond.
  setImmediate(() => {
    new Promise((resolve) => resolve(fn(freeze(input)))).then(
      (value) => reply(id, { ok: true, value }),
      (error) => reply(id, { ok: false, reason: 'threw', detail: describe(error) }),
    );
  });
};

import('node:worker_threads').then((threads) => {
  parentPort = threads.parentPort;
  parentPort.on('message', onMessage);
});
`;
