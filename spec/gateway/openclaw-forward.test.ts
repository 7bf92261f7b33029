// Forward mode in front of the released OpenClaw gateway: what hooks-ingress acknowledges, the
// gateway accepts, and it reaches a model turn (a local stand-in model that keeps every prompt).
// A gateway takes a minute or more to start on a busy machine, so the cases share one with the
// default agent only (each with a hooks-ingress of its own and texts no other case sends; each
// waits until its texts were read, so none leaves events pending there). The case that needs two
// agents upstream is openclaw-forward-agents.test.ts, which test:gateway runs beside this file.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertError, post } from '../_http.ts';
import { stopChild } from '../_cli.ts';
import {
  allSent,
  FORWARD_AUTH as AUTH,
  markers,
  reachedModel,
  restartForwardIngress,
  sendWakes,
  startForwardIngress,
} from '../_forward-ingress.ts';
import { gatewayCase } from '../_openclaw-gateway.ts';
import { gatewaySkip } from '../_openclaw-install.ts';
import { until } from '../_until.ts';

const skip = gatewaySkip();

test('forward mode in front of a gateway with the default agent only', { skip }, async (t) => {
  const { model, gateway } = await gatewayCase(t);
  await gateway.start();
  const direct = { authorization: `Bearer ${gateway.hookToken}` };

  await t.test('the default /agent is accepted here and upstream, and reaches a model turn', async (t) => {
    const ingress = await startForwardIngress(t, gateway);
    const [text] = markers('default agent run', 1);
    const reply = await post(ingress.url, '/hooks/agent', { headers: AUTH, body: { message: text } });
    assert.equal(reply.status, 202, reply.text);
    await reachedModel(model, [text!], ingress, gateway);
    const [entry] = await until('the outbox entry to be sent', async () => {
      const entries = await ingress.outbox();
      return entries.length === 1 && entries[0]!['state'] !== 'pending' && entries;
    });
    assert.equal(entry!['state'], 'sent', JSON.stringify(entry));
  });

  await t.test('an agentId the upstream does not know is refused here when its agents are listed, and named as the refused field when not', async (t) => {
    const refusedThere = await post(gateway.origin, '/hooks/agent', {
      headers: direct,
      body: { message: 'x', agentId: 'ghost' },
    });
    assert.equal(refusedThere.status, 400, refusedThere.text);
    assert.match(refusedThere.text, /unknown agentId/);

    const listed = await startForwardIngress(t, gateway, { hooks: { forward: { agents: ['main'] } } });
    const refused = await post(listed.url, '/hooks/agent', {
      headers: AUTH,
      body: { message: 'for a ghost', agentId: 'ghost' },
    });
    assertError(refused, 400, /agentId/);
    const [known] = markers('known agent run', 1);
    const accepted = await post(listed.url, '/hooks/agent', {
      headers: AUTH,
      body: { message: known, agentId: 'main' },
    });
    assert.equal(accepted.status, 202, accepted.text);
    await reachedModel(model, [known!], listed, gateway);
    await allSent(listed);

    // Without the list the id is the upstream's to judge: acknowledged, refused there, and the entry says which field.
    const unlisted = await startForwardIngress(t, gateway);
    const acknowledged = await post(unlisted.url, '/hooks/agent', {
      headers: AUTH,
      body: { message: 'for a ghost', agentId: 'ghost' },
    });
    assert.equal(acknowledged.status, 202, acknowledged.text);
    const [dead] = await until('the entry to go dead', async () => {
      const entries = await unlisted.outbox();
      return entries.length === 1 && entries[0]!['state'] === 'dead' && entries;
    });
    assert.equal(dead!['refusedField'], 'agentId', JSON.stringify(dead));
  });

  await t.test('200 wakes at line rate all reach a model turn', async (t) => {
    const ingress = await startForwardIngress(t, gateway);
    const texts = markers('line-rate wake', 200);
    const replies = await sendWakes(ingress, texts, 8);
    assert.deepEqual(replies.map((reply) => reply.status), texts.map(() => 200));
    await reachedModel(model, texts, ingress, gateway);
    await until('every entry sent', async () => (await ingress.outbox()).every((entry) => entry['state'] === 'sent'));
    await allSent(ingress);
  });

  // docs/openclaw.md's table, "Durability": the gateway answers before anything is stored; here
  // the answer goes out once the effect is in the journal.
  await t.test('durability: a wake pending at the gateway is lost when it restarts; 50 wakes acknowledged here while it is down reach a model turn once it is up, though hooks-ingress was killed after answering', async (t) => {
    // At most 10 a window, so a wake the gateway kept across its restart would still be among its 20 pending.
    const ingress = await startForwardIngress(t, gateway, { hooks: { forward: { maxPendingWakes: 10 } } });
    const [pending] = markers('pending at the gateway restart', 1);
    const queued = await post(gateway.origin, '/hooks/wake', {
      headers: direct,
      body: { text: pending, mode: 'next-heartbeat' },
    });
    assert.deepEqual([queued.status, queued.body['eventOutcome']], [200, 'queued'], queued.text);
    await gateway.stop();
    const texts = markers('outage wake', 50);
    const replies = await sendWakes(ingress, texts, 1);
    assert.deepEqual(replies.map((reply) => reply.status), texts.map(() => 200));
    await stopChild(ingress, 'SIGKILL');
    await gateway.start();
    const again = await restartForwardIngress(t, ingress);
    await reachedModel(model, texts, again, gateway);
    await until('every entry sent', async () => (await again.outbox()).every((entry) => entry['state'] === 'sent'));
    await allSent(again);
    assert.deepEqual(
      model.reached([pending!]),
      [],
      'the heartbeats that read the 50 found nothing left from before the restart',
    );
  });
  t.diagnostic(`gateway RSS ${gateway.rssMiB()} MiB`);
});
