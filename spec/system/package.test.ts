// What `npm install -g` gives a user: the command on PATH, the man pages where man finds them, and
// the systemd units and docs inside the package.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { test } from 'node:test';
import { IS_DENO, onPath, ROOT } from '../_cli.ts';
import { tempDir } from '../_dir.ts';

const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  allowScripts?: Record<string, boolean>;
};
// The package is the same whichever runtime runs the suite; packing it once is enough.
const SKIP = IS_DENO ? 'packing is runtime-independent; checked in the Node run' : false;
const MAN_SKIP = SKIP || (onPath('man') ? false : 'man is not installed');

function npm(args: string[], cwd: string) {
  const run = spawnSync('npm', [...args, '--no-audit', '--no-fund', '--ignore-scripts'], { cwd, encoding: 'utf8' });
  assert.equal(run.error, undefined, 'npm did not run');
  assert.equal(run.status, 0, `npm ${args.join(' ')} failed:\n${run.stderr}`);
  return run;
}

test('npm install -g of the packed tarball puts hooks-ingress on PATH and the man pages under share/man', {
  skip: SKIP,
}, async (t) => {
  const dir = await tempDir(t, 'hooks-ingress-pack-');
  // The suite has built dist/ already, so the pack skips the prepare script's second build.
  npm(['pack', '--pack-destination', dir], ROOT);
  const tarball = join(dir, `hooks-ingress-${PKG.version}.tgz`);
  assert.ok(existsSync(tarball), 'npm pack made no tarball');
  const prefix = join(dir, 'prefix');
  npm(['install', '--global', '--prefix', prefix, tarball], dir);

  const installed = join(prefix, 'lib/node_modules/hooks-ingress');
  for (
    const file of [
      'contrib/systemd/hooks-ingress.service',
      'contrib/systemd/hooks-ingress.socket',
      'contrib/systemd/user/hooks-ingress.service',
      'LICENSE',
      'README.md',
      'docs/configuration.md',
      'dist/cli/main.js',
    ]
  ) {
    assert.ok(existsSync(join(installed, file)), `${file} is not in the package`);
  }
  assert.ok(existsSync(join(prefix, 'share/man/man1/hooks-ingress.1')));
  assert.ok(existsSync(join(prefix, 'share/man/man5/hooks-ingress.json.5')));

  const version = spawnSync('hooks-ingress', ['--version'], {
    env: { ...process.env, PATH: `${join(prefix, 'bin')}${delimiter}${process.env['PATH']}` },
    encoding: 'utf8',
  });
  assert.equal(version.error, undefined, 'hooks-ingress is not on PATH');
  assert.equal(version.stdout.trim(), PKG.version);
});

test('man finds both pages of a prefix install through PATH alone', { skip: MAN_SKIP }, async (t) => {
  const dir = await tempDir(t, 'hooks-ingress-man-');
  const prefix = join(dir, 'prefix');
  // A global install of the checkout itself: npm links the folder, and the pages with it.
  npm(['install', '--global', '--prefix', prefix, ROOT], dir);
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${join(prefix, 'bin')}${delimiter}${process.env['PATH']}` };
  delete env['MANPATH'];
  for (const [section, page] of [['1', 'hooks-ingress'], ['5', 'hooks-ingress.json']] as const) {
    const where = spawnSync('man', ['-w', section, page], { env, encoding: 'utf8' });
    assert.equal(where.status, 0, `man -w ${section} ${page}: ${where.stderr}`);
    assert.match(where.stdout.trim(), new RegExp(`hooks-ingress(?:\\.json)?\\.${section}$`));
  }
});

test('a plain npm install is told which install scripts to run (deno and esbuild fetch their binaries)', () => {
  // npm 11 warns about every dependency install script that package.json's allowScripts does not
  // name; both of these only unpack the platform binary the dev tools need.
  assert.deepEqual(PKG.allowScripts, { deno: true, esbuild: true });
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { hasInstallScript?: boolean }>;
  };
  const withScripts = Object.entries(lock.packages)
    .filter(([, entry]) => entry.hasInstallScript === true)
    .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
  assert.deepEqual(withScripts.sort(), Object.keys(PKG.allowScripts ?? {}).sort());
});

test('git ignores the tarball npm pack leaves in the checkout', () => {
  const tarball = `hooks-ingress-${PKG.version}.tgz`;
  const patterns = readFileSync(join(ROOT, '.gitignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) =>
    l !== '' && !l.startsWith('#')
  );
  const glob = (pattern: string) =>
    new RegExp(
      `^${
        pattern.replace(/^\//, '').replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')
      }$`,
    );
  assert.ok(patterns.some((p) => glob(p).test(tarball)), `.gitignore has no pattern for ${tarball}`);
});
