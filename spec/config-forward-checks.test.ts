import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildConfig } from '../lib/config/load.ts';

// hooks.forward's list of the upstream's agents and the agent wakes go to, as check sees them.

const TOKEN = 'forward-checks-token-0123456789';

async function build(forward: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return buildConfig({
    hooks: { enabled: true, token: TOKEN, forward: { url: 'http://127.0.0.1:18789/hooks', token: 'up', ...forward } },
    ...extra,
  }, { file: null, env: {}, dir: '/' });
}

test('buildConfig() warns that wakes without hooks.forward.agentId are refused by an upstream with several agents and no system agent', async () => {
  const unset = await build({});
  assert.ok(unset.ok);
  const [warning] = unset.warnings.filter((w) => w.startsWith('hooks.forward.agentId'));
  assert.match(
    warning ?? '',
    /^hooks\.forward\.agentId: is not set, so wakes go to the upstream gateway without an agent: one with several agents and no agents\.defaults\.systemAgent\.agentId refuses them/,
  );
  assert.match(warning ?? '', /agentId is required when multiple agents are configured/);
  const several = await build({ agents: ['main', 'ops'] });
  assert.ok(several.ok && several.warnings.some((w) => w.startsWith('hooks.forward.agentId')));
  for (const quiet of [{ agentId: 'ops' }, { agents: ['main'] }, { agents: ['main', 'ops'], agentId: 'OPS' }]) {
    const built = await build(quiet);
    assert.ok(built.ok, JSON.stringify(quiet));
    assert.deepEqual(built.warnings, [], JSON.stringify(quiet));
  }
});

test('buildConfig() refuses an empty or duplicated hooks.forward.agents, an agentId not among them, and a maxPendingWakes outside 1..1000', async () => {
  const cases: [Record<string, unknown>, string][] = [
    [
      { agents: [] },
      "hooks.forward.agents: must list at least one agent (the upstream gateway's default first), or be left out",
    ],
    [
      { agents: ['main', 'Main'] },
      'hooks.forward.agents[1]: duplicates agent "Main" (agent ids are compared without case)',
    ],
    [
      { agents: ['main', 'ops'], agentId: 'research' },
      'hooks.forward.agentId: must be one of hooks.forward.agents (main, ops)',
    ],
    [{ maxPendingWakes: 0 }, 'hooks.forward.maxPendingWakes: must be at least 1'],
    [{ maxPendingWakes: 1001 }, 'hooks.forward.maxPendingWakes: must be at most 1000'],
  ];
  for (const [forward, problem] of cases) {
    const built = await build(forward);
    assert.ok(!built.ok, JSON.stringify(forward));
    assert.deepEqual(built.problems, [problem]);
  }
});

test('buildConfig() takes hooks.forward.agents, agentId and maxPendingWakes as written', async () => {
  const built = await build({ agents: ['main', 'ops'], agentId: 'ops', maxPendingWakes: 5 });
  assert.ok(built.ok);
  assert.deepEqual(built.config.hooks.forward, {
    url: 'http://127.0.0.1:18789/hooks',
    token: 'up',
    maxAgeSeconds: 86_400,
    agents: ['main', 'ops'],
    agentId: 'ops',
    maxPendingWakes: 5,
  });
});
