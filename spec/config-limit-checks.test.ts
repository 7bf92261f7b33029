import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildConfig } from '../lib/config/load.ts';
import type { ConfigResult } from '../lib/config/types.ts';

const TOKEN = 'limit-checks-token-0123456789abcdef';

function build(hooks: Record<string, unknown>): Promise<ConfigResult> {
  return buildConfig({ hooks: { enabled: true, token: TOKEN, ...hooks } }, {
    file: null,
    env: {},
    dir: '/etc/hooks-ingress',
  });
}

async function problems(hooks: Record<string, unknown>): Promise<string[]> {
  const result = await build(hooks);
  assert.ok(!result.ok, 'expected the config to be refused');
  return result.problems;
}

const FORWARD = { url: 'http://127.0.0.1:18789/hooks', token: 'up' };

test('rateLimit and budget load with their defaults: over "reject" and "wait", the day in UTC', async () => {
  const result = await build({
    agent: { rateLimit: { max: 5, windowSeconds: 60 }, budget: { runsPerDay: 3 } },
    wake: { rateLimit: { max: 100, windowSeconds: 60, over: 'ignore' } },
    mappings: [{
      id: 'ci',
      match: { path: 'ci' },
      messageTemplate: 'ci',
      rateLimit: { max: 1, windowSeconds: 10, over: 'queue' },
      budget: { runsPerDay: 40, over: 'reject', timeZone: 'Europe/Berlin' },
    }],
  });
  assert.ok(result.ok, result.ok ? '' : result.problems.join('\n'));
  const { hooks } = result.config;
  assert.deepEqual(hooks.agent, {
    rateLimit: { max: 5, windowSeconds: 60, over: 'reject' },
    budget: { runsPerDay: 3, over: 'wait', timeZone: 'UTC' },
  });
  assert.deepEqual(hooks.wake, { rateLimit: { max: 100, windowSeconds: 60, over: 'ignore' } });
  assert.deepEqual([hooks.mappings[0]!.rateLimit, hooks.mappings[0]!.budget], [
    { max: 1, windowSeconds: 10, over: 'queue' },
    { runsPerDay: 40, over: 'reject', timeZone: 'Europe/Berlin' },
  ]);
});

test('a time zone the runtime does not know, a bound out of range and queue on /wake are refused by key', async () => {
  assert.deepEqual(
    await problems({
      agent: { rateLimit: { max: 0, windowSeconds: 86_401 }, budget: { runsPerDay: 3, timeZone: 'Europe/Atlantis' } },
      wake: { rateLimit: { max: 5, windowSeconds: 60, over: 'queue' } },
      mappings: [{ match: { path: 'x' }, budget: { over: 'later' } }],
    }).then((p) => p.sort()),
    [
      'hooks.agent.rateLimit.max: must be at least 1',
      'hooks.agent.rateLimit.windowSeconds: must be at most 86400',
      'hooks.agent.budget.timeZone: must be an IANA time zone name such as "Europe/Berlin", or "UTC"',
      'hooks.wake.rateLimit.over: must be one of "reject", "ignore"',
      'hooks.mappings[0].budget.runsPerDay: is required',
      'hooks.mappings[0].budget.over: must be one of "wait", "reject"',
    ].sort(),
  );
});

test('forward mode refuses what it cannot hold: rateLimit queue and budget wait; reject and ignore load', async () => {
  assert.deepEqual(
    await problems({
      forward: FORWARD,
      agent: { rateLimit: { max: 5, windowSeconds: 60, over: 'queue' }, budget: { runsPerDay: 3 } },
      mappings: [{ match: { path: 'ci' }, messageTemplate: 'ci', budget: { runsPerDay: 3, over: 'wait' } }],
    }),
    [
      'hooks.agent.rateLimit.over: may not be "queue" in forward mode (hooks.forward): runs happen upstream, so none can be held here',
      'hooks.agent.budget.over: may not be "wait" in forward mode (hooks.forward): runs happen upstream, so none can be held here',
      'hooks.mappings[0].budget.over: may not be "wait" in forward mode (hooks.forward): runs happen upstream, so none can be held here',
    ],
  );
  const ok = await build({
    forward: FORWARD,
    agent: { rateLimit: { max: 5, windowSeconds: 60 }, budget: { runsPerDay: 3, over: 'reject' } },
  });
  assert.ok(ok.ok, ok.ok ? '' : ok.problems.join('\n'));
});

test('a wake or notify mapping without a transform takes no queue and no budget: it never makes a run', async () => {
  assert.deepEqual(
    await problems({
      mappings: [{
        match: { path: 'w' },
        action: 'wake',
        textTemplate: 'w',
        rateLimit: { max: 1, windowSeconds: 60, over: 'queue' },
        budget: { runsPerDay: 3 },
      }],
    }),
    [
      'hooks.mappings[0].rateLimit.over: may not be "queue" on a wake mapping: only runs can wait (use "reject" or "ignore")',
      'hooks.mappings[0].budget: counts runs, and a wake mapping makes none',
    ],
  );
  const ignore = await build({
    mappings: [{
      match: { path: 'w' },
      action: 'wake',
      textTemplate: 'w',
      rateLimit: { max: 1, windowSeconds: 60, over: 'ignore' },
    }],
  });
  assert.ok(ignore.ok, ignore.ok ? '' : ignore.problems.join('\n'));
});
