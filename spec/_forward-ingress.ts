// Test helper: hooks-ingress as a real process in forward mode, in front of a gateway, and what
// the gateway specs ask of it: wakes sent at line rate, texts awaited at the stand-in model.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { type ConfigFile, configFile, runCli, serveState, type Spawned } from './_cli.ts';
import { post, type Reply } from './_http.ts';
import type { StandinModel } from './_standin-model.ts';
import { until } from './_until.ts';

/** The hook token of hooks-ingress in the gateway specs. */
export const INGRESS_TOKEN = 'spec-hooks-ingress-token-0123456789';
/** The headers that authenticate a request to hooks-ingress in the gateway specs. */
export const FORWARD_AUTH = { authorization: `Bearer ${INGRESS_TOKEN}` };
// A wake reaches the model at the gateway's next heartbeat, which it starts at most 5 a minute
// per agent: minutes, on a loaded machine, for the batches the specs send.
const TURN_MS = 300_000;

/** A running hooks-ingress: its URL, its files, and its outbox as `outbox --json` lists it. */
export interface ForwardIngress extends Spawned {
  files: ConfigFile;
  outbox(): Promise<Record<string, unknown>[]>;
}

type Raw = Record<string, unknown>;

/** Starts `hooks-ingress serve` forwarding to `upstream` (its hooks URL and token); `raw` adds config (its `hooks` merged). */
export async function startForwardIngress(
  t: TestContext,
  upstream: { hooksUrl: string; hookToken: string },
  raw: Raw = {},
): Promise<ForwardIngress> {
  const hooks = {
    enabled: true,
    token: INGRESS_TOKEN,
    ...(raw['hooks'] as Raw | undefined),
    forward: {
      url: upstream.hooksUrl,
      token: upstream.hookToken,
      ...((raw['hooks'] as Raw | undefined)?.['forward'] as Raw | undefined),
    },
  };
  const files = await configFile(t, { ...raw, hooks }, 'gateway-ingress-');
  const server = await serveState(t, files);
  const outbox = async () => {
    const listed = await runCli(['outbox', '--json', '--config', files.config, '--state-dir', files.state]);
    if (listed.code !== 0) throw new Error(`outbox --json exited ${listed.code}: ${listed.stderr}`);
    return listed.stdout.split('\n').filter((line) => line.trim() !== '').map((line) =>
      JSON.parse(line) as Record<string, unknown>
    );
  };
  return { ...server, files, outbox };
}

/** Starts hooks-ingress again on `ingress`'s config and state directory, once it has stopped (or was killed). */
export async function restartForwardIngress(t: TestContext, ingress: ForwardIngress): Promise<ForwardIngress> {
  const server = await serveState(t, ingress.files);
  return { ...server, files: ingress.files, outbox: ingress.outbox };
}

/** Texts no prompt holds by chance: `label 007 <run>`. */
export function markers(label: string, count: number): string[] {
  const run = randomBytes(4).toString('hex');
  return Array.from({ length: count }, (_, i) => `${label} ${String(i + 1).padStart(3, '0')} ${run}`);
}

/** Waits until every one of `texts` is in a prompt at the stand-in model (failing with both processes' output). */
export async function reachedModel(
  model: StandinModel,
  texts: readonly string[],
  ingress: ForwardIngress,
  gateway: { output(): string },
): Promise<void> {
  await until(`${texts.length} texts at the stand-in model`, () => model.reached(texts).length === texts.length, {
    timeoutMs: TURN_MS,
    detail: () =>
      `${model.reached(texts).length} of ${texts.length} reached it\nhooks-ingress:\n${
        ingress.stderr().slice(-3000)
      }\ngateway:\n${gateway.output()}`,
  });
}

/** Sends each of `texts` as a wake (mode now) to `ingress` as fast as the connection allows, `inFlight` at a time. */
export async function sendWakes(ingress: ForwardIngress, texts: readonly string[], inFlight: number): Promise<Reply[]> {
  const replies: Reply[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < texts.length) {
        const text = texts[next++]!;
        replies.push(await post(ingress.url, '/hooks/wake', { headers: FORWARD_AUTH, body: { text, mode: 'now' } }));
      }
    }),
  );
  return replies;
}

/** `ingress`'s outbox, asserting that every entry is sent. */
export async function allSent(ingress: ForwardIngress): Promise<Record<string, unknown>[]> {
  const entries = await ingress.outbox();
  assert.deepEqual(
    entries.filter((entry) => entry['state'] !== 'sent').map((
      entry,
    ) => [entry['id'], entry['state'], entry['lastError']]),
    [],
  );
  return entries;
}
