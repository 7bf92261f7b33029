import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildConfig } from '../lib/config/load.ts';

test('buildConfig() in forward mode warns of every key the upstream makes unused, and of no model problem', async () => {
  const raw = {
    hooks: {
      enabled: true,
      token: 'forward-unused-token-0123456789',
      forward: { url: 'http://127.0.0.1:18789/hooks/', token: '${T}' },
      allowCompletionReply: true,
      agent: { concurrency: 2, maxQueued: 10 },
      mappings: [{ match: { path: 'x' }, messageTemplate: 'x', waitForCompletion: true, concurrency: 1, maxQueued: 5 }],
    },
    agents: {
      defaults: { model: 'nowhere/m', heartbeat: { every: '30m' } },
      list: [{ id: 'ops', workspace: 'ws', systemPrompt: 'p' }],
    },
    models: { providers: { local: { api: 'openai-completions', baseUrl: 'http://127.0.0.1:1/v1' } } },
    channels: { telegram: { botToken: '123:abc' } },
  };
  const built = await buildConfig(raw, { file: null, env: { T: 'upstream' }, dir: '/etc/hooks-ingress' });
  assert.ok(built.ok, built.ok ? '' : built.problems.join('; '));
  assert.deepEqual(built.config.hooks.forward, {
    url: 'http://127.0.0.1:18789/hooks',
    token: 'upstream',
    maxAgeSeconds: 86_400,
    agents: null,
    agentId: null,
    maxPendingWakes: 20,
  });
  const unused = [
    'models.providers.local',
    'channels.telegram',
    'agents.defaults.model',
    'agents.defaults.heartbeat.every',
    'agents.list[0].workspace',
    'agents.list[0].systemPrompt',
    'hooks.allowCompletionReply',
    'hooks.agent.concurrency',
    'hooks.agent.maxQueued',
    'hooks.mappings[0].waitForCompletion',
    'hooks.mappings[0].concurrency',
    'hooks.mappings[0].maxQueued',
  ];
  assert.deepEqual(built.warnings.map((w) => w.split(':')[0]), [...unused, 'hooks.forward.agentId', 'agents.list']);
  assert.ok(
    built.warnings.slice(0, unused.length).every((w) =>
      w.endsWith('is not used in forward mode (hooks.forward): the upstream gateway runs the agents and delivers')
    ),
  );
});

test('buildConfig() refuses a forward section without an http(s) url or a token', async () => {
  const built = await buildConfig({
    hooks: { enabled: true, token: 'forward-unused-token-0123456789', forward: { url: 'ftp://x' } },
  }, { file: null, env: {}, dir: '/' });
  assert.ok(!built.ok);
  assert.deepEqual(built.problems, [
    'hooks.forward.url: must be an http:// or https:// URL',
    'hooks.forward.token: is required',
  ]);
});
