import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Deadlines } from '../lib/guard/deadline.ts';
import { until } from './_until.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('Deadlines fires each deadline once its time has come, in the order they were set', async () => {
  const queue = new Deadlines(40);
  const fired: [string, number][] = [];
  const t0 = performance.now();
  queue.set(() => fired.push(['a', performance.now() - t0]));
  await sleep(15);
  queue.set(() => fired.push(['b', performance.now() - t0]));
  await sleep(80);
  assert.deepEqual(fired.map(([name]) => name), ['a', 'b']);
  // Never early (timers may be late on a busy machine, which is not asserted).
  assert.ok(fired[0]![1] >= 39, `a at ${fired[0]![1]}`);
  assert.ok(fired[1]![1] >= 54, `b at ${fired[1]![1]}`);
  assert.equal(queue.size, 0);
});

test('Deadlines.cancel() keeps a deadline from firing and leaves the others', async () => {
  const queue = new Deadlines(20);
  const fired: string[] = [];
  const a = queue.set(() => fired.push('a'));
  queue.set(() => fired.push('b'));
  queue.cancel(a);
  queue.cancel(a);
  assert.equal(queue.size, 1);
  await sleep(60);
  assert.deepEqual(fired, ['b']);
});

test('Deadlines serves a deadline set by an expiring one, and keeps working after it ran empty', async () => {
  const queue = new Deadlines(10);
  const fired: string[] = [];
  queue.set(() => {
    fired.push('first');
    queue.set(() => fired.push('second'));
  });
  // Polled, not slept: the second deadline is set only when the first fires, so on a stalled
  // machine a fixed sleep can end before it is due.
  await until('the second deadline', () => fired.length >= 2);
  assert.deepEqual(fired, ['first', 'second']);
  assert.equal(queue.size, 0);
  queue.set(() => fired.push('third'));
  await until('the third deadline', () => fired.length >= 3);
  assert.deepEqual(fired, ['first', 'second', 'third']);
});

test('Deadlines with an injected clock fires only what is due and re-arms for the rest', async () => {
  let now = 0;
  const queue = new Deadlines(5, () => now);
  const fired: string[] = [];
  queue.set(() => fired.push('a'));
  now = 3;
  queue.set(() => fired.push('b'));
  // The timer fires after ~5 ms of real time; by the injected clock only `a` (due at 5) is due at 6.
  now = 6;
  await sleep(30);
  assert.deepEqual(fired, ['a']);
  now = 8;
  await sleep(30);
  assert.deepEqual(fired, ['a', 'b']);
});

test('Deadlines does not hold the process open once nothing is pending', async () => {
  const { spawn } = await import('node:child_process');
  const module = new URL('../lib/guard/deadline.ts', import.meta.url).href;
  const source = `const { Deadlines } = await import(${JSON.stringify(module)});
const q = new Deadlines(60_000);
q.cancel(q.set(() => {}));
const start = Date.now();
process.on('exit', () => console.log('exited after', Date.now() - start));`;
  const deno = 'Deno' in globalThis;
  const args = deno ? ['eval', source] : ['--import', 'tsx', '--input-type=module', '-e', source];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  const code = await new Promise((resolve) => child.once('close', resolve));
  assert.equal(code, 0);
  const ms = Number(/exited after (\d+)/.exec(out)?.[1]);
  assert.ok(ms < 30_000, `the process ended without waiting for the 60 s timer (${out.trim()})`);
});
