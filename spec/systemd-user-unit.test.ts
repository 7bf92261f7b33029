// contrib/systemd/user/hooks-ingress.service: the user unit (systemctl --user) beside the system unit.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { test } from 'node:test';
import { DRAIN_MS } from '../lib/cli/serve.ts';
import { ROOT } from './_cli.ts';
import { tempDir } from './_dir.ts';

const SYSTEM_UNIT = 'contrib/systemd/hooks-ingress.service';
const USER_UNIT = 'contrib/systemd/user/hooks-ingress.service';

// Settings of the system unit that a user manager cannot apply (it has no privileges to give away
// or to firewall with), or that the user unit replaces; the unit's header says why for each.
const SYSTEM_ONLY = new Set([
  'DynamicUser',
  'StateDirectory',
  'StateDirectoryMode',
  'ConfigurationDirectory',
  'LoadCredential',
  'CapabilityBoundingSet',
  'AmbientCapabilities',
  'DevicePolicy',
  'ProtectClock',
  'ProtectProc',
  'ProcSubset',
  'RemoveIPC',
  'Environment',
  'ExecStart',
  'ExecReload',
  'After',
  'WantedBy',
  'Description',
]);
// The user unit keeps home readable (its config lives there) where the system unit hides it.
const DIFFERENT = new Map([['ProtectHome', 'read-only']]);
// Measured with systemd 252: 3.8. The offline score counts capabilities a user service never has,
// so it stays above the system unit's; this bound catches a hardening line lost in an edit.
const MAX_EXPOSURE = 4.0;

const ANALYZE = _analyzeVersion();
const ANALYZE_SKIP = ANALYZE === null
  ? 'systemd-analyze is not installed'
  : ANALYZE < 250
  ? `systemd-analyze ${ANALYZE} has no --offline (needs 250 or later)`
  : false;

test('the user unit has every hardening setting of the system unit that applies to a user service', () => {
  const system = _settings(SYSTEM_UNIT);
  const user = _settings(USER_UNIT);
  for (const [key, values] of system) {
    if (SYSTEM_ONLY.has(key)) continue;
    const expected = DIFFERENT.has(key) ? [DIFFERENT.get(key)!] : values;
    assert.deepEqual(user.get(key), expected, `${key}= differs from the system unit`);
  }
  // Without a user namespace, systemd before 254 ignores the filesystem settings of a user unit.
  assert.deepEqual(user.get('PrivateUsers'), ['yes']);
  assert.ok(Number(user.get('TimeoutStopSec')?.[0]) * 1000 > DRAIN_MS, 'TimeoutStopSec exceeds the drain');
});

test("the user unit runs the bin a user-prefix npm install makes, with the quick start's state directory writable", () => {
  const user = _settings(USER_UNIT);
  assert.deepEqual(user.get('ExecStart'), ['%h/.local/bin/hooks-ingress serve']);
  assert.deepEqual(user.get('ExecReload'), ['%h/.local/bin/hooks-ingress reload']);
  assert.deepEqual(user.get('ReadWritePaths'), ['%h/.local/state/hooks-ingress']);
  assert.deepEqual(user.get('WantedBy'), ['default.target']);
});

test('systemd-analyze --user verify finds no problem in the user unit', { skip: ANALYZE_SKIP }, async (t) => {
  // verify resolves %h and checks that ExecStart exists, so it runs with a scratch HOME holding a
  // stub bin; a user manager also needs a runtime directory, which this machine may not have.
  const home = await tempDir(t, 'hooks-ingress-user-unit-');
  const runtime = join(home, 'run');
  await mkdir(runtime, { mode: 0o700 });
  const bin = join(home, '.local/bin/hooks-ingress');
  await mkdir(join(home, '.local/bin'), { recursive: true });
  await writeFile(bin, '#!/bin/sh\n');
  await chmod(bin, 0o755);
  const env = { ...process.env, HOME: home, XDG_RUNTIME_DIR: runtime };
  const verify = spawnSync('systemd-analyze', ['--user', 'verify', '--man=no', USER_UNIT], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
  });
  assert.equal(verify.error, undefined, 'systemd-analyze did not run');
  assert.equal(`${verify.stdout}${verify.stderr}`.trim(), '', 'systemd-analyze --user verify reported problems');
  assert.equal(verify.status, 0);

  const security = spawnSync('systemd-analyze', ['--user', 'security', '--offline=true', '--no-pager', USER_UNIT], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
  });
  const output = `${security.stdout}${security.stderr}`;
  const score = /Overall exposure level for [^:]+: (\d+(?:\.\d+)?)/.exec(output);
  assert.ok(score, `no overall exposure level in:\n${output}`);
  assert.ok(Number(score[1]) <= MAX_EXPOSURE, `exposure ${score[1]} is above ${MAX_EXPOSURE}:\n${output}`);
});

test('the user unit leaves LoadCredential= out: its ${NAME} secrets come from an EnvironmentFile= drop-in the docs show', () => {
  assert.equal(_settings(USER_UNIT).get('LoadCredential'), undefined);
  assert.deepEqual(_settings(USER_UNIT).get('EnvironmentFile'), undefined, 'the drop-in names the file, not the unit');
  assert.deepEqual(_dropIn(), ['[Service]', 'EnvironmentFile=%h/.config/hooks-ingress/env']);
});

test('the systemd-analyze --user verify command the docs give works as written, with the documented drop-in', {
  skip: ANALYZE_SKIP,
}, async (t) => {
  // Installed as the docs say, in a scratch home; man has no hooks-ingress pages on its path there.
  const home = await tempDir(t, 'hooks-ingress-user-docs-');
  const runtime = join(home, 'run');
  await mkdir(runtime, { mode: 0o700 });
  await mkdir(join(home, '.local/bin'), { recursive: true });
  await writeFile(join(home, '.local/bin/hooks-ingress'), '#!/bin/sh\n', { mode: 0o755 });
  const units = join(home, '.config/systemd/user');
  await mkdir(join(units, 'hooks-ingress.service.d'), { recursive: true });
  await writeFile(join(units, 'hooks-ingress.service'), readFileSync(join(ROOT, USER_UNIT)));
  await writeFile(join(units, 'hooks-ingress.service.d/override.conf'), `${_dropIn().join('\n')}\n`);
  await mkdir(join(home, '.config/hooks-ingress'), { recursive: true });
  await writeFile(join(home, '.config/hooks-ingress/env'), 'GITHUB_WEBHOOK_SECRET=x\n', { mode: 0o600 });
  const env: Record<string, string | undefined> = { ...process.env, HOME: home, XDG_RUNTIME_DIR: runtime };
  delete env['MANPATH'];
  const commands = ['README.md', 'docs/operations.md', USER_UNIT].map((file) => {
    const found = /systemd-analyze --user verify [^#\n]*?\.service/.exec(readFileSync(join(ROOT, file), 'utf8'));
    assert.ok(found, `${file} gives the verify command`);
    return found[0];
  });
  assert.equal(new Set(commands).size, 1, 'the docs give one command');
  const verify = spawnSync('sh', ['-c', commands[0]!], { env, encoding: 'utf8' });
  assert.equal(`${verify.stdout}${verify.stderr}`.trim(), '', `${commands[0]} reported problems`);
  assert.equal(verify.status, 0);
});

// The drop-in docs/operations.md shows for the user service's secrets (its commented lines).
function _dropIn(): string[] {
  const docs = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
  const section = docs.slice(docs.indexOf('### The user service'), docs.indexOf('### The system service'));
  return [...section.matchAll(/^#\s+(\[Service\]|EnvironmentFile=.*)$/gm)].map((m) => m[1]!.trim());
}

// The [Unit]/[Service]/[Install] settings of a unit file, by key, values in order.
function _settings(unit: string): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  for (const line of readFileSync(join(ROOT, unit), 'utf8').split('\n')) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (match === null) continue;
    settings.set(match[1]!, [...(settings.get(match[1]!) ?? []), match[2]!.trim()]);
  }
  return settings;
}

function _analyzeVersion(): number | null {
  const onPath = process.env['PATH']?.split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, 'systemd-analyze'), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  if (onPath !== true) return null;
  const run = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
  return Number(/^systemd (\d+)/.exec(run.stdout ?? '')?.[1] ?? 0);
}
