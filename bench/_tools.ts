// What the bench needs before it starts: wrk and adnanh/webhook on PATH (installed with apt-get
// when running as root on a Debian-like system), and a dist/ build no older than lib/.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { say } from './_say.ts';

/** The path of an executable on PATH, or null. */
export function which(command: string): string | null {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // Not here; try the next directory.
    }
  }
  return null;
}

let _aptUpdated = false;

/** A command from PATH; as root on a Debian-like system, apt-get may install its package. */
export function ensureTool(command: string, pkg: string, required: boolean): string | null {
  const found = which(command);
  if (found !== null) return found;
  const apt = which('apt-get');
  if (process.platform === 'linux' && process.getuid?.() === 0 && apt !== null) {
    say(`${command} is not on PATH; running as root with apt-get: installing the ${pkg} package`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    // apt's chatter goes to stderr so that `--json` keeps stdout clean.
    const opts = { stdio: ['ignore', 2, 2] as ['ignore', number, number], env, timeout: 300_000 };
    if (!_aptUpdated) spawnSync(apt, ['update'], opts);
    _aptUpdated = true;
    spawnSync(apt, ['install', '-y', '--no-install-recommends', pkg], opts);
    const installed = which(command);
    if (installed !== null) return installed;
    process.stderr.write(`bench: apt-get could not install ${pkg} (see its output above)\n`);
  }
  if (!required) {
    say(`${command} is not on PATH: its row is left out (Debian/Ubuntu: apt-get install ${pkg})`);
    return null;
  }
  process.stderr.write(`bench: this benchmark needs ${command} on PATH, and it is not there.
(Run as root on a system with apt-get, the bench installs it itself.) Install it, then run "npm run bench" again:
  Debian/Ubuntu:  sudo apt-get update && sudo apt-get install ${pkg}
  Fedora:         sudo dnf install ${pkg}
  macOS:          brew install ${pkg}
`);
  return null;
}

/** Builds the checkout's dist/ when it is missing; warns when its lib/ has changed since the last build. */
export function ensureBuild(root: string): boolean {
  const cli = join(root, 'dist', 'cli', 'main.js');
  if (!existsSync(cli)) {
    say('dist/cli/main.js is missing: running npm run build');
    const built = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 2, 2], timeout: 300_000 });
    if (built.status !== 0 || !existsSync(cli)) {
      process.stderr.write('bench: npm run build failed; fix the build and try again\n');
      return false;
    }
    return true;
  }
  const newer = _newerThan(root, join(root, 'lib'), statSync(cli).mtimeMs);
  if (newer.length > 0) {
    say(
      `warning: dist/ is older than ${newer.slice(0, 3).join(', ')}${
        newer.length > 3 ? ', ...' : ''
      }: run "npm run build" to bench them`,
    );
  }
  return true;
}

// The files below `dir` changed after `ms`, named relative to the checkout.
function _newerThan(root: string, dir: string, ms: number): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(..._newerThan(root, path, ms));
    else if (statSync(path).mtimeMs > ms) found.push(path.slice(root.length));
  }
  return found;
}
