import assert from 'node:assert/strict';
import { mkdir, rename, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { OUTPUT_BYTES_PER_SECOND, type Runtime, startChild } from '../lib/hooks/transforms/child.ts';
import { createTransformChildPool } from '../lib/hooks/transforms/child-pool.ts';
import type { TransformChildPool } from '../lib/hooks/transforms/child-pool.ts';
import type { TransformChildPoolOptions } from '../lib/hooks/transforms/pool-options.ts';
import { CHILD_RUNTIMES } from './_children.ts';
import { fileDir } from './_dir.ts';
import { until } from './_until.ts';

const fixtures: Record<string, string> = {
  'default.js': 'export default ({ payload }) => ({ doubled: payload.n * 2 });',
  'named.mjs':
    'export const pick = ({ headers, query, path }) => [headers["x-a"], query.q, path];\nexport default () => "default";',
  'fallback.js': 'export function transform({ payload }) { return payload.n + 100; }',
  'async.js':
    'export default async ({ payload }) => { await new Promise((r) => setTimeout(r, 1)); return payload.n + 1; };',
  'skip.js': 'export default () => null;',
  'throws.js': 'export default () => { throw new Error("bad payload"); };',
  'rejects.js': 'export default async () => { throw "plain string"; };',
  'calls-helper.js': 'import { check } from "./dir/helper.mjs";\nexport default ({ payload }) => check(payload);',
  'forges.js': 'export default () => { throw new Error("no\\n    at evil (file:///etc/evil.mjs:9:9)"); };',
  'renamed.js': 'class Custom extends Error { name = "Custom"; }\nexport default () => { throw new Custom("odd"); };',
  'loop.js': 'export default () => { for (;;) {} };',
  'hog.js':
    'export default () => { const kept = []; for (;;) kept.push({ at: Math.random(), text: "x".repeat(64) + Math.random() }); };',
  'exits.js': 'export default () => process.exit(3);',
  'exits-on-load.js': 'process.exit(4);\nexport default () => 1;',
  'loops-on-load.js': 'for (;;) {}\nexport default () => 1;',
  'throws-later.js':
    'export default () => { setTimeout(() => { throw new Error("late"); }); return new Promise(() => {}); };',
  'number.js': 'export default 42;',
  'mutates.js': 'export default (input) => { input.payload.n = 0; return input; };',
  'unclonable.js': 'export default () => () => 1;',
  'syntax.js': 'export default () => {;',
  'env.js': 'export default () => Object.keys(process.env);',
  'slow.js': 'export default async () => { await new Promise((r) => setTimeout(r, 100)); return "slow"; };',
  // How many calls this child ran at once, at most (each waits a little, so calls sent together overlap).
  'overlap.js':
    'let now = 0; let most = 0;\nexport default async () => { most = Math.max(most, ++now); await new Promise((r) => setTimeout(r, 20)); now--; return most; };',
  // One module whose calls behave as their payload says: stuck, exiting, or answering n.
  // A stuck call says so on stderr before it spins, so a spec can tell when it is under way.
  'switch.js':
    'export default async ({ payload }) => { if (payload.stuck) { console.error("stuck"); for (;;) {} } if (payload.exit) process.exit(3); return payload.n; };',
  // Console output as fast as the pipe takes it, each write awaited (so the child itself holds nothing).
  'floods.js':
    'export default async () => { const chunk = ("x".repeat(200) + "\\n").repeat(300); for (;;) await new Promise((r) => process.stderr.write(chunk, r)); };',
  'data.json': '{}',
  'typed.ts': 'export default (input: { payload: { n: number } }): number => input.payload.n + 1;',
};

const input = { payload: { n: 21 }, headers: { 'x-a': 'b' }, query: { q: 'c' }, path: '/hooks/github' };
const base = await fileDir('hooks-transforms-');
const root = join(base, 'transforms');

before(async () => {
  await mkdir(join(root, 'dir'), { recursive: true });
  await mkdir(join(base, 'outside'));
  for (const [name, source] of Object.entries(fixtures)) await writeFile(join(root, name), source + '\n');
  await writeFile(join(root, 'dir', 'nested.js'), 'export default () => "inside";\n');
  await writeFile(
    join(root, 'dir', 'helper.mjs'),
    'export const check = (payload) => {\n  if (payload.n !== 0) throw new TypeError("n is " + payload.n);\n};\n',
  );
  await writeFile(join(base, 'outside', 'nested.js'), 'export default () => "outside";\n');
  await symlink(join(root, 'default.js'), join(root, 'alias.js'));
});

async function withPool(
  options: Partial<TransformChildPoolOptions>,
  body: (runner: TransformChildPool) => Promise<void>,
): Promise<void> {
  const runner = createTransformChildPool({ root, ...options });
  try {
    await body(runner);
  } finally {
    await runner.close();
  }
}

/** The specs that start real children, run once per runtime a child can run on (see _children.ts). */
function suite(runtime: Runtime): void {
  const withRunner = (
    options: Partial<TransformChildPoolOptions>,
    body: (runner: TransformChildPool) => Promise<void>,
  ) => withPool({ runtime, ...options }, body);
  const isDeno = runtime.kind === 'deno';
  const canStripTypes = isDeno || Boolean((process.features as { typescript?: unknown }).typescript);

  /** Modules (in the root) and what a call answers, by the rule they show; each rule gets a pool of its own. */
  const answers: Record<string, [ref: { module: string; export?: string }, answer: unknown][]> = {
    'runner.run() calls the default export with the input and answers its value': [
      [{ module: 'default.js' }, { ok: true, value: { doubled: 42 } }],
    ],
    'runner.run() calls a named export': [
      [{ module: 'named.mjs', export: 'pick' }, { ok: true, value: ['b', 'c', '/hooks/github'] }],
    ],
    'runner.run() falls back to an export named transform': [
      [{ module: 'fallback.js' }, { ok: true, value: 121 }],
    ],
    'runner.run() awaits an async transform': [
      [{ module: 'async.js' }, { ok: true, value: 22 }],
    ],
    'runner.run() answers null as a value, meaning skip': [
      [{ module: 'skip.js' }, { ok: true, value: null }],
    ],
    'runner.run() loads a module through a symlink that stays inside the root': [
      [{ module: 'alias.js' }, { ok: true, value: { doubled: 42 } }],
    ],
    'runner.run() answers threw with the message of a thrown error, and where it was raised when its stack says': [
      [{ module: 'throws.js' }, { ok: false, reason: 'threw', detail: 'bad payload', at: 'throws.js:1' }],
      [{ module: 'rejects.js' }, { ok: false, reason: 'threw', detail: 'plain string' }],
      [{ module: 'renamed.js' }, { ok: false, reason: 'threw', detail: 'odd', at: 'renamed.js:2' }],
    ],
    'runner.run() names where an error was raised by its path in the root, in a module the transform imports too': [
      [{ module: 'calls-helper.js' }, { ok: false, reason: 'threw', detail: 'n is 21', at: 'dir/helper.mjs:2' }],
    ],
    'runner.run() reads where an error was raised past its message, which may hold text that looks like a frame': [
      [{ module: 'forges.js' }, {
        ok: false,
        reason: 'threw',
        detail: 'no\n    at evil (file:///etc/evil.mjs:9:9)',
        at: 'forges.js:1',
      }],
    ],
    'runner.run() answers not-a-function for a value export or a missing export': [
      [{ module: 'number.js' }, {
        ok: false,
        reason: 'not-a-function',
        detail: 'neither a default nor a "transform" export is not a function (found number)',
      }],
      [{ module: 'named.mjs', export: 'nope' }, {
        ok: false,
        reason: 'not-a-function',
        detail: 'export "nope" is not a function (found undefined)',
      }],
    ],
  };

  for (const [title, cases] of Object.entries(answers)) {
    test(title, async () => {
      await withRunner({}, async (runner) => {
        for (const [ref, answer] of cases) {
          assert.deepEqual(await runner.run({ ...ref, module: join(root, ref.module) }, input), answer, ref.module);
        }
      });
    });
  }

  test("runner.run() reads a transform's console output at a bounded pace: one that writes without pause waits on its writes until its time is up", async () => {
    let bytes = 0;
    const started = performance.now();
    await withRunner(
      { timeoutMs: 1500, onOutput: (_module, line) => void (bytes += line.length + 1) },
      async (runner) => {
        const result = await runner.run({ module: join(root, 'floods.js') }, input);
        const seconds = (performance.now() - started) / 1000;
        assert.equal(result.ok ? 'ok' : result.reason, 'timeout');
        // Per second begun, a second's worth and the one read (up to a pipe's 64 KiB) that crossed it; unpaced, it writes tens of MiB a second.
        const bound = (Math.ceil(seconds) + 1) * (OUTPUT_BYTES_PER_SECOND + 64 * 1024);
        assert.ok(bytes > 0 && bytes <= bound, `logged ${bytes} bytes in ${seconds.toFixed(1)} s, bound ${bound}`);
      },
    );
  });

  test('runner.run() hands the transform a frozen input, so a mutation throws', async () => {
    await withRunner({}, async (runner) => {
      const result = await runner.run({ module: join(root, 'mutates.js') }, input);
      assert.equal(result.ok, false);
      assert.equal(!result.ok && result.reason, 'threw');
      assert.match(!result.ok ? result.detail : '', /read.only/);
      assert.equal(input.payload.n, 21);
    });
  });

  test('runner.run() answers threw when the return value is not JSON', async () => {
    await withRunner({}, async (runner) => {
      const result = await runner.run({ module: join(root, 'unclonable.js') }, input);
      assert.equal(!result.ok && result.reason, 'threw');
      assert.match(!result.ok ? result.detail : '', /^the return value cannot be passed back: /);
    });
  });

  test('runner.run() answers load-failed for a syntax error, a missing module or another extension', async () => {
    await withRunner({}, async (runner) => {
      const syntax = await runner.run({ module: join(root, 'syntax.js') }, input);
      assert.equal(!syntax.ok && syntax.reason, 'load-failed');
      assert.deepEqual(await runner.run({ module: join(root, 'gone.js') }, input), {
        ok: false,
        reason: 'load-failed',
        detail: 'does not exist',
      });
      assert.deepEqual(await runner.run({ module: join(root, 'data.json') }, input), {
        ok: false,
        reason: 'load-failed',
        detail: 'only .js, .mjs and .ts modules can be transforms, not .json',
      });
    });
  });

  // Starting the replacement child for "the next call works" has a bound of its own (startTimeoutMs),
  // but the call itself still has to make its round trip within this one on a loaded machine.
  const STUCK_MS = 2_000;

  test('runner.run() answers timeout for a transform that never returns, and the next call works', async () => {
    await withRunner({ timeoutMs: STUCK_MS, poolSize: 1 }, async (runner) => {
      // The timeout fires on the main thread while the loop spins: the loop runs elsewhere.
      assert.deepEqual(await runner.run({ module: join(root, 'loop.js') }, input), {
        ok: false,
        reason: 'timeout',
        detail: `no answer within ${STUCK_MS} ms`,
      });
      assert.deepEqual(await runner.run({ module: join(root, 'skip.js') }, input), { ok: true, value: null });
    });
  });

  test('runner.run() answers timeout for calls queued behind a stuck child, and the next call works', async () => {
    await withRunner({ timeoutMs: STUCK_MS, poolSize: 1 }, async (runner) => {
      // Three calls behind one worker stuck in a loop. The wait counts in each call's budget, so a
      // waiting call gets what is left of it (or is answered at once when nothing is).
      // (Which call reaches the queue first depends on its containment check, so the order is not fixed.)
      const results = await Promise.all([1, 2, 3].map(() => runner.run({ module: join(root, 'loop.js') }, input)));
      for (const result of results) {
        assert.ok(
          !result.ok && result.reason === 'timeout' &&
            result.detail.replace(/answer|child was free/, 'X') === `no X within ${STUCK_MS} ms`,
          JSON.stringify(result),
        );
      }
      assert.ok(
        results.some((r) => !r.ok && r.detail === `no answer within ${STUCK_MS} ms`),
        'the call that ran timed out in the child',
      );
      assert.deepEqual(await runner.run({ module: join(root, 'skip.js') }, input), { ok: true, value: null });
    });
  });

  /** Each case: how a call ends its child, the pool's options, and the answer; after it, the next call works. */
  const crashes: { what: string; module: string; options: Partial<TransformChildPoolOptions>; detail: string }[] = [
    {
      what: 'a transform exhausts its heap',
      module: 'hog.js',
      options: { heapMb: 16, timeoutMs: 30_000 },
      detail: 'ran out of memory (heap limit 16 MiB)',
    },
    { what: 'the child exits', module: 'exits.js', options: {}, detail: 'the child exited with code 3' },
    {
      what: 'a stray error ends the child mid-call',
      module: 'throws-later.js',
      options: {},
      detail: 'the child exited with code 1',
    },
  ];

  for (const { what, module, options, detail } of crashes) {
    test(`runner.run() answers crashed when ${what}, and the next call works`, async () => {
      await withRunner({ poolSize: 1, ...options }, async (runner) => {
        assert.deepEqual(await runner.run({ module: join(root, module) }, input), {
          ok: false,
          reason: 'crashed',
          detail,
        });
        assert.deepEqual(await runner.run({ module: join(root, 'skip.js') }, input), { ok: true, value: null });
      });
    });
  }

  test('runner.run() answers a module that ends its child or never finishes loading, and starts no child again for that call', async () => {
    const children = counted();
    // Only the stuck load gets the short start bound: a loaded machine (and Deno) may take longer than it to start a child at all.
    await withRunner({ poolSize: 1, start: children.start }, async (runner) => {
      assert.deepEqual(await runner.run({ module: join(root, 'exits-on-load.js') }, input), {
        ok: false,
        reason: 'crashed',
        detail: 'the child exited with code 4',
      });
      assert.equal(children.started(), 1);
      assert.deepEqual(await runner.run({ module: join(root, 'skip.js') }, input), { ok: true, value: null });
    });
    await withRunner({ poolSize: 1, startTimeoutMs: 1_000, start: children.start }, async (runner) => {
      assert.deepEqual(await runner.run({ module: join(root, 'loops-on-load.js') }, input), {
        ok: false,
        reason: 'timeout',
        detail: 'the module did not load within 1000 ms',
      });
      assert.equal(children.started(), 3);
    });
  });

  test('runner.run() queues calls beyond the pool size and answers each', async () => {
    await withRunner({ poolSize: 1 }, async (runner) => {
      const results = await Promise.all([
        runner.run({ module: join(root, 'slow.js') }, input),
        runner.run({ module: join(root, 'default.js') }, input),
        runner.run({ module: join(root, 'fallback.js') }, input),
      ]);
      assert.deepEqual(results.map((result) => result.ok && result.value), ['slow', { doubled: 42 }, 121]);
    });
  });

  /** A runner option that counts the children it starts. */
  function counted(): { start: NonNullable<TransformChildPoolOptions['start']>; started: () => number } {
    let n = 0;
    return {
      start: (limits) => {
        n++;
        return startChild(limits);
      },
      started: () => n,
    };
  }

  test('runner.run() lets calls share a busy child: they reach it together and run side by side', async () => {
    const children = counted();
    await withRunner({ poolSize: 1, start: children.start }, async (runner) => {
      const results = await Promise.all(
        [1, 2, 3, 4].map(() => runner.run({ module: join(root, 'overlap.js') }, input)),
      );
      assert.equal(children.started(), 1);
      assert.ok(results.every((r) => r.ok), JSON.stringify(results));
      assert.ok(
        Math.max(...results.map((r) => (r.ok ? Number(r.value) : 0))) > 1,
        `calls overlapped in the child: ${JSON.stringify(results)}`,
      );
    });
  });

  test('runner.run() runs a call again, within its own budget, when the child it shared is killed for another call that overran its time', async () => {
    const children = counted();
    const output: string[] = [];
    await withRunner({
      timeoutMs: STUCK_MS,
      poolSize: 1,
      start: children.start,
      onOutput: (_, line) => void output.push(line),
    }, async (runner) => {
      const stuck = runner.run({ module: join(root, 'switch.js') }, { ...input, payload: { stuck: true } });
      // Sent half the budget after the stuck call is under way in its child, so it shares that child
      // and has budget left when the child is killed. Timed from the call reaching the child, not
      // from run(): how long the child took to start (seconds, on a loaded machine) counts in
      // neither call's budget, and timed from run() it left the second none.
      await until('the stuck call to be under way', () => output.includes('stuck'));
      await new Promise((resolve) => setTimeout(resolve, STUCK_MS / 2));
      const innocent = runner.run({ module: join(root, 'switch.js') }, { ...input, payload: { n: 7 } });
      assert.deepEqual(await stuck, { ok: false, reason: 'timeout', detail: `no answer within ${STUCK_MS} ms` });
      assert.deepEqual(await innocent, { ok: true, value: 7 });
      assert.equal(children.started(), 2);
    });
  });

  test('runner.run() runs each call again on a child of its own when a shared child dies and no one call can be blamed', async () => {
    const children = counted();
    await withRunner({ poolSize: 1, start: children.start }, async (runner) => {
      // Both wait for the child to start, then reach it in one write; the first ends it before the second answers.
      const [exits, answers] = await Promise.all([
        runner.run({ module: join(root, 'switch.js') }, { ...input, payload: { exit: true } }),
        runner.run({ module: join(root, 'switch.js') }, { ...input, payload: { n: 5 } }),
      ]);
      assert.deepEqual(exits, { ok: false, reason: 'crashed', detail: 'the child exited with code 3' });
      assert.deepEqual(answers, { ok: true, value: 5 });
      assert.equal(children.started(), 3, 'one shared child, then one for each call alone');
    });
  });

  test('runner.probe() of a module whose child is up loads the export there without calling it', async () => {
    await withRunner({ poolSize: 1 }, async (runner) => {
      assert.deepEqual(await runner.probe({ module: join(root, 'named.mjs') }), { ok: true, value: null });
      assert.deepEqual(await runner.probe({ module: join(root, 'named.mjs'), export: 'pick' }), {
        ok: true,
        value: null,
      });
      assert.deepEqual(await runner.run({ module: join(root, 'named.mjs'), export: 'pick' }, input), {
        ok: true,
        value: ['b', 'c', '/hooks/github'],
      });
    });
  });

  test('runner.run() keeps the server environment from transforms', async () => {
    await withRunner({}, async (runner) => {
      const result = await runner.run({ module: join(root, 'env.js') }, input);
      // Node hands the child the empty environment it was started with; Deno refuses to read it at all.
      if (isDeno) {
        assert.ok(!result.ok && result.reason === 'threw' && /env/.test(result.detail), JSON.stringify(result));
      } // Node copies NODE_V8_COVERAGE into every child it starts (c8 measures through it); nothing else.
      else assert.deepEqual(result.ok && (result.value as string[]).filter((k) => k !== 'NODE_V8_COVERAGE'), []);
    });
  });

  test('runner.run() keeps the module it imported when a symlink is re-pointed outside, and a fresh child refuses it', async () => {
    const link = join(root, `swap-${runtime.kind}.js`);
    await symlink(join(root, 'dir', 'nested.js'), link);
    await withRunner({}, async (runner) => {
      assert.deepEqual(await runner.run({ module: link }, input), { ok: true, value: 'inside' });
      await unlink(link);
      await symlink(join(base, 'outside', 'nested.js'), link);
      // Containment is checked before a child imports its module, not on every call: an imported
      // module cannot be swapped under the child.
      assert.deepEqual(await runner.run({ module: link }, input), { ok: true, value: 'inside' });
      runner.clearCache();
      assert.deepEqual(await runner.run({ module: link }, input), {
        ok: false,
        reason: 'escaped',
        detail: 'resolves outside the transforms root',
      });
    });
  });

  test('runner.run() answers escaped when a directory on the real path is swapped for a symlink outside', async () => {
    await mkdir(join(root, `swapdir-${runtime.kind}`));
    const module = join(root, `swapdir-${runtime.kind}`, 'nested.js');
    await writeFile(module, 'export default () => "inside";\n');
    await withRunner({}, async (runner) => {
      assert.deepEqual(await runner.run({ module }, input), { ok: true, value: 'inside' });
      await rename(join(root, `swapdir-${runtime.kind}`), join(root, `swapdir-${runtime.kind}-old`));
      await symlink(join(base, 'outside'), join(root, `swapdir-${runtime.kind}`));
      runner.clearCache();
      const result = await runner.run({ module }, input);
      assert.equal(!result.ok && result.reason, 'escaped');
    });
  });

  test('runner.clearCache() makes the next call load an edited module', async () => {
    const module = join(root, 'edited.js');
    await writeFile(module, 'export default () => 1;\n');
    await withRunner({ poolSize: 1 }, async (runner) => {
      assert.deepEqual(await runner.run({ module }, input), { ok: true, value: 1 });
      await writeFile(module, 'export default () => 2;\n');
      assert.deepEqual(await runner.run({ module }, input), { ok: true, value: 1 }, 'loaded once per child');
      runner.clearCache();
      assert.deepEqual(await runner.run({ module }, input), { ok: true, value: 2 });
    });
  });

  test('runner.clearCache() lets a call in flight finish before its child is replaced', async () => {
    const module = join(root, 'edited-later.js');
    await writeFile(module, 'export default () => "old";\n');
    await withRunner({ poolSize: 1 }, async (runner) => {
      assert.deepEqual(await runner.run({ module }, input), { ok: true, value: 'old' });
      const slow = runner.run({ module: join(root, 'slow.js') }, input);
      await new Promise((resolve) => setTimeout(resolve, 20));
      runner.clearCache();
      await writeFile(module, 'export default () => "new";\n');
      assert.deepEqual(await slow, { ok: true, value: 'slow' });
      assert.deepEqual(await runner.run({ module }, input), { ok: true, value: 'new' });
    });
  });

  test('runner.close() answers calls in flight and later calls as crashed', async () => {
    const runner = createTransformChildPool({ root, poolSize: 1, runtime });
    const pending = [
      runner.run({ module: join(root, 'loop.js') }, input),
      runner.run({ module: join(root, 'skip.js') }, input),
    ];
    await new Promise((resolve) => setTimeout(resolve, 20));
    await runner.close();
    const closed = { ok: false, reason: 'crashed', detail: 'the transform runner is closed' };
    assert.deepEqual(await Promise.all(pending), [closed, closed]);
    assert.deepEqual(await runner.run({ module: join(root, 'skip.js') }, input), closed);
  });

  test('runner.run() refuses .ts where the runtime cannot strip types, naming the fix', {
    skip: canStripTypes ? 'this runtime strips types, so .ts loads (tested below)' : false,
  }, async () => {
    await withRunner({}, async (runner) => {
      const result = await runner.run({ module: join(root, 'typed.ts') }, input);
      assert.equal(!result.ok && result.reason, 'unsupported-ts');
      assert.match(!result.ok ? result.detail : '', /precompile the transform to \.js/);
    });
  });

  test('runner.run() loads .ts where the runtime strips types', {
    skip: canStripTypes ? false : `Node ${process.versions.node} cannot strip types (refusal tested above)`,
  }, async () => {
    await withRunner({}, async (runner) => {
      assert.deepEqual(await runner.run({ module: join(root, 'typed.ts') }, input), { ok: true, value: 22 });
    });
  });

  test('runner.run() rejects an input that JSON cannot carry, a caller bug', async () => {
    await withRunner({}, async (runner) => {
      const bad = { ...input, payload: { n: 1n } };
      await assert.rejects(runner.run({ module: join(root, 'skip.js') }, bad));
      assert.deepEqual(await runner.run({ module: join(root, 'skip.js') }, input), { ok: true, value: null });
    });
  });
}

for (const { name, runtime } of CHILD_RUNTIMES) describe(`children on ${name}`, () => suite(runtime));

/**
 * A stand-in for a child, speaking the real protocol: it answers probes, holds every call when
 * `hold` is set (else answers payload.n), and when killed still delivers the answer of the first
 * call it holds before it reports its exit. A real child cannot be made to do that last part on
 * demand: it is the race of an answer already in the pipe when the kill comes.
 */
function standIn(hold: boolean): ChildProcessWithoutNullStreams {
  const child = new EventEmitter() as EventEmitter & Record<string, unknown>;
  const [stdin, stdout, stderr] = [new PassThrough(), new PassThrough(), new PassThrough()];
  const held: number[] = [];
  let pending = '';
  const answer = (id: number, value: unknown) =>
    stdout.write(`${JSON.stringify({ id, result: { ok: true, value } })}\n`);
  stdin.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    for (let end = pending.indexOf('\n'); end !== -1; end = pending.indexOf('\n')) {
      const message = JSON.parse(pending.slice(0, end)) as {
        id: number;
        probe: boolean;
        input: { payload: { n: number } };
      };
      pending = pending.slice(end + 1);
      if (message.probe) setImmediate(() => answer(message.id, null));
      else if (hold) held.push(message.id);
      else setImmediate(() => answer(message.id, message.input.payload.n));
    }
  });
  const kill = () => {
    answer(held[0]!, 'late');
    setTimeout(() => child.emit('exit', null, 'SIGKILL'), 5);
    return true;
  };
  return Object.assign(child, {
    stdin,
    stdout,
    stderr,
    pid: undefined,
    exitCode: null,
    kill,
    ref: () => {},
    unref: () => {},
  }) as unknown as ChildProcessWithoutNullStreams;
}

test('runner.run() answers a call that shared a killed child on its own, even when the call the kill was about answered first', async () => {
  let started = 0;
  await withPool({ timeoutMs: 300, poolSize: 1, start: () => standIn(started++ === 0) }, async (runner) => {
    const ref = { module: join(root, 'default.js') };
    const first = runner.run(ref, { ...input, payload: { n: 1 } });
    await new Promise((resolve) => setTimeout(resolve, 150));
    const second = runner.run(ref, { ...input, payload: { n: 2 } });
    // The first call overran its time; its answer came in before the exit. The second, which had
    // time left, runs again on a fresh child instead of taking the first one's timeout.
    assert.deepEqual(await first, { ok: true, value: 'late' });
    assert.deepEqual(await second, { ok: true, value: 2 });
    assert.equal(started, 2);
  });
});

test('createTransformChildPool() rejects invalid options by name', () => {
  assert.throws(() => createTransformChildPool({ root: '' }), {
    name: 'TypeError',
    message: 'Invalid transforms root: expected a non-empty string, got ',
  });
  assert.throws(() => createTransformChildPool({ root, timeoutMs: 0 }), {
    name: 'RangeError',
    message: 'Invalid transform runner option timeoutMs: expected a positive number, got 0',
  });
  assert.throws(() => createTransformChildPool({ root, poolSize: 1.5 }), {
    name: 'RangeError',
    message: 'Invalid transform runner option poolSize: expected an integer, got 1.5',
  });
});
