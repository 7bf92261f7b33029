import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildConfig } from '../lib/config/load.ts';

const mapping = (id: string | undefined, path: string) => ({
  ...(id === undefined ? {} : { id }),
  match: { path },
  messageTemplate: 'x',
});

async function warnings(mappings: unknown[]): Promise<string[]> {
  const built = await buildConfig(
    { hooks: { enabled: true, token: 'work-checks-token-0123456789', mappings } },
    { file: null, env: {}, dir: '/' },
  );
  assert.ok(built.ok, built.ok ? '' : built.problems.join('; '));
  return built.warnings.filter((w) => w.includes('work control'));
}

test('buildConfig() warns of a mapping id that another mapping or a built-in hook also names', async () => {
  assert.deepEqual(
    await warnings([mapping('ci', 'a'), mapping('gh', 'b'), mapping('ci', 'c'), mapping('agent', 'd')]),
    [
      'hooks.mappings[2].id: "ci" is also the id of hooks.mappings[0]: work control counts and controls them as one hook; give each mapping an id of its own',
      'hooks.mappings[3].id: "agent" also names the hook of POST /hooks/agent: work control counts and controls them as one; give the mapping an id of its own',
    ],
  );
  assert.equal((await warnings([mapping('wake', 'a')])).length, 1);
});

test('buildConfig() warns of nothing when each mapping has an id of its own (the defaults included)', async () => {
  assert.deepEqual(await warnings([mapping(undefined, 'a'), mapping(undefined, 'b'), mapping('mapping-3', 'c')]), []);
});
