import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { buildConfig } from '../lib/config/load.ts';
import type { Config } from '../lib/config/types.ts';
import { readinessWarnings } from '../lib/config/readiness.ts';
import { DENO_PATH } from './_children.ts';
import { tempDir } from './_dir.ts';

async function config(raw: unknown): Promise<Config> {
  const result = await buildConfig(raw, { file: null, env: {}, dir: tmpdir() });
  assert.ok(result.ok, result.ok ? '' : result.problems.join('\n'));
  return result.config;
}

const TELEGRAM = { telegram: { botToken: '123:abc', defaultTo: '42' } };
const OLLAMA = { ollama: { api: 'openai-completions', baseUrl: 'http://127.0.0.1:11434/v1' } };
const READY = { models: { providers: OLLAMA }, agents: { defaults: { model: 'ollama/llama3.2' } }, channels: TELEGRAM };

test("the quick start's config draws one line for the missing model and one for the missing channel", async () => {
  const warnings = readinessWarnings(await config({ hooks: { enabled: true, token: 't' } }));
  assert.deepEqual(warnings, [
    'agent "main" has no model and agents.defaults.model is not set: agent runs and heartbeats will fail',
    'no channel is configured (channels): run replies (deliver defaults to true) and heartbeat replies will not be delivered',
  ]);
});

test('a model and a channel leave nothing to warn about', async () => {
  const ready = await config({
    models: { providers: OLLAMA },
    agents: { defaults: { model: 'ollama/llama3.2' } },
    channels: TELEGRAM,
  });
  assert.deepEqual(readinessWarnings(ready), []);
});

test('each listed agent without a model is named by its index and id', async () => {
  const some = await config({
    models: { providers: OLLAMA },
    agents: { list: [{ id: 'main', default: true, model: 'ollama/llama3.2' }, { id: 'ops' }] },
    channels: TELEGRAM,
  });
  assert.deepEqual(readinessWarnings(some), [
    'agents.list[1] ("ops") has no model and agents.defaults.model is not set: its agent runs will fail',
  ]);
});

test('forward mode needs neither a model nor a channel here: the upstream gateway runs the agents', async () => {
  const forwarding = await config({
    hooks: { enabled: true, token: 't', forward: { url: 'http://127.0.0.1:18789', token: 'upstream-token' } },
  });
  assert.deepEqual(readinessWarnings(forwarding), []);
});

test('transforms on a Node server draw one line naming what stays open (network, signals) and the setting that closes it', async (t) => {
  const dir = await tempDir(t, 'readiness-');
  await mkdir(join(dir, 'hooks', 'transforms'), { recursive: true });
  await writeFile(join(dir, 'hooks', 'transforms', 't.js'), 'export default () => null;\n');
  const raw = (extra: object) => ({
    hooks: { enabled: true, token: 't', ...extra, mappings: [{ match: { path: 'x' }, transform: { module: 't.js' } }] },
    ...READY,
  });
  const built = await buildConfig(raw({}), { file: null, env: {}, dir });
  assert.ok(built.ok, built.ok ? '' : built.problems.join('\n'));
  assert.deepEqual(readinessWarnings(built.config, false), [
    'transforms run on Node, whose permission model leaves the network and signals open: a transform can connect to any address ' +
    '(loopback services included) and stop, reload or restart the server with a signal; set hooks.transformRuntime to "deno" to close both',
  ]);
  // A Deno server's children are Deno's; and the setting closes it on Node.
  assert.deepEqual(readinessWarnings(built.config, true), []);
  const onDeno = await buildConfig(raw({ transformRuntime: 'deno', transformDenoPath: DENO_PATH }), {
    file: null,
    env: {},
    dir,
  });
  assert.ok(onDeno.ok, onDeno.ok ? '' : onDeno.problems.join('\n'));
  assert.deepEqual(readinessWarnings(onDeno.config, false), []);
});

test('no transform, no transform line', async () => {
  assert.deepEqual(readinessWarnings(await config({ hooks: { enabled: true, token: 't' }, ...READY }), false), []);
});

test('readinessWarnings() names a non-loopback inspector the config allowed', async () => {
  const open = readinessWarnings(
    await config({
      hooks: { enabled: true, token: 't' },
      inspector: { port: 8790, bind: '0.0.0.0', allowNonLoopback: true },
    }),
  );
  assert.ok(open.some((w) => /^inspector\.bind is 0\.0\.0\.0, not loopback/.test(w)), open.join('\n'));
  const closed = readinessWarnings(await config({ hooks: { enabled: true, token: 't' }, inspector: { port: 8790 } }));
  assert.ok(!closed.some((w) => /inspector/.test(w)));
});
