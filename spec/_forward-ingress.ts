// Test helper: hooks-ingress as a real process in forward mode, in front of a gateway.
import type { TestContext } from 'node:test';
import { configFile, runCli, serveState, type ConfigFile, type Spawned } from './_cli.ts';

/** The hook token of hooks-ingress in the gateway specs. */
export const INGRESS_TOKEN = 'spec-hooks-ingress-token-0123456789';

/** A running hooks-ingress: its URL, its files, and its outbox as `outbox --json` lists it. */
export interface ForwardIngress extends Spawned {
  files: ConfigFile;
  outbox(): Promise<Record<string, unknown>[]>;
}

type Raw = Record<string, unknown>;

/** Starts `hooks-ingress serve` forwarding to `upstream` (its hooks URL and token); `raw` adds config (its `hooks` merged). */
export async function startForwardIngress(t: TestContext, upstream: { hooksUrl: string; hookToken: string }, raw: Raw = {}): Promise<ForwardIngress> {
  const hooks = { enabled: true, token: INGRESS_TOKEN, ...(raw['hooks'] as Raw | undefined), forward: { url: upstream.hooksUrl, token: upstream.hookToken, ...((raw['hooks'] as Raw | undefined)?.['forward'] as Raw | undefined) } };
  const files = await configFile(t, { ...raw, hooks }, 'gateway-ingress-');
  const server = await serveState(t, files);
  const outbox = async () => {
    const listed = await runCli(['outbox', '--json', '--config', files.config, '--state-dir', files.state]);
    if (listed.code !== 0) throw new Error(`outbox --json exited ${listed.code}: ${listed.stderr}`);
    return listed.stdout.split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line) as Record<string, unknown>);
  };
  return { ...server, files, outbox };
}
