import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { keyName, parseKeyPath } from '../../lib/cli/config-get.ts';
import { main } from '../../lib/cli/main.ts';
import { runCli } from '../_cli.ts';
import { fileDir } from '../_dir.ts';
import { captureIo } from '../_io.ts';

const dir = await fileDir('hooks-config-get-');

// JSONC with a comment and trailing commas, a ${NAME}, and a token in a file: what `node -p JSON.parse` could not read.
const CONFIG = `{
  // the hook token lives beside the config
  "hooks": { "enabled": true, "tokenFile": "hooks-token", },
  "models": { "providers": { "local": { "api": "openai-completions", "baseUrl": "\${LLM_URL}" } } },
  "agents": { "defaults": { "model": "local/m" }, "list": [{ "id": "main", "workspace": "ws" }] },
}
`;

async function get(args: string[], env: Record<string, string> = {}) {
  const { io, out } = captureIo({ HOME: dir, LLM_URL: 'http://127.0.0.1:11434/v1', ...env });
  const code = await main(['config', 'get', '--config', join(dir, 'config.json'), ...args], io);
  return { code, ...out };
}

before(async () => {
  await writeFile(join(dir, 'config.json'), CONFIG);
  await writeFile(join(dir, 'hooks-token'), 'token-from-the-file\n');
  await mkdir(join(dir, 'ws'));
});

/** Asserts that `config get KEY` prints each key's expected line. */
async function assertPrints(expected: [key: string, stdout: string][]): Promise<void> {
  for (const [key, stdout] of expected) assert.equal((await get([key])).stdout, stdout, key);
}

test('config get prints the token read from hooks.tokenFile, out of a JSONC file with comments and trailing commas', async () => {
  assert.deepEqual(await get(['hooks.token']), { code: 0, stdout: 'token-from-the-file\n', stderr: '' });
});

test('config get prints ${NAME} values substituted, defaults for unset keys, and non-strings as JSON', async () => {
  await assertPrints([
    ['models.providers.local.baseUrl', 'http://127.0.0.1:11434/v1\n'],
    ['gateway.port', '8789\n'],
    ['hooks.path', '/hooks\n'],
    ['agents.list[0].id', 'main\n'],
    ['hooks.enabled', 'true\n'],
  ]);
  assert.deepEqual(JSON.parse((await get(['agents.list'])).stdout), [{ id: 'main', workspace: 'ws' }]);
  assert.equal((await get(['state.dir'])).stdout, `${join(dir, '.local', 'state', 'hooks-ingress')}\n`);
});

test('config get prints the default of every key the loader defaults, the newer limits included', async () => {
  await assertPrints([
    ['hooks.transformMaxResultBytes', '1048576\n'],
    ['hooks.maxEventBytes', '262144\n'],
    ['hooks.maxBacklogEvents', '100000\n'],
    ['hooks.maxBacklogBytes', '67108864\n'],
    ['agents.defaults.heartbeat.ackMaxChars', '300\n'],
  ]);
});

test('config get exits 1 naming an unknown key, with the key it was probably meant to be', async () => {
  const typo = await get(['hooks.tokne']);
  assert.equal(typo.code, 1);
  assert.equal(typo.stdout, '');
  assert.equal(typo.stderr, 'hooks-ingress config get: hooks.tokne: unknown key (did you mean "token"?)\n');
  assert.match((await get(['nothing.here'])).stderr, /^hooks-ingress config get: nothing: unknown key\n$/);
});

test('config get exits 1 for a known key without a value', async () => {
  const unset = await get(['hooks.defaultSessionKey']);
  assert.deepEqual(unset, {
    code: 1,
    stdout: '',
    stderr: 'hooks-ingress config get: hooks.defaultSessionKey is not set\n',
  });
});

test('config get answers a missing or malformed KEY with one usage line', async () => {
  const none = await get([]);
  assert.equal(none.code, 2);
  assert.equal(none.stderr, 'hooks-ingress config get: give the KEY to print; see hooks-ingress config get --help\n');
  assert.equal((await get(['a..b'])).code, 2);
  assert.equal((await get(['a', 'b'])).code, 2);
});

test('config get of an invalid config lists its problems and exits 1', async () => {
  await writeFile(join(dir, 'bad.json'), '{ "hooks": { "path": "/" } }');
  const { io, out } = captureIo({ HOME: dir });
  assert.equal(await main(['config', 'get', '-c', join(dir, 'bad.json'), 'hooks.path'], io), 1);
  assert.match(out.stderr, /hooks\.path: may not be "\/"/);
  assert.equal(out.stdout, '');
});

test('config --help lists get, and an unknown config command gets a guess', async () => {
  const { io, out } = captureIo({ HOME: dir });
  assert.equal(await main(['config', '--help'], io), 0);
  assert.match(out.stdout, /^ {2}get /m);
  assert.equal(await main(['config', 'gte'], io), 2);
  assert.equal(
    out.stderr,
    'hooks-ingress config: unknown command "gte" (did you mean "get"?); see hooks-ingress config --help\n',
  );
});

test('parseKeyPath() reads dotted names, [n] indexes and ["quoted"] names, and keyName() writes them back', () => {
  assert.deepEqual(parseKeyPath('models.providers["my llm"].api'), ['models', 'providers', 'my llm', 'api']);
  assert.equal(keyName(parseKeyPath('agents.list[2].model')!), 'agents.list[2].model');
  for (const bad of ['', '.a', 'a.', 'a..b', '[0]', 'a[x]']) assert.equal(parseKeyPath(bad), null, bad);
});

test('the executable prints a configured value for a shell variable', async () => {
  const { code, stdout } = await runCli(['config', 'get', '-c', join(dir, 'config.json'), 'hooks.token'], {
    LLM_URL: 'http://127.0.0.1:1/v1',
  });
  assert.equal(code, 0);
  assert.equal(stdout, 'token-from-the-file\n');
});
