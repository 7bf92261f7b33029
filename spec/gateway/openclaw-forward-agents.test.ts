// Forward mode in front of the released OpenClaw gateway with two agents upstream, neither of
// them "main", and no system agent: a gateway of its own, which test:gateway starts beside
// openclaw-forward.test.ts's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { post } from '../_http.ts';
import { allSent, markers, reachedModel, sendWakes, startForwardIngress } from '../_forward-ingress.ts';
import { gatewayCase } from '../_openclaw-gateway.ts';
import { gatewaySkip } from '../_openclaw-install.ts';

const skip = gatewaySkip();

test(
  'forward mode: with two agents upstream (neither main) and no system agent, hooks.forward.agentId takes wakes to its agent',
  { skip },
  async (t) => {
    const { model, gateway } = await gatewayCase(t, {
      agents: { defaults: { model: { primary: 'standin/echo' } }, entries: { home: {}, ops: {} } },
    });
    await gateway.start();
    // What the setting is for: such a gateway refuses a wake that names no agent.
    const bare = await post(gateway.origin, '/hooks/wake', {
      headers: { authorization: `Bearer ${gateway.hookToken}` },
      body: { text: 'no agent named', mode: 'next-heartbeat' },
    });
    assert.equal(bare.status, 400, bare.text);
    assert.match(bare.text, /agentId is required/);

    const ingress = await startForwardIngress(t, gateway, { hooks: { forward: { agentId: 'ops' } } });
    const texts = markers('ops wake', 3);
    for (const reply of await sendWakes(ingress, texts, 1)) assert.equal(reply.status, 200, reply.text);
    await reachedModel(model, texts, ingress, gateway);
    const prompts = model.prompts.filter((prompt) => texts.some((text) => prompt.includes(text)));
    assert.equal(
      prompts.every((prompt) => prompt.includes('agent=ops')),
      true,
      "every turn that saw them was the ops agent's",
    );
    await allSent(ingress);
  },
);
