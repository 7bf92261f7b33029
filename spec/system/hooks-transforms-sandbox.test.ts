import assert from 'node:assert/strict';
import { spawn, type StdioOptions } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { access, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { childCommand, rootProblem, type Runtime } from '../../lib/hooks/transforms/child.ts';
import { createTransformChildPool, type TransformChildPool } from '../../lib/hooks/transforms/child-pool.ts';
import type { TransformChildPoolOptions } from '../../lib/hooks/transforms/pool-options.ts';
import { readEvents } from '../../lib/store/journal/read.ts';
import { CHILD_RUNTIMES, DENO_PATH } from '../_children.ts';
import { cliCommand, IS_DENO, listening, ROOT, stopAfter } from '../_cli.ts';
import { fake } from '../_fake-server.ts';
import { post } from '../_http.ts';
import { until } from '../_until.ts';
import { fileDir, tempDir } from '../_dir.ts';

// Each probe tries one forbidden thing and says what happened: "denied: <code>" when the runtime
// refused it, anything else when it got through.
const isDeno = 'Deno' in globalThis;
const attempt = (body: string) =>
  `import * as fs from 'node:fs';\nimport * as cp from 'node:child_process';\nexport default async ({ payload }) => {\n  try {\n    ${body}\n  } catch (error) {\n    return 'denied: ' + (error.code ?? error.name);\n  }\n};\n`;

const probes: Record<string, string> = {
  'read-config.js': attempt('return fs.readFileSync(payload.config, "utf8");'),
  'read-passwd.js': attempt('return fs.readFileSync("/etc/passwd", "utf8");'),
  'read-environ.js': attempt('return fs.readFileSync("/proc/self/environ", "latin1");'),
  // The server's own process: its environment (keys, tokens), its memory, the files it holds open.
  'read-parent.js': attempt('return fs.readFileSync(`/proc/${process.ppid}/${payload.file}`, "latin1");'),
  'spawn.js': attempt('return String(cp.spawnSync("/bin/sh", ["-c", "echo spawned"]).stdout);'),
  'write.js': attempt('fs.writeFileSync(payload.target, "written"); return "wrote";'),
  'import-outside.js': attempt('return (await import(payload.outside)).default();'),
  'worker.js': attempt(
    'const { Worker } = await import("node:worker_threads"); new Worker("1", { eval: true }); return "started";',
  ),
  'fetch.js': attempt('const r = await fetch(payload.url); return "fetched " + r.status;'),
  'signal.js': attempt('process.kill(process.ppid, 0); return "signalled";'),
  'buffers.js':
    'export default () => { const kept = []; for (let i = 0; i < 64; i++) kept.push(new Uint8Array(32 * 1024 * 1024).fill(1)); return kept.length; };',
  'big-result.js': 'export default () => "x".repeat(2 * 1024 * 1024);',
  'big-stdout.js':
    'import process from "node:process";\nexport default () => { process.stdout.write("{\\"id\\":" + "9".repeat(3 * 1024 * 1024)); return new Promise(() => {}); };',
  'leaves.js':
    'import process from "node:process";\nexport default ({ payload }) => { globalThis.seen = payload; process.on("message", () => {}); setInterval(() => { globalThis.still = true; }, 5); return "left"; };',
  'looks.js':
    'import process from "node:process";\nexport default () => [typeof globalThis.seen, typeof globalThis.still, process.listenerCount("message")];',
  'trivial.js': 'export default ({ payload }) => ({ kind: "wake", text: "hello " + payload.name });',
};

const base = await fileDir('hooks-sandbox-');
const root = join(base, 'hooks', 'transforms');
const input = (payload: Record<string, unknown> = {}) => ({ payload, headers: {}, query: {}, path: 'probe' });

before(async () => {
  await mkdir(root, { recursive: true });
  await writeFile(join(base, 'config.json'), '{ "hooks": { "token": "config-secret-0123456789" } }\n');
  await writeFile(join(base, 'outside.js'), 'export default () => "outside ran";\n');
  for (const [name, source] of Object.entries(probes)) await writeFile(join(root, name), source);
});

/** The specs that start real children, run once per runtime a child can run on (see _children.ts). */
function suite(runtime: Runtime): void {
  const isDeno = runtime.kind === 'deno';
  async function withRunner(
    options: Partial<TransformChildPoolOptions>,
    body: (runner: TransformChildPool) => Promise<void>,
  ): Promise<void> {
    const runner = createTransformChildPool({ root, timeoutMs: 20_000, runtime, ...options });
    try {
      await body(runner);
    } finally {
      await runner.close();
    }
  }

  const call = (runner: TransformChildPool, name: string, payload: Record<string, unknown> = {}) =>
    runner.run({ module: join(root, name) }, input(payload));

  function assertDenied(result: Awaited<ReturnType<TransformChildPool['run']>>, what: string): void {
    assert.ok(
      result.ok && typeof result.value === 'string' && result.value.startsWith('denied: '),
      `${what} got through: ${JSON.stringify(result).slice(0, 200)}`,
    );
  }

  test('a transform child cannot read the config file beside the transforms root', async () => {
    await withRunner({}, async (runner) => {
      assertDenied(await call(runner, 'read-config.js', { config: join(base, 'config.json') }), 'reading the config');
    });
  });

  test('a transform child cannot read /etc/passwd or its own /proc/self/environ', async () => {
    await withRunner({}, async (runner) => {
      assertDenied(await call(runner, 'read-passwd.js'), 'reading /etc/passwd');
      assertDenied(await call(runner, 'read-environ.js'), 'reading /proc/self/environ');
    });
  });

  test("a transform child cannot read the server's /proc entries: environment, memory, open files, command line", async () => {
    await withRunner({}, async (runner) => {
      for (const file of ['environ', 'mem', 'maps', 'cmdline', 'fd/0', 'root/etc/passwd', 'cwd/config.json']) {
        assertDenied(await call(runner, 'read-parent.js', { file }), `reading /proc/<ppid>/${file}`);
      }
    });
  });

  test('a transform child cannot start a process or a worker', async () => {
    await withRunner({}, async (runner) => {
      assertDenied(await call(runner, 'spawn.js'), 'spawning');
      const worker = await call(runner, 'worker.js');
      // Deno starts a worker with its parent's permissions (no more), so only Node's model refuses it.
      if (!isDeno) assertDenied(worker, 'starting a worker');
    });
  });

  test('a transform child cannot write a file, not even inside the transforms root', async () => {
    await withRunner({}, async (runner) => {
      const target = join(root, 'written.txt');
      assertDenied(await call(runner, 'write.js', { target }), 'writing');
      await assert.rejects(access(target), { code: 'ENOENT' });
    });
  });

  test('a transform child cannot import a module outside the transforms root, whatever the parent checked', async () => {
    await withRunner({}, async (runner) => {
      assertDenied(
        await call(runner, 'import-outside.js', { outside: `file://${join(base, 'outside.js')}` }),
        'importing outside',
      );
    });
  });

  test('a transform child on Deno reaches neither the network nor the server process; on Node 20 both remain possible', async (t) => {
    const server = await fake(t, (_req, res) => res.end('ok'));
    const url = `${server.url}/`;
    await withRunner({}, async (runner) => {
      const fetched = await call(runner, 'fetch.js', { url });
      const signalled = await call(runner, 'signal.js');
      const netDenied = childCommand({ root, heapMb: 64, runtime }).args.some((a) => a === '--permission') &&
        process.allowedNodeEnvironmentFlags.has('--allow-net');
      if (isDeno || netDenied) {
        assertDenied(fetched, 'fetching');
      } else {
        // Node 20's permission model covers neither sockets nor signals (README, Security notes).
        assert.deepEqual(fetched, { ok: true, value: 'fetched 200' });
      }
      if (isDeno) assertDenied(signalled, 'signalling the parent');
      else assert.deepEqual(signalled, { ok: true, value: 'signalled' });
    });
  });

  test('a transform child that allocates Buffers past its memory cap is killed, and the next call works', async () => {
    await withRunner({ memoryMb: 192, poolSize: 1 }, async (runner) => {
      assert.deepEqual(await call(runner, 'buffers.js'), {
        ok: false,
        reason: 'crashed',
        detail: 'ran out of memory (resident memory over 192 MiB)',
      });
      assert.deepEqual(await call(runner, 'trivial.js', { name: 'again' }), {
        ok: true,
        value: { kind: 'wake', text: 'hello again' },
      });
    });
  });

  test('a result over the byte cap is refused, also when the transform writes it to stdout itself', async () => {
    await withRunner({ maxResultBytes: 1024 * 1024 }, async (runner) => {
      assert.deepEqual(await call(runner, 'big-result.js'), {
        ok: false,
        reason: 'too-large',
        detail: 'the result is larger than 1048576 bytes',
      });
      assert.deepEqual(await call(runner, 'big-stdout.js'), {
        ok: false,
        reason: 'too-large',
        detail: 'the result is larger than 1048576 bytes',
      });
      assert.deepEqual(await call(runner, 'trivial.js', { name: 'after' }), {
        ok: true,
        value: { kind: 'wake', text: 'hello after' },
      });
    });
  });

  test("what one module leaves behind (globals, listeners, timers) does not reach another module's calls", async () => {
    await withRunner({ poolSize: 1 }, async (runner) => {
      assert.deepEqual(await call(runner, 'leaves.js', { secret: 'of another sender' }), { ok: true, value: 'left' });
      assert.deepEqual(await call(runner, 'looks.js'), { ok: true, value: ['undefined', 'undefined', 0] });
    });
    await withRunner({ poolSize: 4 }, async (runner) => {
      assert.deepEqual(await call(runner, 'leaves.js', { secret: 'of another sender' }), { ok: true, value: 'left' });
      assert.deepEqual(await call(runner, 'looks.js'), { ok: true, value: ['undefined', 'undefined', 0] });
    });
  });

  test('a trivial transform still works in the sandbox', async () => {
    await withRunner({}, async (runner) => {
      assert.deepEqual(await call(runner, 'trivial.js', { name: 'world' }), {
        ok: true,
        value: { kind: 'wake', text: 'hello world' },
      });
    });
  });

  test("a transform child's console reaches the output callback, and the runtime's ExperimentalWarning does not", async () => {
    const lines: string[] = [];
    await writeFile(
      join(root, 'talks.js'),
      'export default () => { console.log("hello from the transform"); return 1; };\n',
    );
    await withRunner({ onOutput: (_module, line) => void lines.push(line) }, async (runner) => {
      assert.deepEqual(await call(runner, 'talks.js'), { ok: true, value: 1 });
      assert.deepEqual(await call(runner, 'trivial.js', { name: 'x' }), {
        ok: true,
        value: { kind: 'wake', text: 'hello x' },
      });
      // stderr is a pipe of its own: its line may trail the answer on stdout.
      await until("the transform's console line", () => lines.length > 0);
    });
    assert.deepEqual(lines, ['hello from the transform']);
  });
}

for (const { name, runtime } of CHILD_RUNTIMES) describe(`children on ${name}`, () => suite(runtime));

test('childCommand() starts the runtime it is given with its permission system and nothing more', () => {
  const node = childCommand({
    root: '/srv/t',
    heapMb: 64,
    runtime: {
      kind: 'node',
      execPath: '/usr/bin/node',
      nodeFlags: new Set(['--experimental-permission', '--disable-warning']),
    },
  });
  assert.equal(node.file, '/usr/bin/node');
  assert.deepEqual(node.args.slice(0, 6), [
    '--experimental-permission',
    '--allow-fs-read=/srv/t',
    '--no-addons',
    '--disable-warning=ExperimentalWarning',
    '--max-old-space-size=64',
    '--input-type=module',
  ]);
  const newer = childCommand({
    root: '/srv/t',
    heapMb: 64,
    runtime: { kind: 'node', execPath: '/usr/bin/node', nodeFlags: new Set(['--permission']) },
  });
  assert.deepEqual(newer.args.slice(0, 4), ['--permission', '--allow-fs-read=/srv/t', '--no-addons', '--no-warnings']);
  const deno = childCommand({ root: '/srv/t', heapMb: 64, runtime: { kind: 'deno', execPath: '/usr/bin/deno' } });
  assert.equal(deno.file, '/usr/bin/deno');
  assert.deepEqual(deno.args.slice(0, -1), [
    'run',
    '--no-prompt',
    '--no-config',
    '--no-lock',
    '--no-npm',
    '--no-remote',
    '--allow-read=/srv/t',
    '--v8-flags=--max-old-space-size=64',
  ]);
  assert.match(deno.args.at(-1)!, /^data:text\/javascript;base64,/);
  assert.ok(!deno.args.some((a) => /^--allow-(net|env|run|write|sys|ffi|all)|^-A$/.test(a)));
});

test('rootProblem() refuses a transforms directory with a comma on Node, whose flag would read it as two paths', async () => {
  const node = { kind: 'node' as const, execPath: '/usr/bin/node', nodeFlags: new Set<string>() };
  assert.match(rootProblem('/srv/a,/etc', node) ?? '', /may not contain a comma/);
  assert.equal(rootProblem('/srv/a', node), null);
  assert.equal(rootProblem('/srv/a,b', { kind: 'deno', execPath: '/usr/bin/deno' }), null);
  if (isDeno) return; // Deno takes the path whole; the refusal below is Node's
  const odd = join(base, 'with,comma');
  await mkdir(odd);
  await writeFile(join(odd, 'trivial.js'), probes['trivial.js']!);
  const runner = createTransformChildPool({ root: odd });
  try {
    const result = await runner.run({ module: join(odd, 'trivial.js') }, input());
    assert.ok(
      !result.ok && result.reason === 'load-failed' && /may not contain a comma/.test(result.detail),
      JSON.stringify(result),
    );
  } finally {
    await runner.close();
  }
});

// The server as it runs, with a descriptor its launcher left open (past a gap, where Node does not
// mark it close-on-exec at start): what a transform in it reaches.
const REACH = `import fs from 'node:fs';
import process from 'node:process';
import { Buffer } from 'node:buffer';
const attempt = (fn) => { try { return String(fn()); } catch (error) { return 'denied: ' + (error.code ?? error.name); } };
export default () => ({ text: JSON.stringify({
  fd: attempt(() => { const b = Buffer.alloc(64); return b.subarray(0, fs.readSync(40, b, 0, 64, 0)).toString(); }),
  environ: attempt(() => fs.readFileSync('/proc/' + process.ppid + '/environ', 'latin1')),
  signal: attempt(() => { process.kill(process.ppid, 0); return 'signalled'; }),
  deno: typeof globalThis.Deno,
}) });
`;

for (const { name, runtime } of CHILD_RUNTIMES) {
  test(`serve with transforms on ${name}: a transform reads neither a descriptor the server inherited nor its /proc entries${name === 'deno' ? ', and cannot signal it' : ''}`, async (t) => {
    const dir = await tempDir(t, 'hooks-reach-');
    await mkdir(join(dir, 'hooks', 'transforms'), { recursive: true });
    await writeFile(join(dir, 'hooks', 'transforms', 'reach.js'), REACH);
    const secret = join(dir, 'launcher-secret.txt');
    await writeFile(secret, 'secret-of-the-launcher\n', { mode: 0o600 });
    const token = 'reach-token-0123456789abcdef';
    // On a Node server, Deno children are the setting; on a Deno server they are the default.
    const onDeno = runtime.kind === 'deno' && !IS_DENO
      ? { transformRuntime: 'deno', transformDenoPath: DENO_PATH }
      : {};
    const mapping = {
      match: { path: 'reach' },
      action: 'wake',
      wakeMode: 'next-heartbeat',
      allowUnsafeExternalContent: true,
      transform: { module: 'reach.js' },
    };
    await writeFile(
      join(dir, 'config.json'),
      JSON.stringify({ hooks: { enabled: true, token, ...onDeno, mappings: [mapping] } }),
      { mode: 0o600 },
    );

    const held = openSync(secret, 'r');
    const stdio: StdioOptions = ['ignore', 'pipe', 'pipe', ...Array<'ignore'>(37).fill('ignore'), held];
    const [cmd, argv] = cliCommand([
      'serve',
      '--config',
      join(dir, 'config.json'),
      '--port',
      '0',
      '--state-dir',
      join(dir, 'state'),
    ]);
    const server = await listening(spawn(cmd, argv, { cwd: ROOT, env: process.env, stdio }));
    closeSync(held);
    stopAfter(t, server);

    const reply = await post(server.url, '/hooks/reach', { headers: { authorization: `Bearer ${token}` }, body: {} });
    assert.equal(reply.status, 200, reply.text);
    const text = (await readEvents(join(dir, 'state'))).at(-1)?.text ?? '';
    const seen = JSON.parse(/\{.*\}/.exec(text)?.[0] ?? '{}') as Record<string, string>;
    assert.equal(seen['deno'], runtime.kind === 'deno' ? 'object' : 'undefined', text);
    assert.doesNotMatch(seen['fd'] ?? '', /secret-of-the-launcher/, "the launcher's descriptor reached the transform");
    assert.match(seen['environ'] ?? '', /^denied: /);
    // Node's permission model does not cover signals (docs/security.md); Deno's does.
    if (runtime.kind === 'deno') assert.match(seen['signal'] ?? '', /^denied: /);
    else assert.equal(seen['signal'], 'signalled');
  });
}
