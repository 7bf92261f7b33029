// Live reload against a real server process: `hooks-ingress reload` (over the control channel) and
// a plain SIGHUP re-read the config file; a valid one serves new requests at once, an invalid one
// is refused and logged while the old one keeps serving.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { access, mkdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { readEvents } from '../../lib/store/journal/read.ts';
import { defer } from '../_cleanup.ts';
import { post } from '../_http.ts';
import { captureIo } from '../_io.ts';
import { main } from '../../lib/cli/main.ts';
import { SIGNERS } from '../_signers.ts';
import {
  assertCleanStop,
  cliCommand,
  type ConfigFile,
  configFile,
  ROOT,
  runCli,
  serveState,
  type Spawned,
  spawnServer,
  stopAfter,
} from '../_cli.ts';
import { until } from '../_until.ts';
import { tempDir } from '../_dir.ts';

const OLD_TOKEN = 'reload-old-token-0123456789abcdef';
const NEW_TOKEN = 'reload-new-token-fedcba9876543210';
const WAKE = { text: 'ping', mode: 'next-heartbeat' };
const VARIABLES = "${VAR} values come from the server's environment, not this shell's";
// The pid file's name is part of the interface (the man page lists it under FILES), so it is spelled out here.
const PID_FILE = 'hooks-ingress.pid';

/** The config in a fresh directory; transforms live in `hooks/transforms` below it. */
function setup(t: TestContext, config: unknown): Promise<ConfigFile> {
  return configFile(t, config, 'ops-reload-');
}

/** Starts `serve` on a free port and waits for its "started" log line; SIGTERMs it after the test unless the test stopped it. */
async function serve(t: TestContext, s: ConfigFile): Promise<Spawned> {
  const server = await serveState(t, s);
  await until('the "started" log line', () => count(server, /^started$/) > 0, { detail: () => server.stderr() });
  return server;
}

function hooks(token: string, extra: Record<string, unknown> = {}) {
  return { hooks: { enabled: true, token, ...extra } };
}

function wake(url: string, token: string, path = '/hooks/wake', body: object = WAKE) {
  return post(url, path, { headers: { authorization: `Bearer ${token}` }, body });
}

/** The server's JSON log lines so far. */
function logLines(server: Spawned): Record<string, unknown>[] {
  return server.stderr().split('\n').flatMap((line) => {
    try {
      const value: unknown = JSON.parse(line);
      return typeof value === 'object' && value !== null ? [value as Record<string, unknown>] : [];
    } catch {
      return [];
    }
  });
}

function count(server: Spawned, message: RegExp): number {
  return logLines(server).filter((l) => message.test(String(l['msg']))).length;
}

/** Signals a reload (through the CLI or a direct SIGHUP) and waits for the server's verdict line. */
async function reload(
  server: Spawned,
  s: ConfigFile,
  how: 'command' | 'sighup',
  verdict: RegExp = /^reloaded$/,
): Promise<void> {
  const before = count(server, verdict);
  if (how === 'command') {
    const result = await runCli(['reload', '--state-dir', s.state]);
    const applied = verdict.test('reloaded');
    assert.equal(result.code, applied ? 0 : 1, result.stderr);
    if (applied) assert.match(result.stdout, new RegExp(`^applied: the server reloaded ${s.config}\n`));
    else {assert.match(
        result.stderr,
        new RegExp(`^hooks-ingress reload: refused: ${s.config} has problems; the server keeps its config\n`),
      );}
  } else {
    // process.kill, not child.kill: Deno's ChildProcess takes any signal it sent for the child's death
    // and refuses to send another, so the SIGTERM that stops the server would never go out.
    process.kill(server.child.pid!, 'SIGHUP');
  }
  await until(`a log line matching ${verdict}`, () => count(server, verdict) > before, {
    detail: () => server.stderr(),
  });
}

// --- the token --------------------------------------------------------------------------------

test('hooks-ingress reload makes the server take the new hook token and refuse the old one', async (t) => {
  const s = await setup(t, hooks(OLD_TOKEN));
  const server = await serve(t, s);
  assert.equal((await wake(server.url, OLD_TOKEN)).status, 200);
  assert.equal((await wake(server.url, NEW_TOKEN)).status, 401);

  await s.write(hooks(NEW_TOKEN));
  await reload(server, s, 'command');
  assert.equal((await wake(server.url, NEW_TOKEN)).status, 200);
  const old = await wake(server.url, OLD_TOKEN);
  assert.equal(old.status, 401);
  assert.equal(old.body['code'], 'ERR_UNAUTHORIZED');
  const line = logLines(server).find((l) => l['msg'] === 'reloaded');
  assert.equal(line?.['file'], s.config);
});

test('SIGHUP sent to the server process reloads the hook token as the reload command does', async (t) => {
  const s = await setup(t, hooks(OLD_TOKEN));
  const server = await serve(t, s);
  await s.write(hooks(NEW_TOKEN));
  await reload(server, s, 'sighup');
  assert.equal((await wake(server.url, NEW_TOKEN)).status, 200);
  assert.equal((await wake(server.url, OLD_TOKEN)).status, 401);
  // The process is still the same one, and it still stops cleanly.
  server.child.kill('SIGTERM');
  await assertCleanStop(server);
});

// --- mappings and transforms ------------------------------------------------------------------

test('a mapping added to the config file answers after SIGHUP', async (t) => {
  const s = await setup(t, hooks(OLD_TOKEN));
  const server = await serve(t, s);
  assert.equal((await wake(server.url, OLD_TOKEN, '/hooks/github', { repo: 'r' })).status, 404);

  const mapping = {
    id: 'gh',
    match: { path: 'github' },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    textTemplate: 'push to {{repo}}',
  };
  await s.write(hooks(OLD_TOKEN, { mappings: [mapping] }));
  await reload(server, s, 'sighup');
  const reply = await wake(server.url, OLD_TOKEN, '/hooks/github', { repo: 'hooks-ingress' });
  assert.equal(reply.status, 200, reply.text);
  const events = await readEvents(s.state);
  assert.equal(events.at(-1)?.source, 'hook:github');
  assert.match(events.at(-1)?.text ?? '', /push to hooks-ingress/);
});

test('a server started with no transform and no signed path runs both once a reload adds them (their code is imported then)', async (t) => {
  const s = await setup(t, hooks(OLD_TOKEN));
  const root = join(s.dir, 'hooks', 'transforms');
  await mkdir(root, { recursive: true });
  await writeFile(
    join(root, 'shout.mjs'),
    'export default (input) => ({ text: String(input.payload.word).toUpperCase() });\n',
  );
  const server = await serve(t, s);
  const secret = 'reload-github-secret';
  const mappings = [
    {
      id: 'shout',
      match: { path: 'shout' },
      action: 'wake',
      wakeMode: 'next-heartbeat',
      transform: { module: 'shout.mjs' },
    },
    {
      id: 'gh',
      match: { path: 'github' },
      action: 'wake',
      wakeMode: 'next-heartbeat',
      textTemplate: 'push',
      signature: { scheme: 'github', secret },
    },
  ];
  await s.write(hooks(OLD_TOKEN, { mappings }));
  await reload(server, s, 'sighup');

  const shouted = await wake(server.url, OLD_TOKEN, '/hooks/shout', { word: 'loud' });
  assert.equal(shouted.status, 200, shouted.text);
  assert.match((await readEvents(s.state)).at(-1)?.text ?? '', /\nLOUD\n/);
  const body = JSON.stringify({ ref: 'main' });
  const signed = await post(server.url, '/hooks/github', {
    headers: await SIGNERS['github']!({ secret, body, id: 'delivery-1', nowSeconds: Math.floor(Date.now() / 1000) }),
    body,
  });
  assert.equal(signed.status, 200, signed.text);
  const forged = await post(server.url, '/hooks/github', {
    headers: await SIGNERS['github']!({
      secret: 'not-the-secret',
      body,
      id: 'delivery-2',
      nowSeconds: Math.floor(Date.now() / 1000),
    }),
    body,
  });
  assert.equal(forged.status, 401, forged.text);
});

test('a transform edited on disk is re-imported after a reload, not before (the module cache is cleared)', async (t) => {
  const mapping = {
    id: 'stamp',
    match: { path: 'stamp' },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    transform: { module: 'stamp.mjs' },
  };
  const s = await setup(t, hooks(OLD_TOKEN, { mappings: [mapping] }));
  const root = join(s.dir, 'hooks', 'transforms');
  await mkdir(root, { recursive: true });
  // The edit lands in a module the transform imports, so the whole import graph must be fresh.
  await writeFile(
    join(root, 'stamp.mjs'),
    'import { version } from "./version.mjs";\nexport default () => ({ text: `stamp ${version}` });\n',
  );
  const version = (n: number) => writeFile(join(root, 'version.mjs'), `export const version = 'v${n}';\n`);
  await version(1);
  const server = await serve(t, s);
  const stamp = async () => {
    const reply = await wake(server.url, OLD_TOKEN, '/hooks/stamp', {});
    assert.equal(reply.status, 200, reply.text);
    return /stamp (v\d)/.exec((await readEvents(s.state)).at(-1)?.text ?? '')?.[1];
  };

  assert.equal(await stamp(), 'v1');
  await version(2);
  assert.equal(await stamp(), 'v1', 'without a reload the loaded module stays');
  await reload(server, s, 'command');
  assert.equal(await stamp(), 'v2');
});

// --- a config that does not validate ----------------------------------------------------------

test('an invalid config is refused on reload: every problem is logged and the old config keeps serving', async (t) => {
  const s = await setup(t, hooks(OLD_TOKEN));
  const server = await serve(t, s);
  await s.write({
    hooks: { enabled: true, token: NEW_TOKEN, maxBodyBytes: -1, path: '/', mappings: [{ action: 'fly' }] },
  });
  await reload(server, s, 'command', /^reload refused/);

  const refused = logLines(server).find((l) => String(l['msg']).startsWith('reload refused'));
  assert.equal(refused?.['level'], 'error');
  const problems = String(refused?.['problems']);
  for (const key of ['hooks.maxBodyBytes', 'hooks.path', 'hooks.mappings[0].action']) {
    assert.ok(problems.includes(key), `${key} is reported: ${problems}`);
  }
  assert.equal(count(server, /^reloaded$/), 0);
  assert.equal((await wake(server.url, OLD_TOKEN)).status, 200, 'the old token still works');
  assert.equal((await wake(server.url, NEW_TOKEN)).status, 401, 'nothing of the refused file was taken');

  // A file that is not even JSON is refused the same way; a valid one afterwards is taken.
  await s.write('{ "hooks": ');
  await reload(server, s, 'sighup', /^reload refused/);
  assert.equal((await wake(server.url, OLD_TOKEN)).status, 200);
  await s.write(hooks(NEW_TOKEN));
  await reload(server, s, 'sighup');
  assert.equal((await wake(server.url, NEW_TOKEN)).status, 200);
});

test('a reload is refused when a link made in the transforms directory since the start leads to the state directory', async (t) => {
  const s = await setup(t, hooks(OLD_TOKEN));
  const server = await serve(t, s);
  const transforms = join(s.dir, 'hooks', 'transforms');
  await mkdir(transforms, { recursive: true });
  await symlink(s.state, join(transforms, 'shared'));
  await s.write(hooks(NEW_TOKEN));
  const result = await runCli(['reload', '--state-dir', s.state]);
  assert.equal(result.code, 1, result.stderr);
  assert.match(
    result.stderr,
    new RegExp(
      `^hooks-ingress reload: refused: ${s.config} has problems; the server keeps its config\n  state directory ${s.state}: the transforms directory \\S+ holds a symbolic link \\S+/shared to it: transforms may read it through the link`,
    ),
  );
  const refused = logLines(server).find((l) => String(l['msg']).startsWith('reload refused'));
  assert.equal(refused?.['level'], 'error');
  assert.match(String(refused?.['problems']), /holds a symbolic link \S+\/shared to it/);
  assert.equal((await wake(server.url, NEW_TOKEN)).status, 401, 'the new config was not taken');
  await rm(join(transforms, 'shared'));
  await reload(server, s, 'command');
  assert.equal((await wake(server.url, NEW_TOKEN)).status, 200, 'taken once the link is gone');
});

// --- requests in flight -----------------------------------------------------------------------

test('a request in flight during a reload completes on the config it started with', async (t) => {
  const s = await setup(t, hooks(OLD_TOKEN));
  const server = await serve(t, s);
  const body = Buffer.from(JSON.stringify({ text: 'slow body across a reload', mode: 'next-heartbeat' }));
  const half = Math.floor(body.length / 2);
  const req = request(new URL('/hooks/wake', server.url), {
    method: 'POST',
    agent: false,
    // 100-continue is the evidence that the server has the headers and is handling the request.
    headers: {
      authorization: `Bearer ${OLD_TOKEN}`,
      'content-type': 'application/json',
      'content-length': body.length,
      expect: '100-continue',
    },
  });
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
  });
  const continued = once(req, 'continue');
  req.flushHeaders();
  await continued;
  req.write(body.subarray(0, half));

  await s.write(hooks(NEW_TOKEN));
  await reload(server, s, 'command');
  assert.equal((await wake(server.url, OLD_TOKEN)).status, 401, 'new requests already use the new config');

  req.end(body.subarray(half));
  const { status, text } = await answer;
  assert.equal(status, 200, text);
  assert.deepEqual(JSON.parse(text), { ok: true, mode: 'next-heartbeat', eventOutcome: 'queued' });
  assert.ok((await readEvents(s.state)).some((e) => e.text.includes('slow body across a reload')));
});

test(
  'serve handles a SIGHUP or SIGTERM sent as soon as it has printed "listening on"',
  async (t) => {
    const s = await setup(t, hooks(OLD_TOKEN));
    const args = ['--config', s.config, '--port', '0', '--state-dir', s.state];
    const first = await spawnServer(args);
    let gone = false;
    void first.exited.then(() => (gone = true));
    stopAfter(t, first);
    process.kill(first.child.pid!, 'SIGHUP');
    await until('a reload or an exit', () => gone || count(first, /^reloaded$/) > 0, { detail: () => first.stderr() });
    assert.equal(gone, false, `a SIGHUP right after "listening on" killed the server: ${first.stderr()}`);
    first.child.kill('SIGTERM');
    await assertCleanStop(first);

    const second = await spawnServer(args);
    process.kill(second.child.pid!, 'SIGTERM');
    await assertCleanStop(second);
    await assert.rejects(access(join(s.state, PID_FILE)), { code: 'ENOENT' }, 'the pid file is removed');
  },
);

// --- the pid file -----------------------------------------------------------------------------

test('serve writes its pid to the pid file in the state directory while it runs and removes it on SIGTERM', async (t) => {
  const s = await setup(t, hooks(OLD_TOKEN));
  const server = await serve(t, s);
  const pidFile = join(s.state, PID_FILE);
  assert.equal(await readFile(pidFile, 'utf8'), `${server.child.pid}\n`);
  assert.equal((await stat(pidFile)).mode & 0o777, 0o600);
  server.child.kill('SIGTERM');
  await assertCleanStop(server);
  await assert.rejects(access(pidFile), { code: 'ENOENT' });

  const after = await runCli(['reload', '--state-dir', s.state]);
  assert.equal(after.code, 1);
  assert.match(after.stderr, /no running server found/);
});

// After a kill -9 the pid file stays behind, and its pid may be reused by an unrelated process:
// reload must never signal it (it used to send that process SIGHUP, which ends a process without a handler).
for (const content of ['live', '', '0\n', 'abc\n', '12x\n']) {
  test(`hooks-ingress reload with a pid file holding ${content === 'live' ? 'the pid of an unrelated live process' : JSON.stringify(content)} exits 1 and signals nothing`, async (t) => {
    const dir = await tempDir(t, 'ops-reload-');
    const bystander = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    defer(t, () => void (bystander.exitCode === null && bystander.signalCode === null && bystander.kill('SIGKILL')));
    await writeFile(join(dir, PID_FILE), content === 'live' ? `${bystander.pid}\n` : content);
    // Its own process group (detached): were "pid 0" ever signalled, only this child would get it.
    const [cmd, args] = cliCommand(['reload', '--state-dir', dir]);
    const child = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const [code, signal] = (await once(child, 'close')) as [number | null, string | null];
    assert.equal(signal, null, 'the reload command was not hit by its own SIGHUP');
    assert.equal(code, 1);
    assert.equal(stdout, '');
    assert.equal(stderr, `hooks-ingress reload: no running server found for state directory ${dir}\n`);
    // Had it been sent SIGHUP, that (signal 1) would end it before the SIGTERM sent now.
    const exited = once(bystander, 'exit') as Promise<[number | null, string | null]>;
    process.kill(bystander.pid!, 'SIGTERM');
    assert.equal((await exited)[1], 'SIGTERM', 'the process named by the pid file was not signalled');
  });
}

// --- the verdict ------------------------------------------------------------------------------

test('hooks-ingress reload prints what the reload changed: hooks, mappings and secrets added, removed or changed, never a value', async (t) => {
  const gh = { id: 'gh', match: { path: 'github' }, action: 'wake', wakeMode: 'next-heartbeat', textTemplate: 'push' };
  const ci = { id: 'ci', match: { path: 'ci' }, action: 'wake', wakeMode: 'next-heartbeat', textTemplate: 'build' };
  const s = await setup(t, hooks(OLD_TOKEN, { mappings: [gh] }));
  const server = await serve(t, s);
  const metricsToken = 'metrics-token-0123456789abcdef';
  await s.write({ ...hooks(NEW_TOKEN, { mappings: [ci] }), gateway: { auth: { token: metricsToken } } });
  const result = await runCli(['reload', '--state-dir', s.state]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(
    result.stdout,
    `applied: the server reloaded ${s.config}\n` +
      '  hooks added: /hooks/ci\n' +
      '  hooks removed: /hooks/github\n' +
      '  mappings added: ci\n' +
      '  mappings removed: gh\n' +
      '  secrets added: gateway.authToken\n' +
      '  secrets changed: hooks.token\n' +
      `  ${VARIABLES}\n`,
  );
  for (const secret of [OLD_TOKEN, NEW_TOKEN, metricsToken]) {
    assert.ok(!result.stdout.includes(secret) && !server.stderr().includes(secret), 'no secret is printed or logged');
  }
  const line = logLines(server).find((l) => l['msg'] === 'reloaded');
  assert.equal(line?.['secretsChanged'], 'hooks.token');
  assert.equal(line?.['mappingsAdded'], 'ci');

  // The same file again: nothing changed, and it says so.
  const again = await runCli(['reload', '--state-dir', s.state]);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(
    again.stdout,
    `applied: the server reloaded ${s.config}\n  no hook, mapping, transform or secret added, removed or changed\n  ${VARIABLES}\n`,
  );
});

test('hooks-ingress reload says which new values wait for the next start (gateway.port, state.dir, ...), on every verdict until a restart', async (t) => {
  const s = await setup(t, hooks(OLD_TOKEN));
  const server = await serve(t, s);
  const port = Number(new URL(server.url).port);
  await s.write({
    ...hooks(OLD_TOKEN, { idempotencyTtlSeconds: 60 }),
    gateway: { port: port === 65535 ? port - 1 : port + 1 },
  });
  for (let i = 0; i < 2; i++) {
    const result = await runCli(['reload', '--state-dir', s.state]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      result.stdout,
      `applied: the server reloaded ${s.config}\n  no hook, mapping, transform or secret added, removed or changed\n  not applied until the next start: gateway.port, hooks.idempotencyTtlSeconds\n  ${VARIABLES}\n`,
    );
  }
  assert.equal(
    logLines(server).find((l) => l['msg'] === 'reloaded')?.['needsRestart'],
    'gateway.port hooks.idempotencyTtlSeconds',
  );
  // The server still answers where it started.
  assert.equal(
    (await post(server.url, '/hooks/wake', {
      headers: { authorization: `Bearer ${OLD_TOKEN}` },
      body: { text: 'still here', mode: 'next-heartbeat' },
    })).status,
    200,
  );
});

test('hooks-ingress reload names each mapping whose keys changed (which keys) and each transform module whose file changed', async (t) => {
  const gh = {
    id: 'gh',
    match: { path: 'github' },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    textTemplate: 'push {{ref}}',
  };
  const ci = {
    id: 'ci',
    match: { path: 'ci' },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    transform: { module: 'ci.mjs' },
  };
  const s = await setup(t, hooks(OLD_TOKEN, { mappings: [gh, ci] }));
  await mkdir(join(s.dir, 'hooks', 'transforms'), { recursive: true });
  const transform = (text: string) =>
    writeFile(
      join(s.dir, 'hooks', 'transforms', 'ci.mjs'),
      `export default () => ({ text: ${JSON.stringify(text)} });\n`,
    );
  await transform('build');
  const server = await serve(t, s);
  await s.write(hooks(OLD_TOKEN, { mappings: [{ ...gh, textTemplate: 'pushed {{ref}}', wakeMode: 'now' }, ci] }));
  await transform('build finished');
  const result = await runCli(['reload', '--state-dir', s.state]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(
    result.stdout,
    `applied: the server reloaded ${s.config}\n  mappings changed: gh (textTemplate, wakeMode)\n  transforms changed: ci.mjs\n  ${VARIABLES}\n`,
  );
  const line = logLines(server).find((l) => l['msg'] === 'reloaded');
  assert.equal(line?.['mappingsChanged'], 'gh (textTemplate, wakeMode)');
  assert.equal(line?.['transformsChanged'], 'ci.mjs');
  // Only the module's content counts: the same file again is no change.
  const again = await runCli(['reload', '--state-dir', s.state]);
  assert.equal(
    again.stdout,
    `applied: the server reloaded ${s.config}\n  no hook, mapping, transform or secret added, removed or changed\n  ${VARIABLES}\n`,
  );
});

test('hooks-ingress reload says that inspector.port waits for the next start (the page stays where it was)', async (t) => {
  const s = await setup(t, hooks(OLD_TOKEN));
  await serve(t, s);
  await s.write({ ...hooks(OLD_TOKEN), inspector: { port: 0 } });
  const result = await runCli(['reload', '--state-dir', s.state]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(
    result.stdout,
    `applied: the server reloaded ${s.config}\n  no hook, mapping, transform or secret added, removed or changed\n  not applied until the next start: inspector.port\n  ${VARIABLES}\n`,
  );
  const inspect = await runCli(['inspect', '--state-dir', s.state]);
  assert.equal(inspect.code, 1, 'no inspector was started by the reload');
});

test('hooks-ingress reload --dry-run prints what a reload would change and applies nothing', async (t) => {
  const gh = { id: 'gh', match: { path: 'github' }, action: 'wake', wakeMode: 'next-heartbeat', textTemplate: 'push' };
  const s = await setup(t, hooks(OLD_TOKEN, { mappings: [gh] }));
  const server = await serve(t, s);
  const port = Number(new URL(server.url).port);
  await s.write({
    ...hooks(NEW_TOKEN, { mappings: [{ ...gh, textTemplate: 'pushed' }] }),
    gateway: { port: port === 65535 ? port - 1 : port + 1 },
  });
  const dry = await runCli(['reload', '--dry-run', '--state-dir', s.state]);
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(
    dry.stdout,
    `dry run: nothing applied; a reload of ${s.config} would change\n  mappings changed: gh (textTemplate)\n  secrets changed: hooks.token\n  not applied until the next start: gateway.port\n  ${VARIABLES}\n`,
  );
  assert.equal((await wake(server.url, OLD_TOKEN)).status, 200, 'the old token still opens the hooks');
  assert.equal((await wake(server.url, NEW_TOKEN)).status, 401);
  const status = JSON.parse((await runCli(['status', '--json', '--state-dir', s.state])).stdout) as {
    lastReload: unknown;
  };
  assert.equal(status.lastReload, null, 'no reload happened');
  assert.equal(count(server, /^reloaded$/), 0);
  // A file with problems: the dry run says what a reload would say, and the server keeps its config.
  await s.write('{ "hooks": { "enabled": true, "token": 5 } }');
  const refused = await runCli(['reload', '--dry-run', '--state-dir', s.state]);
  assert.equal(refused.code, 1);
  assert.match(
    refused.stderr,
    new RegExp(
      `^hooks-ingress reload: refused: ${s.config} has problems; the server keeps its config\n  hooks.token: `,
    ),
  );
  assert.equal(count(server, /^reload refused/), 0, 'a dry run logs no refusal');
});

test("reload is refused when a ${VAR} is set in the shell but not in the server's environment: exit 1, the reason names the variable, never a value", async (t) => {
  const s = await setup(t, hooks(OLD_TOKEN));
  const server = await serve(t, s);
  await s.write({ ...hooks(NEW_TOKEN), gateway: { auth: { token: '${METRICS_TOKEN}' } } });
  const shellValue = 'only-in-the-shell-0123456789';
  // The shell has the variable (the old reload validated with it and said all was well); the server does not.
  const result = await runCli(['reload', '--state-dir', s.state], { METRICS_TOKEN: shellValue });
  assert.equal(result.code, 1);
  assert.equal(result.stdout, '');
  assert.equal(
    result.stderr,
    `hooks-ingress reload: refused: ${s.config} has problems; the server keeps its config\n  gateway.auth.token: environment variable METRICS_TOKEN is not set\n`,
  );
  for (const secret of [shellValue, NEW_TOKEN, OLD_TOKEN]) {
    assert.ok(!result.stderr.includes(secret) && !server.stderr().includes(secret));
  }
  assert.equal((await wake(server.url, OLD_TOKEN)).status, 200, 'the old config stays');
  assert.equal((await wake(server.url, NEW_TOKEN)).status, 401);
});

// A transform module whose import waits until the file `gate` exists in the transforms directory
// (the one place a child may read): a reload's check of it stays running while the gate is shut.
async function gated(
  t: TestContext,
): Promise<{ s: ConfigFile; server: Spawned; open: () => Promise<void>; shut: () => Promise<void> }> {
  const mapping = {
    id: 'gated',
    match: { path: 'gated' },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    transform: { module: 'gated.mjs' },
  };
  const s = await setup(t, hooks(OLD_TOKEN, { mappings: [mapping], transformTimeoutMs: 600_000 }));
  const root = join(s.dir, 'hooks', 'transforms');
  await mkdir(root, { recursive: true });
  await writeFile(
    join(root, 'gated.mjs'),
    `import { existsSync } from 'node:fs';
while (!existsSync('gate')) await new Promise((resolve) => setTimeout(resolve, 10));
export default () => ({ text: 'through' });
`,
  );
  const open = () => writeFile(join(root, 'gate'), '');
  const shut = () => rm(join(root, 'gate'), { force: true });
  await open();
  const server = await serve(t, s);
  return { s, server, open, shut };
}

async function status(s: ConfigFile): Promise<Record<string, unknown>> {
  const result = await runCli(['status', '--json', '--state-dir', s.state]);
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

/** Sends `n` SIGHUPs a few ms apart (so the kernel does not merge them into one) and waits until the server has taken them. */
async function hangups(server: Spawned, s: ConfigFile, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    process.kill(server.child.pid!, 'SIGHUP');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  // Two round trips on the control channel: every signal sent before them has been handled.
  await status(s);
  await status(s);
}

test('hooks-ingress reload refuses a --timeout that is not more than 0 and at most 3600 seconds, saying which it takes', async () => {
  for (const given of ['0', '-1', '3601', 'soon']) {
    const { io, out } = captureIo({});
    assert.equal(await main(['reload', `--timeout=${given}`], io), 2, given);
    assert.match(
      out.stderr,
      new RegExp(`--timeout must be a number of seconds more than 0 and at most 3600, got "${given}"`),
      given,
    );
  }
});

test('hooks-ingress reload exits 1 when no verdict comes within --timeout', async (t) => {
  const { s, open, shut } = await gated(t);
  await shut();
  const result = await runCli(['reload', '--timeout', '0.5', '--state-dir', s.state]);
  assert.equal(result.code, 1);
  assert.equal(
    result.stderr,
    'hooks-ingress reload: no verdict from the server within 0.5 s; it may still apply the config (see its log)\n',
  );
  await open();
});

test('a storm of SIGHUPs and reload commands runs at most one reload and one waiting behind it; every request shares the verdict of the one after it', async (t) => {
  const { s, server, open, shut } = await gated(t);
  await shut();
  process.kill(server.child.pid!, 'SIGHUP');
  await until('a reload to run', async () => ((await status(s))['reloading'] as { running: boolean }).running);
  await hangups(server, s, 50);
  const before = (await status(s))['reloading'] as { running: boolean; pending: boolean; requests: number };
  assert.equal(before.running && before.pending, true);
  const commands = [
    runCli(['reload', '--timeout', '600', '--state-dir', s.state]),
    runCli(['reload', '--timeout', '600', '--state-dir', s.state]),
  ];
  await until(
    'both commands to wait for a verdict',
    async () => ((await status(s))['reloading'] as { requests: number }).requests === before.requests + 2,
  );
  assert.equal(count(server, /^reloaded$/), 0);

  await open();
  for (const result of await Promise.all(commands)) {
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^applied: the server reloaded /);
  }
  const after = await status(s);
  assert.deepEqual(after['reloading'], { running: false, pending: false, requests: 0 });
  assert.equal((after['lastReload'] as { outcome: string }).outcome, 'applied');
  assert.equal(count(server, /^reloaded$/), 2, 'the running reload and the one that waited; 52 requests made no more');
});

test('SIGTERM during a reload storm stops the server at once: the waiting reload is dropped and the running one abandoned', async (t) => {
  const { s, server, shut } = await gated(t);
  await shut();
  process.kill(server.child.pid!, 'SIGHUP');
  await until('a reload to run', async () => ((await status(s))['reloading'] as { running: boolean }).running);
  await hangups(server, s, 50);
  const before = ((await status(s))['reloading'] as { requests: number }).requests;
  const waiting = runCli(['reload', '--timeout', '600', '--state-dir', s.state]);
  await until(
    'the reload command to wait',
    async () => ((await status(s))['reloading'] as { requests: number }).requests === before + 1,
  );
  // The gate stays shut: a stop that waited for the running reload would never come.
  process.kill(server.child.pid!, 'SIGTERM');
  await assertCleanStop(server);
  assert.equal(count(server, /^reloaded$/), 0);
  const result = await waiting;
  assert.equal(result.code, 1, 'the command waiting for a verdict hears that none comes');
});

// --- systemctl reload -------------------------------------------------------------------------

// systemd is not PID 1 here: the unit's command lines are read from the file and run as systemd
// would, with the environment it gives the service (Environment=, STATE_DIRECTORY or the XDG dirs).
for (const unit of ['contrib/systemd/hooks-ingress.service', 'contrib/systemd/user/hooks-ingress.service']) {
  test(`${unit}: ExecReload= runs hooks-ingress reload, so systemctl reload fails when the server refuses the config`, async (t) => {
    const text = await readFile(join(ROOT, unit), 'utf8');
    const command = (key: string) => (new RegExp(`^${key}=(.*)$`, 'm').exec(text)?.[1] ?? '').trim().split(/\s+/);
    const [startBin, ...startArgs] = command('ExecStart');
    const [reloadBin, ...reloadArgs] = command('ExecReload');
    assert.equal(reloadBin, startBin, 'the same program as ExecStart');
    assert.deepEqual(startArgs, ['serve']);
    assert.deepEqual(reloadArgs, ['reload']);

    const s = await setup(t, hooks(OLD_TOKEN));
    // The system unit names the config and systemd gives STATE_DIRECTORY; the user unit relies on the XDG defaults under $HOME.
    const home = join(s.dir, 'home');
    await mkdir(join(home, '.config', 'hooks-ingress'), { recursive: true });
    await symlink(s.config, join(home, '.config', 'hooks-ingress', 'config.json'));
    const env = unit.includes('/user/') ? { HOME: home } : { HOOKS_INGRESS_CONFIG: s.config, STATE_DIRECTORY: s.state };
    const clean = { HOOKS_INGRESS_CONFIG: '', STATE_DIRECTORY: '', XDG_CONFIG_HOME: '', XDG_STATE_HOME: '', ...env };
    const reloadNow = () => runCli(reloadArgs, clean);
    const none = await reloadNow();
    assert.equal(none.code, 1, 'no server: systemctl reload fails');
    const server = await spawnServer(['--port', '0'], clean);
    stopAfter(t, server);
    await s.write(hooks(NEW_TOKEN));
    const applied = await reloadNow();
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(applied.stdout, /^applied: the server reloaded /);
    assert.equal((await wake(server.url, NEW_TOKEN)).status, 200);
    await s.write({ hooks: { enabled: true, token: NEW_TOKEN, path: '/' } });
    const refused = await reloadNow();
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /^hooks-ingress reload: refused: .* has problems; the server keeps its config\n {2}hooks\.path: /,
    );
  });
}
