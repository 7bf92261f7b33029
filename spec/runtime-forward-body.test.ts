import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentAction, RunSpec } from '../lib/model/actions.ts';
import { forwardDestination, upstreamAgent, upstreamWake } from '../lib/runtime/forward-body.ts';
import { refusedField } from '../lib/runtime/forward.ts';
import { testTable } from './_cases.ts';

// What forward mode sends upstream, and what it refuses because OpenClaw 2026.9 would.

const ACTION: AgentAction = {
  kind: 'agent',
  message: 'm',
  name: 'Hook',
  wakeMode: 'now',
  deliver: true,
  channel: 'last',
};
const RUN: RunSpec = {
  runId: 'r',
  hook: 'agent',
  message: 'wrapped m',
  name: 'Hook',
  wakeMode: 'now',
  deliver: true,
  channel: 'last',
  sessionKey: 'hook:x',
  agentId: 'main',
};

testTable<[Pick<RunSpec, 'deliver' | 'channel' | 'to'>, RegExp | null]>(
  {
    'forwardDestination() admits no destination (the default, or deliver false) and a concrete channel with to': [
      [{ deliver: true, channel: 'last' }, null],
      [{ deliver: false, channel: 'slack' }, null],
      [{ deliver: false, channel: 'last', to: '1' }, null],
      [{ deliver: true, channel: 'telegram', to: '42' }, null],
    ],
    'forwardDestination() refuses last with to, and a channel without to, naming the rule': [
      [
        { deliver: true, channel: 'last', to: '42' },
        /^to: needs a concrete channel in forward mode: the upstream gateway delivers only to a channel and a recipient named together/,
      ],
      [{ deliver: true, channel: 'slack' }, /^to: is required with channel slack in forward mode/],
    ],
  },
  ([run, rule]) => {
    const said = forwardDestination(run);
    if (rule === null) assert.equal(said, null, JSON.stringify(run));
    else assert.match(said ?? '', rule, JSON.stringify(run));
  },
);

test('upstreamAgent() sends a destination only with a concrete channel and to; deliver false as false; nothing else', () => {
  assert.deepEqual(upstreamAgent(ACTION, RUN), { message: 'wrapped m', name: 'Hook', wakeMode: 'now' });
  assert.deepEqual(upstreamAgent(ACTION, { ...RUN, deliver: false }), {
    message: 'wrapped m',
    name: 'Hook',
    wakeMode: 'now',
    deliver: false,
  });
  assert.deepEqual(upstreamAgent(ACTION, { ...RUN, channel: 'msteams', to: 'conv' }), {
    message: 'wrapped m',
    name: 'Hook',
    wakeMode: 'now',
    deliver: true,
    channel: 'msteams',
    to: 'conv',
  });
});

test('upstreamAgent() sends the agent asked for as resolved, and none when it fell back to the default', () => {
  assert.equal(upstreamAgent({ ...ACTION, agentId: 'OPS' }, { ...RUN, agentId: 'ops' })['agentId'], 'ops');
  assert.equal(upstreamAgent({ ...ACTION, agentId: 'builder' }, { ...RUN, agentId: 'main' })['agentId'], undefined);
  assert.equal(upstreamAgent(ACTION, RUN)['agentId'], undefined);
});

test('upstreamWake() carries hooks.forward.agentId when it is set', () => {
  assert.deepEqual(upstreamWake({ text: 't', mode: 'now' }), { text: 't', mode: 'now' });
  assert.deepEqual(upstreamWake({ text: 't', mode: 'now' }, null), { text: 't', mode: 'now' });
  assert.deepEqual(upstreamWake({ text: 't', mode: 'next-heartbeat' }, 'ops'), {
    text: 't',
    mode: 'next-heartbeat',
    agentId: 'ops',
  });
});

testTable<[string, string | undefined]>(
  {
    'refusedField() names the payload field an OpenClaw refusal begins with, or follows "unknown" with': [
      ['channel and to must be set together for hook delivery', 'channel'],
      ['unknown agentId "nobody"', 'agentId'],
      ['agentId is required when multiple agents are configured', 'agentId'],
      ['sessionKey must start with one of: hook:', 'sessionKey'],
      ['text required', 'text'],
      ['accountId requires channel and to for hook delivery', 'accountId'],
    ],
    'refusedField() names nothing when the refusal does not begin with a field': [
      ['Unauthorized', undefined],
      ['invalid value for channel', undefined],
      ['', undefined],
    ],
  },
  ([said, field]) => assert.equal(refusedField(said), field, JSON.stringify(said)),
);
