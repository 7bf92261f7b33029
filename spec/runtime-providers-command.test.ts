import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmod, readFile, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { createCommandProvider, formatInput, type Spawn } from '../lib/runtime/providers/command.ts';
import type { TurnRequest } from '../lib/runtime/providers/provider.ts';
import { tempDir } from './_dir.ts';
import { addProviderTests } from './_provider-contract.ts';
import { turnRequest } from './_turn.ts';

// Writes an executable `#!/bin/sh` script into a temp dir of the test and returns its path.
async function script(t: TestContext, name: string, body: string): Promise<string> {
  const path = join(await tempDir(t, 'hooks-ingress-command-'), name);
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
  return path;
}

// The real spawn, also handing each child to `watch` (to see its exit, or to abort at a moment it chooses).
function watching(watch: (child: ChildProcess) => void): Spawn {
  return (command, args, options) => {
    const child = spawn(command, args, options);
    watch(child);
    return child;
  };
}

/** A spawn that keeps its child and aborts `signal` when `hook` calls back on that child. */
function abortingOn(
  hook: (child: ChildProcess, abort: () => void) => void,
): { spawn: Spawn; signal: AbortSignal; child: () => ChildProcess } {
  const controller = new AbortController();
  let child: ChildProcess | undefined;
  const spawnIt = watching((c) => {
    child = c;
    hook(c, () => controller.abort());
  });
  return { spawn: spawnIt, signal: controller.signal, child: () => child! };
}

async function ended(child: ChildProcess): Promise<NodeJS.Signals | null> {
  if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
  return child.signalCode;
}

function turn(overrides: Partial<TurnRequest> = {}): TurnRequest {
  return turnRequest('llama3', { system: '', ...overrides });
}

addProviderTests('createCommandProvider()', async (t) => {
  const hang = await script(t, 'hang.sh', 'echo ready; sleep 1000');
  let started = 0;
  let ready = () => {};
  const provider = createCommandProvider({
    command: [hang],
    spawn: watching((child) => (started++, child.stdout?.once('data', () => ready()))),
  });
  return { provider, calls: () => started, hang: () => new Promise<void>((resolve) => (ready = resolve)) };
});

test('createCommandProvider() sends a bare prompt on stdin and replies with stdout trimmed', async (t) => {
  const cat = await script(t, 'cat.sh', 'echo; cat; echo "  "');
  assert.deepEqual(await createCommandProvider({ command: [cat] }).complete(turn()), { ok: true, value: 'Say hi' });
});

test('createCommandProvider() lays out system prompt and history before the prompt, as formatInput() documents', async (t) => {
  const cat = await script(t, 'cat-all.sh', 'cat');
  const request = turn({
    system: 'You are terse.',
    history: [
      { role: 'user', content: 'Earlier question' },
      { role: 'assistant', content: 'Earlier answer' },
    ],
  });
  const expected = [
    '<system>',
    'You are terse.',
    '</system>',
    '',
    '<history>',
    '<user>',
    'Earlier question',
    '</user>',
    '<assistant>',
    'Earlier answer',
    '</assistant>',
    '</history>',
    '',
    'Say hi',
  ].join('\n');
  assert.equal(formatInput(request), expected);
  assert.deepEqual(await createCommandProvider({ command: [cat] }).complete(request), { ok: true, value: expected });
  assert.equal(formatInput({ system: 'S', history: [], prompt: 'P' }), '<system>\nS\n</system>\n\nP');
});

test('createCommandProvider() passes arguments as they are and adds HOOKS_INGRESS_* to the parent environment', async (t) => {
  const env = await script(
    t,
    'env.sh',
    'printf "%s|" "$@" "$HOOKS_INGRESS_RUN_ID" "$HOOKS_INGRESS_SESSION_KEY" "$HOOKS_INGRESS_AGENT_ID" "$HOOKS_INGRESS_MODEL" "${HOOKS_INGRESS_THINKING-unset}" "$PATH"',
  );
  const provider = createCommandProvider({ command: [env, 'a b', '$HOME'] });
  const plain = await provider.complete(turn());
  assert.deepEqual(plain, { ok: true, value: `a b|$HOME|run-1|hook:abc|main|llama3|unset|${process.env.PATH}|` });
  const thinking = await provider.complete(turn({ thinking: 'high' }));
  assert.equal(thinking.ok && thinking.value.split('|')[6], 'high');
});

test('createCommandProvider() runs in the agent workspace when there is one', async (t) => {
  const pwd = await script(t, 'pwd.sh', 'pwd -P');
  const provider = createCommandProvider({ command: [pwd] });
  const workspace = await tempDir(t);
  assert.deepEqual(await provider.complete(turn({ run: { runId: 'r', sessionKey: 'k', agentId: 'a', workspace } })), {
    ok: true,
    value: workspace,
  });
  assert.deepEqual(await provider.complete(turn()), { ok: true, value: await realpath(process.cwd()) });
});

test('createCommandProvider() fails permanently on a non-zero exit with the last stderr line', async (t) => {
  const fail = await script(
    t,
    'fail.sh',
    'echo partial; echo "warming up" >&2; printf "  model not found  \\n\\n" >&2; exit 3',
  );
  assert.deepEqual(await createCommandProvider({ command: [fail] }).complete(turn()), {
    ok: false,
    retryable: false,
    message: 'exit 3: model not found',
  });
  const silent = await script(t, 'silent.sh', 'exit 4');
  assert.deepEqual(await createCommandProvider({ command: [silent] }).complete(turn()), {
    ok: false,
    retryable: false,
    message: 'exit 4',
  });
  const killed = await script(t, 'killed.sh', 'kill -9 $$');
  assert.deepEqual(await createCommandProvider({ command: [killed] }).complete(turn()), {
    ok: false,
    retryable: false,
    message: 'killed by SIGKILL',
  });
});

test('createCommandProvider() fails permanently when the program cannot be started', async (t) => {
  const missing = join(await tempDir(t), 'missing');
  assert.deepEqual(await createCommandProvider({ command: [missing] }).complete(turn()), {
    ok: false,
    retryable: false,
    message: `Cannot run ${missing}: ENOENT`,
  });
  const throwing: Spawn = () => {
    throw new Error('spawn refused');
  };
  assert.deepEqual(await createCommandProvider({ command: ['x'], spawn: throwing }).complete(turn()), {
    ok: false,
    retryable: false,
    message: 'Cannot run x: spawn refused',
  });
});

test('createCommandProvider() survives a command that exits without reading a large stdin', async (t) => {
  const quick = await script(t, 'quick.sh', 'exit 0');
  assert.deepEqual(
    await createCommandProvider({ command: [quick] }).complete(turn({ prompt: 'x'.repeat(4 * 1024 * 1024) })),
    { ok: true, value: '' },
  );
});

test('createCommandProvider() stops a command whose output passes maxOutputBytes', async (t) => {
  const chatty = await script(t, 'chatty.sh', 'exec yes');
  let child: ChildProcess | undefined;
  const provider = createCommandProvider({
    command: [chatty],
    maxOutputBytes: 1000,
    spawn: watching((c) => (child = c)),
  });
  assert.deepEqual(await provider.complete(turn()), {
    ok: false,
    retryable: false,
    message: 'Output exceeds 1000 bytes',
  });
  assert.equal(await ended(child!), 'SIGTERM');
});

test('createCommandProvider() keeps only the tail of a stderr written without pause: 20 MB of it, then the reason', async (t) => {
  const noisy = await script(
    t,
    'noisy.sh',
    "head -c 20000000 /dev/zero | tr '\\0' y >&2\necho >&2\necho 'the reason' >&2\nexit 3",
  );
  assert.deepEqual(await createCommandProvider({ command: [noisy] }).complete(turn()), {
    ok: false,
    retryable: false,
    message: 'exit 3: the reason',
  });
});

test('createCommandProvider() kills a hung command with SIGTERM at abort and answers aborted', async (t) => {
  const hang = await script(t, 'hang.sh', 'echo ready; sleep 1000');
  const run = abortingOn((c, abort) => c.stdout?.once('data', abort));
  const result = await createCommandProvider({ command: [hang], spawn: run.spawn }).complete(
    turn({ signal: run.signal }),
  );
  assert.deepEqual(result, { ok: false, retryable: false, message: 'aborted' });
  assert.equal(await ended(run.child()), 'SIGTERM');
});

test('createCommandProvider() kills a command that ignores SIGTERM with SIGKILL after the grace', async (t) => {
  const stubborn = await script(t, 'stubborn.sh', "trap '' TERM; echo ready; while :; do sleep 1; done");
  const run = abortingOn((c, abort) => c.stdout?.once('data', abort));
  const result = await createCommandProvider({ command: [stubborn], spawn: run.spawn, graceMs: 50 }).complete(
    turn({ signal: run.signal }),
  );
  assert.deepEqual(result, { ok: false, retryable: false, message: 'aborted' });
  assert.equal(await ended(run.child()), 'SIGKILL');
});

test('createCommandProvider() settles at abort when the command exited but a process it started holds stdout', async (t) => {
  const forks = await script(t, 'forks.sh', 'sleep 1000 &\necho started');
  const run = abortingOn((c, abort) => c.once('exit', abort));
  const result = await createCommandProvider({ command: [forks], spawn: run.spawn }).complete(
    turn({ signal: run.signal }),
  );
  assert.deepEqual(result, { ok: false, retryable: false, message: 'aborted' });
  // stdout closes only once the background sleep is gone: the stop reached the whole process group.
  if (run.child().stdout?.closed !== true) await once(run.child(), 'close');
});

test('createCommandProvider() ends the turn when the program exits, with all it wrote, and neither waits for nor stops a process it left in the background', async (t) => {
  const dir = await tempDir(t);
  const pids: number[] = [];
  try {
    for (
      const [name, body, expected] of [
        ['leaves.sh', 'echo "the reply"', { ok: true, value: 'the reply' }],
        // More than a pipe holds: the program's last bytes are still in the pipe when it exits.
        ['leaves-much.sh', "head -c 600000 /dev/zero | tr '\\0' x", { ok: true, value: 'x'.repeat(600_000) }],
        ['leaves-failing.sh', 'echo "model not found" >&2; exit 3', {
          ok: false,
          retryable: false,
          message: 'exit 3: model not found',
        }],
      ] as const
    ) {
      const pidFile = join(dir, `${name}.pid`);
      // The background process holds the command's stdout and stderr, as `cmd &` in a wrapper does.
      const command = await script(t, name, `sleep 60 &\necho $! > ${pidFile}\n${body}`);
      const result = await createCommandProvider({ command: [command] }).complete(
        turn({ signal: AbortSignal.timeout(15_000) }),
      );
      pids.push(Number(await readFile(pidFile, 'utf8')));
      assert.deepEqual(result, expected, name);
      assert.doesNotThrow(
        () => process.kill(pids.at(-1)!, 0),
        "the background process is still running: the operator's to manage",
      );
    }
  } finally {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
});

test('createCommandProvider() rejects an empty command and bad limits', () => {
  assert.throws(() => createCommandProvider({ command: [] }), {
    name: 'TypeError',
    message: 'Cannot use command: expected a non-empty array of strings, got []',
  });
  assert.throws(() => createCommandProvider({ command: ['a', 1 as unknown as string] }), {
    name: 'TypeError',
    message: 'Cannot use command: expected a non-empty array of strings, got ["a",1]',
  });
  assert.throws(() => createCommandProvider({ command: ['a'], graceMs: -1 }), {
    name: 'RangeError',
    message: 'Cannot use graceMs: -1 is not a duration',
  });
  assert.throws(() => createCommandProvider({ command: ['a'], maxOutputBytes: 0 }), {
    name: 'RangeError',
    message: 'Cannot use maxOutputBytes: 0 is not a positive integer',
  });
});
