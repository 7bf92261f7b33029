import assert from 'node:assert/strict';
import { test } from 'node:test';
import { filterHolds, filterMiss, filterSchema } from '../lib/hooks/filter.ts';
import { applyMappings, type HookRequest, mappingSchema, toMapping } from '../lib/hooks/mappings.ts';
import { check } from '../lib/schema.ts';
import { githubExample } from './_signers.ts';

function filter(raw: unknown) {
  const checked = check(filterSchema, raw);
  assert.ok(checked.ok, checked.ok ? '' : JSON.stringify(checked.issues));
  return checked.value;
}

function mapping(raw: Record<string, unknown>, index = 0) {
  const checked = check(mappingSchema, raw);
  assert.ok(checked.ok, checked.ok ? '' : JSON.stringify(checked.issues));
  return toMapping(checked.value, index);
}

const noTransform = async () => ({ ok: false as const, reason: 'load-failed' as const, detail: 'none' });

function request(name: string, payload: Record<string, unknown>, headers: Record<string, string> = {}): HookRequest {
  return { name, payload, headers, query: {}, now: new Date(0) };
}

test('filterHolds() compares header names case-insensitively and values exactly', () => {
  const f = filter({ headers: { 'X-GitHub-Event': ['push', 'pull_request'] } });
  assert.equal(filterHolds(f, { headers: { 'x-github-event': 'push' }, payload: {} }), true);
  assert.equal(filterHolds(f, { headers: { 'x-github-event': 'Push' }, payload: {} }), false);
  assert.equal(filterHolds(f, { headers: {}, payload: {} }), false);
});

test('filterHolds() compares payload values as JSON, a list meaning any of them', () => {
  const f = filter({
    payload: { action: ['opened', 'reopened'], 'pull_request.draft': false, 'labels[0]': { name: 'bug', id: 1 } },
  });
  const payload = { action: 'opened', pull_request: { draft: false }, labels: [{ id: 1, name: 'bug' }] };
  assert.equal(filterHolds(f, { headers: {}, payload }), true);
  assert.equal(filterHolds(f, { headers: {}, payload: { ...payload, action: 'closed' } }), false);
  assert.equal(filterHolds(f, { headers: {}, payload: { ...payload, pull_request: { draft: 'false' } } }), false);
  assert.equal(
    filterHolds(f, { headers: {}, payload: { ...payload, labels: [{ id: 1, name: 'bug', extra: true }] } }),
    false,
  );
  assert.equal(filterHolds(f, { headers: {}, payload: { action: 'opened' } }), false);
  assert.equal(
    filterHolds(filter({ payload: { tags: [['a', 'b']] } }), { headers: {}, payload: { tags: ['a', 'b'] } }),
    true,
  );
  assert.equal(
    filterHolds(filter({ payload: { tags: [['a', 'b']] } }), { headers: {}, payload: { tags: ['b', 'a'] } }),
    false,
  );
});

test('filterSchema() reports each problem with its key path', () => {
  const checked = check(filterSchema, {
    headers: { 'bad header': 'x', 'x-a': [], 'x-b': 3 },
    payload: { 'a..b': 1, ok: [] },
    query: {},
  }, 'm.filter');
  assert.deepEqual(checked.ok ? [] : checked.issues.map((i) => `${i.path}: ${i.message}`), [
    'm.filter.query: unknown key (a filter has "headers" and "payload")',
    'm.filter.headers["bad header"]: must be keyed by an HTTP header name',
    'm.filter.headers["x-a"]: must be a string or a non-empty list of strings',
    'm.filter.headers["x-b"]: must be a string or a non-empty list of strings',
    'm.filter.payload["a..b"]: must be keyed by a payload path such as "action" or "data.object.status"',
    'm.filter.payload.ok: must be a value or a non-empty list of values',
  ]);
  const shapes = check(filterSchema, { headers: [], payload: 'x' }, 'f');
  assert.deepEqual(shapes.ok ? [] : shapes.issues.map((i) => i.path), ['f.headers', 'f.payload']);
  assert.equal(check(filterSchema, 'x').ok, false);
});

test('applyMappings() passes over a mapping whose filter does not hold, to the next that matches', async () => {
  const push = githubExample('push');
  const mappings = [
    mapping({
      id: 'prs',
      match: { path: 'github' },
      filter: { headers: { 'x-github-event': 'pull_request' } },
      action: 'wake',
      textTemplate: 'pr',
    }),
    mapping({
      id: 'pushes',
      match: { path: 'github' },
      filter: { headers: { 'x-github-event': 'push' } },
      action: 'wake',
      textTemplate: '{{repository.full_name}}: {{head_commit.message}}',
    }, 1),
  ];
  const outcome = await applyMappings(mappings, request('github', push, { 'x-github-event': 'push' }), noTransform);
  assert.equal(outcome.kind, 'actions');
  if (outcome.kind !== 'actions') return;
  assert.equal(outcome.mappingId, 'pushes');
  const repository = push['repository'] as { full_name: string };
  assert.match(
    outcome.actions[0]!.action.kind === 'wake' ? outcome.actions[0]!.action.text : '',
    new RegExp(repository.full_name),
  );
});

test('applyMappings() answers ignored when match selected mappings but every filter passed the request over', async () => {
  const mappings = [
    mapping({
      match: { path: 'github' },
      filter: { headers: { 'x-github-event': 'push' } },
      action: 'wake',
      textTemplate: 'x',
    }),
  ];
  assert.deepEqual(
    await applyMappings(
      mappings,
      request('github', githubExample('issues'), { 'x-github-event': 'issues' }),
      noTransform,
    ),
    { kind: 'ignored', filteredBy: 'mapping-1', why: 'header x-github-event is not "push"' },
  );
  assert.deepEqual(await applyMappings(mappings, request('gitlab', {}, { 'x-github-event': 'push' }), noTransform), {
    kind: 'unmatched',
  });
});

test('filterMiss() names the first condition a request fails and the values allowed, never the value found', () => {
  const f = filter({
    headers: { 'X-GitHub-Event': ['push', 'pull_request'] },
    payload: { 'data.items[0].state': 'open', action: [1, 2, 3, 4, 5, 6] },
  });
  const headers = { 'x-github-event': 'push' };
  assert.equal(filterMiss(f, { headers: {}, payload: {} }), 'header x-github-event is missing');
  assert.equal(
    filterMiss(f, { headers: { 'x-github-event': 'issues\u001b' }, payload: {} }),
    'header x-github-event is not one of "push", "pull_request"',
  );
  assert.equal(filterMiss(f, { headers, payload: {} }), 'payload data.items[0].state is missing');
  assert.equal(
    filterMiss(f, { headers, payload: { data: { items: [{ state: 'secret text' }] } } }),
    'payload data.items[0].state is not "open"',
  );
  assert.equal(
    filterMiss(f, { headers, payload: { data: { items: [{ state: 'open' }] }, action: 7 } }),
    'payload action is not one of 1, 2, 3, 4, 5, …',
  );
  assert.equal(filterMiss(f, { headers, payload: { data: { items: [{ state: 'open' }] }, action: 6 } }), null);
});

test('applyMappings() names the first mapping whose filter passed the request over, and counts the others', async () => {
  const mappings = [
    mapping({
      id: 'pushes',
      match: { path: 'github' },
      filter: { headers: { 'x-github-event': 'push' } },
      action: 'wake',
      textTemplate: 'x',
    }),
    mapping({
      id: 'prs',
      match: { path: 'github' },
      filter: { payload: { action: 'opened' } },
      action: 'wake',
      textTemplate: 'x',
    }, 1),
    mapping({ id: 'elsewhere', match: { path: 'gitlab' }, action: 'wake', textTemplate: 'x' }, 2),
  ];
  const outcome = await applyMappings(mappings, request('github', {}, { 'x-github-event': 'issues' }), noTransform);
  assert.deepEqual(outcome, {
    kind: 'ignored',
    filteredBy: 'pushes',
    why: 'header x-github-event is not "push" (and the filter of 1 more mapping)',
  });
});
