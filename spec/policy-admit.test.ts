import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AgentAction } from '../lib/model/actions.ts';
import { buildConfig } from '../lib/config/load.ts';
import type { AgentConfig, Config } from '../lib/config/types.ts';
import { admitRun, admitWake, resolveAgentId } from '../lib/policy/admit.ts';
import { error, value } from './_decision.ts';

type Hooks = Config['hooks'];

interface Setup {
  hooks?: Partial<Hooks>;
  list?: AgentConfig[];
  defaultAgentId?: string;
  models?: Config['agents']['models'];
}

// Every default, as loadConfig() builds it; a test changes only the parts it is about (and may
// build combinations the loader would refuse: policy must not rely on the loader having run).
const built = await buildConfig({ hooks: { enabled: true, token: 'hook-token' } }, {
  file: null,
  env: {},
  dir: '/etc/hooks-ingress',
});
assert.ok(built.ok);
const BASE: Config = built.config;

function configWith(setup: Setup = {}): Config {
  const list = setup.list ?? [];
  return {
    ...BASE,
    hooks: { ...BASE.hooks, ...setup.hooks },
    agents: {
      ...BASE.agents,
      models: setup.models ?? {},
      list,
      defaultAgentId: setup.defaultAgentId ?? (list.find((a) => a.default) ?? list[0])?.id ?? 'main',
    },
  };
}

function ids(...values: string[]): () => string {
  const queue = [...values];
  return () => {
    const next = queue.shift();
    assert.ok(next !== undefined, 'newId() called more often than expected');
    return next;
  };
}

const agents = [
  { id: 'main', default: false },
  { id: 'ops', default: true },
  { id: 'Research', default: false },
];

function action(overrides: Partial<AgentAction> = {}): AgentAction {
  return {
    kind: 'agent',
    message: 'summarise the inbox',
    name: 'Hook',
    wakeMode: 'now',
    deliver: true,
    channel: 'last',
    ...overrides,
  };
}

// --- agents --------------------------------------------------------------------------------

test('resolveAgentId() admits any agent when hooks.allowedAgentIds is omitted', () => {
  const config = configWith({ list: agents });
  assert.equal(value(resolveAgentId('main', config)), 'main');
  assert.equal(value(resolveAgentId(undefined, config)), 'ops');
});

test('resolveAgentId() admits any agent when hooks.allowedAgentIds contains "*"', () => {
  const config = configWith({ list: agents, hooks: { allowedAgentIds: ['ops', '*'] } });
  assert.equal(value(resolveAgentId('main', config)), 'main');
  assert.equal(value(resolveAgentId('research', config)), 'Research');
  assert.equal(value(resolveAgentId(undefined, config)), 'ops');
});

test('resolveAgentId() with an empty hooks.allowedAgentIds refuses any explicit agentId', () => {
  const config = configWith({ list: agents, hooks: { allowedAgentIds: [] } });
  for (const requested of ['ops', 'main', 'unknown']) {
    assert.equal(
      error(resolveAgentId(requested, config)),
      'agentId: may not be chosen (hooks.allowedAgentIds is empty)',
    );
  }
});

test('resolveAgentId() with an empty hooks.allowedAgentIds admits the implicit default agent', () => {
  assert.equal(value(resolveAgentId(undefined, configWith({ list: agents, hooks: { allowedAgentIds: [] } }))), 'ops');
  assert.equal(value(resolveAgentId(undefined, configWith({ hooks: { allowedAgentIds: [] } }))), 'main');
});

test('resolveAgentId() with a list requires the effective agent to be listed', () => {
  const config = configWith({ list: agents, hooks: { allowedAgentIds: ['main', 'ops'] } });
  assert.equal(value(resolveAgentId('main', config)), 'main');
  assert.equal(value(resolveAgentId(undefined, config)), 'ops');
  assert.equal(error(resolveAgentId('Research', config)), 'agentId: agent "Research" is not in hooks.allowedAgentIds');
});

test('resolveAgentId() matches agent ids case-insensitively and answers the configured spelling', () => {
  const config = configWith({ list: agents, hooks: { allowedAgentIds: ['research'] } });
  assert.equal(value(resolveAgentId('RESEARCH', config)), 'Research');
});

test('resolveAgentId() falls back to the default agent for an unknown agentId', () => {
  assert.equal(value(resolveAgentId('nobody', configWith({ list: agents }))), 'ops');
  assert.equal(value(resolveAgentId('nobody', configWith())), 'main');
});

test('resolveAgentId() with unknown "keep" (forward mode, no list of the upstream\'s agents) keeps an unlisted id as sent and judges it by the allowlist', () => {
  const config = configWith({ hooks: { allowedAgentIds: ['ops'] } });
  assert.equal(value(resolveAgentId('ops', config, 'keep')), 'ops');
  assert.equal(
    error(resolveAgentId('research', config, 'keep')),
    'agentId: agent "research" is not in hooks.allowedAgentIds',
  );
  assert.equal(
    value(resolveAgentId('Research', configWith({ list: agents }), 'keep')),
    'Research',
    'a listed one in its listed spelling',
  );
  assert.equal(value(resolveAgentId(undefined, configWith(), 'keep')), 'main');
});

test('resolveAgentId() with unknown "refuse" refuses an id not in the list, naming hooks.forward.agents', () => {
  const config = configWith({ list: agents });
  assert.equal(
    error(resolveAgentId('nobody', config, 'refuse')),
    'agentId: unknown agent "nobody" (the upstream gateway\'s agents are listed in hooks.forward.agents)',
  );
  assert.equal(value(resolveAgentId('RESEARCH', config, 'refuse')), 'Research');
  assert.equal(value(resolveAgentId(undefined, config, 'refuse')), 'ops');
});

test('resolveAgentId() applies the allowlist to the fallback agent', () => {
  const admitted = configWith({ list: agents, hooks: { allowedAgentIds: ['ops'] } });
  assert.equal(value(resolveAgentId('nobody', admitted)), 'ops');
  const refusedDefault = configWith({ list: agents, hooks: { allowedAgentIds: ['main'] } });
  assert.equal(error(resolveAgentId('nobody', refusedDefault)), 'agentId: agent "ops" is not in hooks.allowedAgentIds');
  assert.equal(
    error(resolveAgentId(undefined, refusedDefault)),
    'agentId: agent "ops" is not in hooks.allowedAgentIds',
  );
});

// --- admitRun ------------------------------------------------------------------------------

const models = { 'anthropic/claude-sonnet': { alias: 'sonnet' }, 'openai/gpt-5': {} };

test('admitRun() builds a run with every option, resolving session key, agent and model', () => {
  const config = configWith({ list: agents, models, hooks: { allowRequestSessionKey: true } });
  const run = value(
    admitRun(
      action({
        agentId: 'research',
        sessionKey: { value: 'hook:mail', trusted: false },
        wakeMode: 'next-heartbeat',
        deliver: false,
        channel: 'telegram',
        to: '@me',
        model: 'sonnet',
        thinking: 'high',
        timeoutSeconds: 30,
      }),
      'agent',
      config,
      ids('run-1'),
    ),
  );
  assert.deepEqual(run, {
    runId: 'run-1',
    hook: 'agent',
    name: 'Hook',
    message: 'summarise the inbox',
    sessionKey: 'hook:mail',
    requestKey: true,
    agentId: 'Research',
    wakeMode: 'next-heartbeat',
    deliver: false,
    channel: 'telegram',
    to: '@me',
    model: 'anthropic/claude-sonnet',
    thinking: 'high',
    timeoutSeconds: 30,
  });
});

test('admitRun() leaves unset options out and generates the session key before the run id', () => {
  const run = value(admitRun(action({ name: 'CI' }), 'github', configWith(), ids('session-id', 'run-id')));
  assert.deepEqual(run, {
    runId: 'run-id',
    hook: 'github',
    name: 'CI',
    message: 'summarise the inbox',
    sessionKey: 'hook:session-id',
    agentId: 'main',
    wakeMode: 'now',
    deliver: true,
    channel: 'last',
  });
  assert.ok(!('model' in run) && !('to' in run) && !('thinking' in run) && !('timeoutSeconds' in run));
});

test('admitRun() carries whether the operator wrote `to`, and only with a `to`', () => {
  const config = configWith();
  assert.equal(
    value(admitRun(action({ to: '42', toConfigured: true }), 'ci', config, ids('s', 'r'))).toConfigured,
    true,
  );
  assert.ok(!('toConfigured' in value(admitRun(action({ to: '42' }), 'ci', config, ids('s', 'r')))));
  assert.ok(!('toConfigured' in value(admitRun(action({ toConfigured: true }), 'ci', config, ids('s', 'r')))));
});

test('admitRun() refuses on the session key first, then the agent, then the model', () => {
  const config = configWith({ list: agents, models, hooks: { allowedAgentIds: [] } });
  const all = action({ sessionKey: { value: 'hook:x', trusted: false }, agentId: 'ops', model: 'nope' });
  assert.match(error(admitRun(all, 'agent', config, ids())), /^sessionKey: .*hooks\.allowRequestSessionKey/);
  assert.equal(
    error(admitRun(action({ agentId: 'ops', model: 'nope' }), 'agent', config, ids('s'))),
    'agentId: may not be chosen (hooks.allowedAgentIds is empty)',
  );
  assert.equal(error(admitRun(action({ model: 'nope' }), 'agent', config, ids('s'))), 'model not allowed: nope');
});

test('admitRun() checks the prefix rules on the key as sent, as OpenClaw does, then drops its agent:<id>:', () => {
  const config = configWith({
    list: [{ id: 'hooks', default: true }, { id: 'ops', default: false }],
    hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:', 'agent:'] },
  });
  const run = value(
    admitRun(
      action({ sessionKey: { value: 'agent:hooks:slack:channel:c123', trusted: false } }),
      'agent',
      config,
      ids('r'),
    ),
  );
  assert.equal(run.sessionKey, 'slack:channel:c123');
  assert.equal(run.agentId, 'hooks');
  // The key names no agent: the run's agent is the one it resolves to, as OpenClaw re-scopes it.
  const other = value(
    admitRun(
      action({ sessionKey: { value: 'agent:ops:slack:channel:c123', trusted: false }, agentId: 'hooks' }),
      'agent',
      config,
      ids('r'),
    ),
  );
  assert.deepEqual([other.agentId, other.sessionKey], ['hooks', 'slack:channel:c123']);
});

test('admitRun() judges a key again re-scoped to the agent it resolved to: ["hook:", "agent:main:"] refuses agent:main:… for agent hooks', () => {
  const list = [{ id: 'main', default: true }, { id: 'hooks', default: false }];
  const config = configWith({
    list,
    hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:', 'agent:main:'] },
  });
  for (const key of ['agent:main:slack:channel:c123', 'agent:main:main']) {
    const sent = action({ sessionKey: { value: key, trusted: false }, agentId: 'hooks' });
    assert.match(
      error(admitRun(sent, 'agent', config, ids('r'))),
      /^sessionKey: must start with one of "hook:", "agent:main:" \(checked again as "agent:hooks:/,
      key,
    );
    const forMain = value(admitRun({ ...sent, agentId: 'main' }, 'agent', config, ids('r')));
    assert.equal(forMain.sessionKey, key.slice('agent:main:'.length));
  }
  // hooks.defaultSessionKey is re-scoped and judged again too.
  const withDefault = configWith({
    list,
    hooks: { defaultSessionKey: 'agent:main:inbox', allowedSessionKeyPrefixes: ['hook:', 'agent:main:'] },
  });
  assert.match(
    error(admitRun(action({ agentId: 'hooks' }), 'agent', withDefault, ids('r'))),
    /checked again as "agent:hooks:inbox"/,
  );
  assert.equal(value(admitRun(action(), 'agent', withDefault, ids('r'))).sessionKey, 'inbox');
});

test('admitRun() records sessionMode and accountId on the run', () => {
  const config = configWith({ hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:'] } });
  const run = value(
    admitRun(
      action({
        sessionKey: { value: 'hook:a', trusted: false },
        sessionMode: 'persistent',
        channel: 'telegram',
        to: '42',
        accountId: 'work',
      }),
      'agent',
      config,
      ids('r'),
    ),
  );
  assert.deepEqual([run.sessionMode, run.accountId], ['persistent', 'work']);
  assert.equal(
    value(admitRun(action({ sessionMode: 'isolated' }), 'agent', configWith(), ids('s', 'r'))).sessionMode,
    'isolated',
  );
});

test('admitRun() holds sessionMode "persistent" to the gateway\'s preconditions: a session to continue, and prefixes for a key the request chose', () => {
  const persistent = (sessionKey?: AgentAction['sessionKey']) =>
    action({ sessionMode: 'persistent', ...(sessionKey === undefined ? {} : { sessionKey }) });
  assert.equal(
    error(admitRun(persistent(), 'ci', configWith(), ids('s'))),
    'sessionMode: "persistent" requires a sessionKey or hooks.defaultSessionKey',
  );
  assert.equal(
    value(admitRun(persistent(), 'ci', configWith({ hooks: { defaultSessionKey: 'hook:inbox' } }), ids('r')))
      .sessionKey,
    'hook:inbox',
  );
  const open = configWith({ hooks: { allowRequestSessionKey: true } });
  assert.equal(
    error(admitRun(persistent({ value: 'hook:a', trusted: false }), 'agent', open, ids())),
    'sessionMode: "persistent" with a session key the request chose requires hooks.allowedSessionKeyPrefixes',
  );
  // A key the operator wrote needs no prefix rule.
  assert.equal(
    value(admitRun(persistent({ value: 'hook:a', trusted: true }), 'ci', configWith(), ids('r'))).sessionKey,
    'hook:a',
  );
});

test('admitRun() lets a trusted session key through with allowRequestSessionKey false', () => {
  const run = value(
    admitRun(action({ sessionKey: { value: 'hook:gmail', trusted: true } }), 'gmail', configWith(), ids('r')),
  );
  assert.equal(run.sessionKey, 'hook:gmail');
  assert.equal(run.runId, 'r');
});

// --- admitWake -----------------------------------------------------------------------------

test('admitWake() names only what differs from the main session: an unknown agent is refused for a request and the default for a mapping', () => {
  const config = configWith({ list: agents, hooks: { allowRequestSessionKey: true } });
  assert.deepEqual(value(admitWake({}, config, 'refuse')), {});
  assert.deepEqual(value(admitWake({ agentId: 'OPS' }, config, 'refuse')), {}, 'ops is the default agent');
  assert.deepEqual(
    value(admitWake({ agentId: 'research', sessionKey: { value: 'agent:x:ci', trusted: false } }, config, 'refuse')),
    { agentId: 'Research', sessionKey: 'ci' },
  );
  assert.deepEqual(
    value(admitWake({ agentId: 'main', sessionKey: { value: 'agent:main:MAIN', trusted: false } }, config, 'refuse')),
    { agentId: 'main' },
  );
  assert.equal(error(admitWake({ agentId: 'nobody' }, config, 'refuse')), 'agentId: unknown agent "nobody"');
  assert.deepEqual(value(admitWake({ agentId: 'nobody' }, config, 'default')), {});
  assert.deepEqual(value(admitWake({ agentId: 'Upstream-Only' }, config, 'keep')), { agentId: 'Upstream-Only' });
  assert.deepEqual(
    value(admitWake({ agentId: 'main' }, configWith(), 'refuse')),
    {},
    'the default agent is known with no agents.list',
  );
  assert.match(
    error(admitWake({ sessionKey: { value: 'hook:x', trusted: false } }, configWith(), 'refuse')),
    /hooks\.allowRequestSessionKey/,
  );
});
