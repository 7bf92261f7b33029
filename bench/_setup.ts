// What one run of the bench stands up: a temporary directory with the hooks-ingress configs, every
// server under test (one hooks-ingress process per scenario and build), and the cases (a scenario
// on a server) that the rounds measure; then one request of each case to check its answer.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LogTap } from './_log-tap.ts';
import { type Options, ROOT, type ScenarioName, SCENARIOS } from './_options.ts';
import { probe, silentModel, startNode, startWebhook } from './_servers.ts';
import { luaScript, type Run } from './_wrk.ts';

// Every wake-like scenario (and the echo) carries the same body; `next-heartbeat` so that no
// scenario starts a heartbeat turn and they all measure the same durable path.
const WAKE_BODY = '{"text":"bench","mode":"next-heartbeat"}';
const AGENT_BODY = '{"message":"bench"}';

/** A server under test. */
export interface Target {
  name: string;
  kind: 'echo' | 'webhook' | 'floor' | 'ingress';
  url: string;
  pid: number;
  tap: LogTap | null;
  /** This checkout's build: the one the reference values are about. */
  current: boolean;
  /** A hooks-ingress process serves one scenario (or the upload) only, with its own state directory. */
  serves?: ScenarioName | 'upload';
}

/** One row of the report: a scenario against one server. */
export interface Case {
  scenario: ScenarioName;
  target: Target;
  path: string;
  lua: string;
  status: number;
  runs: Run[];
}

export interface Setup {
  tmp: string;
  token: string;
  wrong: string;
  targets: Target[];
  cases: Case[];
  closeModel: () => void;
}

/** The hooks-ingress config every build under test runs with (`ledger` false: the request ledger off). */
function _config(token: string, modelUrl: string, ledger = true): object {
  return {
    hooks: {
      enabled: true,
      token,
      ...(ledger ? {} : { ledger: { enabled: false } }),
      // So that the 401 scenario measures the auth path on every request, never the lockout (429).
      authRateLimit: { maxFailures: 1_000_000_000, windowSeconds: 1, lockoutSeconds: 1 },
      // No model reads the main session here, so every wake stays unread: the backlog bound is
      // raised so that a run measures accepted wakes, not backpressure (503).
      maxBacklogEvents: 1_000_000_000,
      maxBacklogBytes: 2 ** 40,
      // Runs pile up (the model never answers): let them, the scenario measures accepting them.
      maxQueuedRuns: 1_000_000_000,
      mappings: [
        { match: { path: 'plain' }, action: 'wake', wakeMode: 'next-heartbeat', textTemplate: '{{text}}' },
        { match: { path: 't' }, action: 'wake', wakeMode: 'next-heartbeat', transform: { module: 'trivial.js' } },
      ],
    },
    agents: { defaults: { model: 'silent/model', maxConcurrent: 1, timeoutSeconds: 3600 } },
    models: { providers: { silent: { api: 'openai-completions', baseUrl: modelUrl, apiKey: 'bench' } } },
  };
}

/** Starts every server the options call for, in a new directory under `o.tmp`, and lists the cases. */
export async function setUp(o: Options, webhook: string | null): Promise<Setup> {
  const tmp = mkdtempSync(join(o.tmp, 'hooks-ingress-bench-'));
  const token = randomBytes(32).toString('base64url');
  // Same length as the real one, so the 401 requests are byte for byte as large.
  const wrong = randomBytes(32).toString('base64url');
  const model = await silentModel();
  writeFileSync(join(tmp, 'config.json'), JSON.stringify(_config(token, model.url)), { mode: 0o600 });
  writeFileSync(join(tmp, 'config-ledger-off.json'), JSON.stringify(_config(token, model.url, false)), { mode: 0o600 });
  const transforms = join(tmp, 'hooks', 'transforms');
  mkdirSync(transforms, { recursive: true });
  writeFileSync(
    join(transforms, 'trivial.js'),
    "export default ({ payload }) => ({ kind: 'wake', text: String(payload.text) });\n",
  );

  const targets: Target[] = [];
  const echo = await startNode('echo', [join(ROOT, 'bench', 'baseline.mjs')], null, ROOT);
  targets.push({ name: 'echo', kind: 'echo', ...echo, tap: null, current: false });
  if (o.scenarios.has('floor')) {
    // It logs as hooks-ingress does, so its log is read (and its statuses counted) the same way.
    const tap = new LogTap();
    targets.push({
      name: 'floor',
      kind: 'floor',
      ...(await startNode('floor', [join(ROOT, 'bench', 'floor.mjs'), join(tmp, 'config.json')], tap, ROOT)),
      tap,
      current: false,
    });
  }
  if (webhook !== null && o.scenarios.has('webhook')) {
    targets.push({
      name: 'webhook',
      kind: 'webhook',
      ...(await startWebhook(webhook, tmp, token)),
      tap: null,
      current: false,
    });
  }
  // One process per scenario, each on its own state directory: no scenario pays for what another
  // left behind (the agent scenario leaves every run it accepted queued, the wakes an unread backlog).
  const purposes = [
    ...SCENARIOS.filter((name) => o.scenarios.has(name) && name !== 'echo' && name !== 'webhook' && name !== 'floor'),
    ...(o.upload ? (['upload'] as const) : []),
  ];
  for (const { name, dir } of o.builds) {
    for (const serves of purposes) {
      const tap = new LogTap();
      const state = join(tmp, `state-${name}-${serves}`);
      const config = join(tmp, serves.endsWith('-off') ? 'config-ledger-off.json' : 'config.json');
      const args = [
        join(dir, 'bin', 'hooks-ingress'),
        'serve',
        '--config',
        config,
        '--state-dir',
        state,
        '--host',
        '127.0.0.1',
        '--port',
        '0',
      ];
      const started = await startNode(`hooks-ingress (${name}, ${serves})`, args, tap, ROOT);
      targets.push({ name, kind: 'ingress', ...started, tap, current: dir === ROOT, serves });
    }
  }

  const lua = {
    good: luaScript(join(tmp, 'good.lua'), token, WAKE_BODY, {}, true),
    wrong: luaScript(join(tmp, 'wrong.lua'), wrong, WAKE_BODY),
    replay: luaScript(join(tmp, 'replay.lua'), token, WAKE_BODY, { 'Idempotency-Key': 'bench-replay' }),
    agent: luaScript(join(tmp, 'agent.lua'), token, AGENT_BODY),
  };
  const shapes: Record<ScenarioName, { kind: Target['kind']; path: string; lua: string; status: number }> = {
    echo: { kind: 'echo', path: '/hooks/wake', lua: lua.good, status: 200 },
    webhook: { kind: 'webhook', path: '/hooks/wake', lua: lua.wrong, status: 401 },
    floor: { kind: 'floor', path: '/hooks/wake', lua: lua.wrong, status: 401 },
    '401': { kind: 'ingress', path: '/hooks/wake', lua: lua.wrong, status: 401 },
    '401-off': { kind: 'ingress', path: '/hooks/wake', lua: lua.wrong, status: 401 },
    wake: { kind: 'ingress', path: '/hooks/wake', lua: lua.good, status: 200 },
    'wake-off': { kind: 'ingress', path: '/hooks/wake', lua: lua.good, status: 200 },
    replay: { kind: 'ingress', path: '/hooks/wake', lua: lua.replay, status: 200 },
    agent: { kind: 'ingress', path: '/hooks/agent', lua: lua.agent, status: 202 },
    template: { kind: 'ingress', path: '/hooks/plain', lua: lua.good, status: 200 },
    transform: { kind: 'ingress', path: '/hooks/t', lua: lua.good, status: 200 },
  };
  const cases: Case[] = [];
  for (const scenario of SCENARIOS) {
    if (!o.scenarios.has(scenario)) continue;
    const shape = shapes[scenario];
    for (const target of targets) {
      if (target.kind === shape.kind && (target.serves === undefined || target.serves === scenario)) {
        cases.push({ scenario, target, path: shape.path, lua: shape.lua, status: shape.status, runs: [] });
      }
    }
  }
  return { tmp, token, wrong, targets, cases, closeModel: model.close };
}

/** One request of each case first: a case that answers the wrong status stops the run here. */
export async function probeAll(s: Setup): Promise<void> {
  const problems: string[] = [];
  for (const c of s.cases) {
    const good = c.scenario !== '401' && c.scenario !== '401-off' && c.scenario !== 'webhook' && c.scenario !== 'floor';
    const headers: Record<string, string> = {
      authorization: `Bearer ${good ? s.token : s.wrong}`,
      'content-type': 'application/json',
    };
    if (c.scenario === 'replay') headers['idempotency-key'] = 'bench-replay';
    const reply = await probe(`${c.target.url}${c.path}`, headers, c.scenario === 'agent' ? AGENT_BODY : WAKE_BODY)
      .catch((error: Error) => ({ status: error.message }));
    if (reply.status !== c.status) {
      problems.push(`${c.scenario} on ${c.target.name} answered ${reply.status}, expected ${c.status}`);
    }
  }
  const tails = s.targets.map((t) => t.tap?.tail().trimEnd() ?? '').filter((t) => t !== '');
  if (problems.length > 0) {
    throw new Error(`probe requests failed:\n  ${problems.join('\n  ')}\n--- server stderr ---\n${tails.join('\n')}`);
  }
}
