// Forward mode in front of the released OpenClaw gateway: what hooks-ingress acknowledges, the
// gateway accepts, and it reaches a model turn (a local stand-in model that keeps every prompt).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import { assertError, post, type Reply } from '../_http.ts';
import { INGRESS_TOKEN, startForwardIngress, type ForwardIngress } from '../_forward-ingress.ts';
import { prepareGateway, type Gateway } from '../_openclaw-gateway.ts';
import { gatewaySkip } from '../_openclaw-install.ts';
import { startStandinModel, type StandinModel } from '../_standin-model.ts';
import { until } from '../_until.ts';

const skip = gatewaySkip();
const AUTH = { authorization: `Bearer ${INGRESS_TOKEN}` };
// A wake reaches the model at the gateway's next heartbeat, which it spaces 30 s apart and starts
// at most 5 a minute: minutes, on a loaded machine, for the batches below.
const TURN_MS = 300_000;

/** Texts no prompt holds by chance: `label 007 <run>`. */
function markers(label: string, count: number): string[] {
  const run = randomBytes(4).toString('hex');
  return Array.from({ length: count }, (_, i) => `${label} ${String(i + 1).padStart(3, '0')} ${run}`);
}

async function _setUp(t: TestContext, gatewayConfig: Record<string, unknown> = {}): Promise<{ model: StandinModel; gateway: Gateway }> {
  const model = await startStandinModel(t);
  const gateway = await prepareGateway(t, { modelUrl: model.baseUrl, config: gatewayConfig });
  return { model, gateway };
}

async function _reached(model: StandinModel, texts: readonly string[], ingress: ForwardIngress, gateway: Gateway): Promise<void> {
  await until(`${texts.length} texts at the stand-in model`, () => model.reached(texts).length === texts.length, {
    timeoutMs: TURN_MS,
    detail: () => `${model.reached(texts).length} of ${texts.length} reached it\nhooks-ingress:\n${ingress.stderr().slice(-3000)}\ngateway:\n${gateway.output()}`,
  });
}

async function _wakes(ingress: ForwardIngress, texts: readonly string[], inFlight: number): Promise<Reply[]> {
  const replies: Reply[] = [];
  let next = 0;
  // As fast as the connection allows: `inFlight` requests at a time, each answered before the next.
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < texts.length) {
        const text = texts[next++]!;
        replies.push(await post(ingress.url, '/hooks/wake', { headers: AUTH, body: { text, mode: 'now' } }));
      }
    }),
  );
  return replies;
}

async function _allSent(ingress: ForwardIngress): Promise<Record<string, unknown>[]> {
  const entries = await ingress.outbox();
  assert.deepEqual(
    entries.filter((entry) => entry['state'] !== 'sent').map((entry) => [entry['id'], entry['state'], entry['lastError']]),
    [],
  );
  return entries;
}

test('forward mode: the default /agent is accepted here and upstream, and reaches a model turn', { skip }, async (t) => {
  const { model, gateway } = await _setUp(t);
  await gateway.start();
  const ingress = await startForwardIngress(t, gateway);
  const [text] = markers('default agent run', 1);
  const reply = await post(ingress.url, '/hooks/agent', { headers: AUTH, body: { message: text } });
  assert.equal(reply.status, 202, reply.text);
  await _reached(model, [text!], ingress, gateway);
  const [entry] = await until('the outbox entry to be sent', async () => {
    const entries = await ingress.outbox();
    return entries.length === 1 && entries[0]!['state'] !== 'pending' && entries;
  });
  assert.equal(entry!['state'], 'sent', JSON.stringify(entry));
  t.diagnostic(`gateway RSS ${gateway.rssMiB()} MiB`);
});

test('forward mode: an agentId the upstream does not know is refused here when its agents are listed, and named as the refused field when not', { skip }, async (t) => {
  const { model, gateway } = await _setUp(t);
  await gateway.start();
  const direct = await post(gateway.origin, '/hooks/agent', { headers: { authorization: `Bearer ${gateway.hookToken}` }, body: { message: 'x', agentId: 'ghost' } });
  assert.equal(direct.status, 400, direct.text);
  assert.match(direct.text, /unknown agentId/);

  const listed = await startForwardIngress(t, gateway, { hooks: { forward: { agents: ['main'] } } });
  const refused = await post(listed.url, '/hooks/agent', { headers: AUTH, body: { message: 'for a ghost', agentId: 'ghost' } });
  assertError(refused, 400, /agentId/);
  const [known] = markers('known agent run', 1);
  const accepted = await post(listed.url, '/hooks/agent', { headers: AUTH, body: { message: known, agentId: 'main' } });
  assert.equal(accepted.status, 202, accepted.text);
  await _reached(model, [known!], listed, gateway);
  await _allSent(listed);

  // Without the list the id is the upstream's to judge: acknowledged, refused there, and the entry says which field.
  const unlisted = await startForwardIngress(t, gateway);
  const acknowledged = await post(unlisted.url, '/hooks/agent', { headers: AUTH, body: { message: 'for a ghost', agentId: 'ghost' } });
  assert.equal(acknowledged.status, 202, acknowledged.text);
  const [dead] = await until('the entry to go dead', async () => {
    const entries = await unlisted.outbox();
    return entries.length === 1 && entries[0]!['state'] === 'dead' && entries;
  });
  assert.equal(dead!['refusedField'], 'agentId', JSON.stringify(dead));
});

test('forward mode: with two agents upstream (neither main) and no system agent, hooks.forward.agentId takes wakes to its agent', { skip }, async (t) => {
  const { model, gateway } = await _setUp(t, { agents: { defaults: { model: { primary: 'standin/echo' } }, entries: { home: {}, ops: {} } } });
  await gateway.start();
  // What the setting is for: such a gateway refuses a wake that names no agent.
  const bare = await post(gateway.origin, '/hooks/wake', { headers: { authorization: `Bearer ${gateway.hookToken}` }, body: { text: 'no agent named', mode: 'next-heartbeat' } });
  assert.equal(bare.status, 400, bare.text);
  assert.match(bare.text, /agentId is required/);

  const ingress = await startForwardIngress(t, gateway, { hooks: { forward: { agentId: 'ops' } } });
  const texts = markers('ops wake', 3);
  for (const reply of await _wakes(ingress, texts, 1)) assert.equal(reply.status, 200, reply.text);
  await _reached(model, texts, ingress, gateway);
  const prompts = model.prompts.filter((prompt) => texts.some((text) => prompt.includes(text)));
  assert.equal(prompts.every((prompt) => prompt.includes('agent=ops')), true, 'every turn that saw them was the ops agent\'s');
  await _allSent(ingress);
});

test('forward mode: 50 wakes acknowledged while the gateway is down all reach a model turn once it is up', { skip }, async (t) => {
  const { model, gateway } = await _setUp(t);
  const ingress = await startForwardIngress(t, gateway);
  const texts = markers('outage wake', 50);
  const replies = await _wakes(ingress, texts, 1);
  assert.deepEqual(replies.map((reply) => reply.status), texts.map(() => 200));
  assert.equal(model.prompts.length, 0);
  await gateway.start();
  await _reached(model, texts, ingress, gateway);
  await until('every entry sent', async () => (await ingress.outbox()).every((entry) => entry['state'] === 'sent'));
  await _allSent(ingress);
  t.diagnostic(`gateway RSS ${gateway.rssMiB()} MiB`);
});

test('forward mode: 200 wakes at line rate all reach a model turn', { skip }, async (t) => {
  const { model, gateway } = await _setUp(t);
  await gateway.start();
  const ingress = await startForwardIngress(t, gateway);
  const texts = markers('line-rate wake', 200);
  const replies = await _wakes(ingress, texts, 8);
  assert.deepEqual(replies.map((reply) => reply.status), texts.map(() => 200));
  await _reached(model, texts, ingress, gateway);
  await until('every entry sent', async () => (await ingress.outbox()).every((entry) => entry['state'] === 'sent'));
  await _allSent(ingress);
  t.diagnostic(`gateway RSS ${gateway.rssMiB()} MiB`);
});
