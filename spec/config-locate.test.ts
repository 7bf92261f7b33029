import { test } from 'node:test';
import assert from 'node:assert/strict';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { locateConfig, locateStateDir } from '../lib/config/locate.ts';

test('locateConfig() prefers --config, then $HOOKS_INGRESS_CONFIG, then $XDG_CONFIG_HOME, then ~/.config', () => {
  const env = { HOOKS_INGRESS_CONFIG: '/env/config.json', XDG_CONFIG_HOME: '/xdg', HOME: '/home/u' };
  assert.deepEqual(locateConfig('/flag/config.json', env), { path: '/flag/config.json', implicit: false });
  assert.deepEqual(locateConfig(undefined, env), { path: '/env/config.json', implicit: false });
  assert.deepEqual(locateConfig(undefined, { XDG_CONFIG_HOME: '/xdg', HOME: '/home/u' }), {
    path: '/xdg/hooks-ingress/config.json',
    implicit: true,
  });
  assert.deepEqual(locateConfig(undefined, { HOME: '/home/u' }), {
    path: '/home/u/.config/hooks-ingress/config.json',
    implicit: true,
  });
});

test('locateConfig() resolves relative paths against the working directory and skips empty variables', () => {
  assert.deepEqual(locateConfig('conf.json', {}), { path: resolve('conf.json'), implicit: false });
  assert.deepEqual(locateConfig(undefined, { HOOKS_INGRESS_CONFIG: 'rel.json' }), {
    path: resolve('rel.json'),
    implicit: false,
  });
  assert.deepEqual(locateConfig(undefined, { HOOKS_INGRESS_CONFIG: '', XDG_CONFIG_HOME: '', HOME: '/h' }), {
    path: '/h/.config/hooks-ingress/config.json',
    implicit: true,
  });
  assert.deepEqual(locateConfig(undefined, {}), {
    path: join(homedir(), '.config', 'hooks-ingress', 'config.json'),
    implicit: true,
  });
});

test('locateStateDir() prefers --state-dir, then state.dir, then $STATE_DIRECTORY, then $XDG_STATE_HOME, then ~/.local/state', () => {
  // What buildConfig() makes of state.dir (config-load.test.ts): an absolute path, or null when unset.
  const withState = { stateDir: '/from/config' };
  const without = { stateDir: null };
  const env = { STATE_DIRECTORY: '/systemd/state', XDG_STATE_HOME: '/xdg', HOME: '/home/u' };
  assert.equal(locateStateDir('/flag', withState, env), '/flag');
  assert.equal(locateStateDir('rel', withState, env), resolve('rel'));
  assert.equal(locateStateDir(undefined, withState, env), '/from/config');
  assert.equal(locateStateDir(undefined, without, env), '/systemd/state');
  assert.equal(locateStateDir(undefined, without, { XDG_STATE_HOME: '/xdg', HOME: '/home/u' }), '/xdg/hooks-ingress');
  assert.equal(locateStateDir(undefined, without, { HOME: '/home/u' }), '/home/u/.local/state/hooks-ingress');
  assert.equal(locateStateDir(undefined, without, {}), join(homedir(), '.local', 'state', 'hooks-ingress'));
});

test('locateStateDir() takes the first of several systemd state directories', () => {
  assert.equal(locateStateDir(undefined, { stateDir: null }, { STATE_DIRECTORY: '/a:/b' }), '/a');
  assert.equal(
    locateStateDir(undefined, { stateDir: null }, { STATE_DIRECTORY: '', HOME: '/h' }),
    '/h/.local/state/hooks-ingress',
  );
});
