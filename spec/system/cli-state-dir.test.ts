// Where the reading commands find the state directory (lib/cli/state-dir.ts), against a real
// server process: a config file that cannot be parsed (an edit in progress) does not blind them.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { main } from '../../lib/cli/main.ts';
import { configFile, serveState } from '../_cli.ts';
import { post } from '../_http.ts';
import { captureIo } from '../_io.ts';
import { until } from '../_until.ts';

const TOKEN = 'state-dir-spec-token-0123456789abcdef';
// A trailing comma after a key with no value: line 2, column 13.
const BROKEN = '{ "hooks": { "enabled": true,\n  "token": , } }\n';

test('the reading commands keep working with a config file that cannot be parsed: the default state directory, two warnings, the same output', async (t) => {
  const f = await configFile(t, { hooks: { enabled: true, token: TOKEN } }, 'state-dir-');
  const xdg = join(f.dir, 'xdg');
  const state = join(xdg, 'hooks-ingress');
  const server = await serveState(t, { config: f.config, state });
  const wake = await post(server.url, '/hooks/wake', {
    headers: { authorization: `Bearer ${TOKEN}` },
    body: { text: 'hello', mode: 'next-heartbeat' },
  });
  assert.equal(wake.status, 200, wake.text);
  const env = { HOME: f.dir, XDG_STATE_HOME: xdg, HOOKS_INGRESS_CONFIG: f.config };
  const run = async (argv: string[]) => {
    const { io, out } = captureIo(env);
    return { code: await main(argv, io), ...out };
  };
  // The ledger is written in batches: the wake is in it before the outputs are compared.
  await until('the wake in the request ledger', async () => / 200 .*POST wake /.test((await run(['requests'])).stdout));
  await f.write(BROKEN);
  const commands: [string, string[]][] = [
    ['status', ['status', '--json']],
    ['requests', ['requests']],
    ['events', ['events']],
    ['runs', ['runs']],
    ['outbox', ['outbox']],
    ['inspect', ['inspect']],
  ];
  for (const [name, argv] of commands) {
    const broken = await run(argv);
    const chosen = await run([...argv, '--state-dir', state]);
    const warnings =
      `hooks-ingress ${name}: warning: cannot parse config ${f.config}: line 2, column 12: unexpected token ','\n` +
      `hooks-ingress ${name}: warning: a state directory the config file may name (state.dir) was not used: reading ${state} (--state-dir chooses another)\n`;
    assert.equal(broken.code, chosen.code, `${name}: ${broken.stderr}`);
    assert.equal(broken.stderr, warnings + chosen.stderr, name);
    if (name === 'status') {
      assert.equal(broken.code, 0, broken.stderr);
      assert.equal((JSON.parse(broken.stdout) as { pid: number }).pid, server.child.pid);
    } else {
      assert.equal(broken.stdout, chosen.stdout, name);
    }
  }
  assert.match((await run(['events'])).stdout, /hello/, 'the wake the server took');
  assert.match((await run(['requests'])).stdout, / 200 .*POST wake /);
});

test('reload with a config file that cannot be parsed does not contact a server, and says why', async (t) => {
  const f = await configFile(t, { hooks: { enabled: true, token: TOKEN } }, 'state-dir-');
  const xdg = join(f.dir, 'xdg');
  const state = join(xdg, 'hooks-ingress');
  await serveState(t, { config: f.config, state });
  await f.write(BROKEN);
  const env = { HOME: f.dir, XDG_STATE_HOME: xdg, HOOKS_INGRESS_CONFIG: f.config };
  const { io, out } = captureIo(env);
  assert.equal(await main(['reload'], io), 1);
  assert.equal(out.stdout, '');
  assert.equal(
    out.stderr,
    `hooks-ingress reload: invalid config ${f.config}:\n  ${f.config}: line 2, column 12: unexpected token ','\n` +
      'hooks-ingress reload: the server was not contacted: without a readable config file its state directory is not known (--state-dir names it; the server reads its config file itself)\n',
  );
  const status = captureIo(env);
  assert.equal(await main(['status', '--json', '--state-dir', state], status.io), 0);
  assert.equal((JSON.parse(status.out.stdout) as { lastReload: unknown }).lastReload, null, 'no reload was asked');
});
