import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentAction, RunSpec } from '../lib/model/actions.ts';
import { coalesceAsked, MAX_COALESCE_KEY, toCoalesce, withCoalesce } from '../lib/hooks/coalesce.ts';
import { compileTemplate, type Template } from '../lib/hooks/template.ts';
import { applyMappings, mappingSchema, toMapping } from '../lib/hooks/mappings.ts';
import { check } from '../lib/schema.ts';

function template(source: string): Template {
  return (compileTemplate(source) as { ok: true; template: Template }).template;
}

const context = (payload: unknown) => ({ payload, headers: {}, query: {}, path: 'github', now: new Date(0) });

test('coalesceAsked(): the key rendered over the request, trimmed and cut; a missing field renders empty', () => {
  const coalesce = toCoalesce({ key: template(' {{repository.full_name}} '), messages: 'all' });
  assert.deepEqual(coalesceAsked(coalesce, context({ repository: { full_name: 'acme/widgets' } })), {
    key: 'acme/widgets',
    windowSeconds: 30,
    maxWaitSeconds: 300,
    messages: 'all',
  });
  assert.equal(coalesceAsked(coalesce, context({})).key, '');
  assert.equal(
    coalesceAsked(coalesce, context({ repository: { full_name: 'x'.repeat(600) } })).key.length,
    MAX_COALESCE_KEY,
  );
});

const run: RunSpec = {
  runId: 'r',
  hook: 'github',
  name: 'Pushes',
  message: 'm',
  sessionKey: 'hook:generated',
  agentId: 'main',
  wakeMode: 'now',
  deliver: true,
  channel: 'telegram',
  to: '42',
};
const asked = { key: 'acme/widgets', windowSeconds: 30, maxWaitSeconds: 300, messages: 'latest' as const };
const action = { kind: 'agent', coalesce: asked } as AgentAction;

test('withCoalesce(): the group names the hook, the key and where the reply goes; a generated session is left out', () => {
  const made = withCoalesce(run, action, 'pushes', 1_000).coalesce!;
  assert.deepEqual({ ...made, group: undefined }, { ...asked, group: undefined, maxBytes: 1_000 });
  const group = (over: Partial<RunSpec>, a: AgentAction = action, hook = 'pushes') =>
    withCoalesce({ ...run, ...over }, a, hook, 1_000).coalesce!.group;
  assert.equal(group({ sessionKey: 'hook:another-generated' }), made.group);
  for (
    const other of [
      group({ to: '43' }),
      group({ channel: 'slack' }),
      group({ agentId: 'ops' }),
      group({}, action, 'other'),
    ]
  ) {
    assert.notEqual(other, made.group);
  }
  const named = { ...action, sessionKey: { value: 'hook:ci', trusted: true } };
  assert.notEqual(group({ sessionKey: 'hook:ci' }, named), group({ sessionKey: 'hook:cd' }, named));
  assert.equal(withCoalesce(run, { kind: 'agent' } as AgentAction, 'pushes', 1_000), run);
});

test("applyMappings(): an agent mapping with coalesce puts the rendered key on each action; a transform's wake has none", async () => {
  const raw = check(mappingSchema, {
    match: { path: 'github' },
    messageTemplate: 'Push to {{repository.full_name}}',
    coalesce: { key: '{{repository.full_name}}', windowSeconds: 5 },
  });
  assert.ok(raw.ok);
  const mapping = toMapping(raw.value!, 0);
  const outcome = await applyMappings([mapping], {
    name: 'github',
    payload: { repository: { full_name: 'acme/widgets' } },
    headers: {},
    query: {},
    now: new Date(0),
  }, () => Promise.reject(new Error('no transform')));
  assert.equal(outcome.kind, 'actions');
  const [built] = outcome.kind === 'actions' ? outcome.actions : [];
  assert.deepEqual((built!.action as AgentAction).coalesce, { ...asked, windowSeconds: 5 });
});
