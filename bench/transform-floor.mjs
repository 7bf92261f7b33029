// The floor of a transform call in a child process: the least a call costs that crosses to
// another process and back over pipes, as the transform child pool's calls must. A Node child
// reads lines on stdin and answers each with one line (`id` and the payload's text, no module, no
// JSON wrapper, no freezing, no limits); the parent sends calls as the pool does (every call of
// one event-loop turn in one write) and counts the CPU time of both processes per call.
// Usage: node bench/transform-floor.mjs [CALLS]   (prints one line per round: 32 callers at once, then one at a time)
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const CALLS = Number(process.argv[2] ?? 8000);
const CHILD = `
let held = '';
const flush = () => { process.stdout.write(held); held = ''; };
let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  for (let end = pending.indexOf('\\n'); end !== -1; end = pending.indexOf('\\n')) {
    const line = pending.slice(0, end);
    pending = pending.slice(end + 1);
    const tab = line.indexOf('\\t');
    const input = JSON.parse(line.slice(tab + 1));
    if (held === '') setImmediate(flush);
    held += line.slice(0, tab) + '\\t' + JSON.stringify({ ok: true, value: { kind: 'wake', text: String(input.payload.text) } }) + '\\n';
  }
});
process.stdin.on('end', () => process.exit(0));
`;
const INPUT = JSON.stringify({
  payload: { text: 'bench' },
  headers: { 'content-type': 'application/json' },
  query: {},
  path: 't',
});

// CPU time of a process's threads so far, in µs, from the scheduler's nanosecond counters.
function cpuUs(pid) {
  let ns = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
  }
  return ns / 1e3;
}

const child = spawn(process.execPath, ['-e', CHILD], { stdio: ['pipe', 'pipe', 'inherit'] });
const waiting = new Map();
let out = '';
let next = 0;
child.stdout.setEncoding('utf8');
child.stdout.on('data', (chunk) => {
  out += chunk;
  for (let end = out.indexOf('\n'); end !== -1; end = out.indexOf('\n')) {
    const line = out.slice(0, end);
    out = out.slice(end + 1);
    const tab = line.indexOf('\t');
    const id = Number(line.slice(0, tab));
    const done = waiting.get(id);
    waiting.delete(id);
    done(JSON.parse(line.slice(tab + 1)));
  }
});
let unsent = '';
const write = () => {
  child.stdin.write(unsent);
  unsent = '';
};
const call = () =>
  new Promise((resolve) => {
    const id = ++next;
    waiting.set(id, resolve);
    if (unsent === '') setImmediate(write);
    unsent += `${id}\t${INPUT}\n`;
  });

async function callers(count, total) {
  let left = total;
  await Promise.all(Array.from({ length: count }, async () => {
    while (left-- > 0) await call();
  }));
}

const self = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
for (let round = 1; round <= 3; round++) {
  await callers(32, 1000);
  for (const [label, count] of [['32 at once', 32], ['one at a time', 1]]) {
    const total = count === 1 ? CALLS / 4 : CALLS;
    const parent = self();
    const kid = cpuUs(child.pid);
    await callers(count, total);
    const p = (self() - parent) / total;
    const c = (cpuUs(child.pid) - kid) / total;
    console.log(
      `round ${round} ${label.padEnd(13)} parent ${p.toFixed(1)} µs/call, child ${c.toFixed(1)}, total ${
        (p + c).toFixed(1)
      }`,
    );
  }
}
child.stdin.end();
