import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { createPlanner, type HookRequest, type Judged, LIVE, plan } from '../lib/edge/plan.ts';
import type { CallTransform } from '../lib/hooks/mappings.ts';
import { specConfig } from './_app.ts';
import { tempDir } from './_dir.ts';

const SECRET = 'plan-github-secret-0123456789';

// A planner over mappings, with a transform runner that answers from `results` in order; it is
// handed nothing it could write to or log through: planning has no store, no logger, no limiter.
async function planner(t: TestContext, mappings: unknown[], results: Awaited<ReturnType<CallTransform>>[] = []) {
  const dir = await tempDir(t, 'plan-');
  // The module the mappings name; the spec's runner never loads it.
  await mkdir(join(dir, 'hooks', 'transforms'), { recursive: true });
  await writeFile(join(dir, 'hooks', 'transforms', 'x.js'), 'export default () => null;');
  const config = await specConfig({ hooks: { enabled: true, token: 'plan-token-0123456789', mappings } }, dir);
  let ids = 0;
  const transforms: CallTransform = async () => results.shift() ?? { ok: true, value: null };
  return createPlanner({ config, transforms, lastRoute: () => null, newId: () => `run-${++ids}`, clock: Date.now });
}

function request(
  name: string,
  body: unknown,
  headers: Record<string, string> = {},
  judged: Judged = { ...LIVE, keyed: false },
): HookRequest {
  const bytes = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  return {
    id: 'req-1',
    name,
    headers,
    query: new URLSearchParams(),
    rawQuery: '',
    bytes,
    client: { address: '127.0.0.1', key: '127.0.0.1' },
    trace: { hook: name, auth: 'token' },
    judged,
  };
}

test('plan() traces a mapped request: the mapping, the filter, each transform, the actions with the placeholders that found nothing', async (t) => {
  const p = await planner(t, [{
    id: 'ci',
    match: { path: 'ci' },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    textTemplate: 'build {{status}} {{branch}}',
    allowUnsafeExternalContent: true,
    transform: { module: 'x.js' },
  }], [{ ok: true, value: {} }]);
  const planned = await plan(p, request('ci', { status: 'green' }));
  assert.equal(planned.kind, 'accepted');
  const { trace } = planned;
  assert.deepEqual([trace.hook, trace.auth, trace.mapping, trace.filter], ['ci', 'token', 'ci', 'matched']);
  assert.deepEqual(trace.transforms, [{ ok: true, value: {} }]);
  assert.equal(trace.actions?.length, 1);
  assert.deepEqual(trace.actions?.[0]?.unresolved, ['branch']);
  assert.equal(trace.became, undefined, "nothing became of it yet: that is commit's");
  assert.equal(
    planned.kind === 'accepted' && planned.accepted.recorded?.[0]?.message,
    'template placeholders resolved to nothing',
  );
});

test('plan() traces a refusal with its code and cause: a transform that failed, the policy that refused a run', async (t) => {
  const p = await planner(t, [{
    id: 'tx',
    match: { path: 'tx' },
    action: 'wake',
    textTemplate: 'x',
    transform: { module: 'x.js' },
  }], [{ ok: false, reason: 'threw', detail: 'TypeError: boom' }]);
  const failed = await plan(p, request('tx', {}));
  assert.equal(failed.kind, 'refused');
  assert.deepEqual([failed.trace.mapping, failed.trace.transforms], ['tx', [{
    ok: false,
    error: 'threw: TypeError: boom',
  }]]);
  assert.equal(failed.kind === 'refused' && failed.refusal.code, 'ERR_MAPPING_FAILED');
  assert.equal(failed.kind === 'refused' && failed.refusal.cause, 'threw: TypeError: boom');
  assert.deepEqual(
    failed.trace.said?.map((s) => [s.level, s.message]),
    [['error', 'hook mapping failed']],
    "the line is the plan's to hand on, not written",
  );
  const unmatched = await plan(p, request('nothing', {}));
  assert.deepEqual([unmatched.kind, unmatched.trace.filter, unmatched.kind === 'refused' && unmatched.refusal.status], [
    'refused',
    'unmatched',
    404,
  ]);
  // A session key the request may not choose (hooks.allowRequestSessionKey is off).
  const policy = await plan(p, request('agent', { message: 'hi', sessionKey: 'hook:mine' }));
  assert.deepEqual([policy.kind, policy.kind === 'refused' && policy.refusal.code], ['refused', 'ERR_NOT_ALLOWED']);
  assert.match(policy.kind === 'refused' ? policy.refusal.message : '', /sessionKey/);
});

test('plan() ends at a filter that ignores the request, and says so in the trace', async (t) => {
  const p = await planner(t, [{
    id: 'push',
    match: { path: 'gh' },
    action: 'wake',
    textTemplate: 'x',
    filter: { payload: { action: 'opened' } },
  }]);
  const planned = await plan(p, request('gh', { action: 'closed' }));
  assert.deepEqual([planned.kind, planned.trace.filter, planned.trace.became], ['answered', 'ignored', {
    ignored: true,
  }]);
});

test("plan() leaves a refused signature's count to commit when the request is counted, and asks for none for a stored one", async (t) => {
  const p = await planner(t, [{
    id: 'gh',
    match: { path: 'github' },
    action: 'wake',
    textTemplate: 'push',
    signature: { scheme: 'github', secret: SECRET },
  }]);
  const bad = { 'x-hub-signature-256': `sha256=${createHmac('sha256', 'wrong').update('{}').digest('hex')}` };
  const live = await plan(p, request('github', {}, bad));
  assert.equal(live.kind, 'refused');
  assert.equal(live.kind === 'refused' && live.count, live.trace.signature?.reason);
  assert.deepEqual([live.trace.auth, live.trace.signature?.why], ['token', 'bad-signature']);
  const stored = await plan(p, request('github', {}, bad, { fresh: false, keyed: false, counted: false }));
  assert.deepEqual([stored.kind, stored.kind === 'refused' && stored.count], ['refused', undefined]);
  // A dry run reports the verdict and plans the rest as if it had verified.
  const whole = await plan(p, request('github', {}, bad, { fresh: false, keyed: false, counted: false, whole: true }));
  assert.deepEqual([whole.kind, whole.trace.signature?.ok], ['accepted', false]);
  const good = { 'x-hub-signature-256': `sha256=${createHmac('sha256', SECRET).update('{}').digest('hex')}` };
  const signed = await plan(p, request('github', {}, good, { ...LIVE, keyed: false }));
  assert.deepEqual([signed.kind, signed.trace.auth, signed.trace.signature?.ok], ['accepted', 'signature', true]);
});

test("read() stops at the idempotency gate with the request's key; a request not keyed has none", async (t) => {
  const p = await planner(t, []);
  const keyed = p.read(request('wake', { text: 'x' }, { 'idempotency-key': 'k1' }, LIVE));
  assert.deepEqual(keyed.kind === 'parsed' && keyed.key, { key: 'k1' });
  const unkeyed = p.read(request('wake', { text: 'x' }, { 'idempotency-key': 'k1' }));
  assert.equal(unkeyed.kind === 'parsed' && unkeyed.key, null);
  const broken = p.read(request('wake', '{not json'));
  assert.deepEqual([broken.kind, broken.kind === 'refused' && broken.refusal.code, broken.trace.body?.toString()], [
    'refused',
    'ERR_INVALID_JSON',
    '{not json',
  ]);
});

test("plan() puts the cause of its outcome on the trace: a transform's failure and where, hollow placeholders, the filter, the policy's rule", async (t) => {
  const p = await planner(
    t,
    [
      { id: 'tx', match: { path: 'tx' }, action: 'wake', textTemplate: 'x', transform: { module: 'x.js' } },
      {
        id: 'ci',
        match: { path: 'ci' },
        action: 'wake',
        textTemplate: 'build {{builds[0].status}} {{builds[0].branch}} {{builds[0].sha}}',
        forEach: 'builds',
      },
      {
        id: 'push',
        match: { path: 'gh' },
        action: 'wake',
        textTemplate: 'x',
        filter: { headers: { 'x-github-event': 'push' } },
      },
      { id: 'ops', match: { path: 'ops' }, action: 'agent', messageTemplate: 'x', agentId: 'ops' },
    ],
    [{ ok: false, reason: 'threw', detail: 'boom\n  more', at: 'ci.mjs:4' }],
  );
  const failed = await plan(p, request('tx', {}));
  assert.deepEqual(failed.trace.cause, { kind: 'transform', text: 'threw: boom', at: 'ci.mjs:4' });
  const hollow = await plan(p, request('ci', { builds: [{ status: 'green' }, { status: 'red', sha: 'abc' }] }));
  assert.deepEqual([hollow.kind, hollow.trace.cause], ['accepted', {
    kind: 'placeholders',
    text: 'builds[0].branch, builds[0].sha',
  }]);
  const whole = await plan(p, request('ci', { builds: [{ status: 'green', branch: 'main', sha: 'abc' }] }));
  assert.equal(whole.trace.cause, undefined);
  const ignored = await plan(p, request('gh', {}, { 'x-github-event': 'issues' }));
  assert.deepEqual(ignored.trace.cause, { kind: 'filter', text: 'header x-github-event is not "push"', at: 'push' });
  const refused = await plan(p, request('agent', { message: 'hi', sessionKey: 'hook:mine' }));
  assert.deepEqual(refused.trace.cause, {
    kind: 'policy',
    text: 'sessionKey: may not be chosen by the request while hooks.allowRequestSessionKey is false',
  });
  const invalid = await plan(p, request('agent', {}));
  assert.equal(invalid.trace.cause, undefined, 'a payload the schema refuses has its error, no cause');
});
