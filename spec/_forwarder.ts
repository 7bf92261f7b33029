// Test helper: forward mode in one process (startApp with a Forwarder, real sockets, a real
// journal) in front of the fake OpenClaw gateway of spec/_fake-openclaw.ts.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { Forwarder } from '../lib/runtime/forward.ts';
import type { Store } from '../lib/store/journal/store.ts';
import { startApp } from './_app.ts';
import { defer } from './_cleanup.ts';
import { type FakeGateway, type FakeGatewayOptions, startFakeGateway } from './_fake-openclaw.ts';

/** hooks-ingress's hook token in these specs. */
export const TOKEN = 'forward-spec-hook-token-0123456789';
/** The fake gateway's hook token (hooks.forward.token). */
export const UPSTREAM_TOKEN = 'upstream-openclaw-token-abcdef';
/** The headers that authenticate a request to hooks-ingress. */
export const AUTH = { authorization: `Bearer ${TOKEN}` };

/** A started server in forward mode: its URL, journal, forwarder, log lines and state folder. */
export interface ForwardHarness {
  url: string;
  store: Store;
  forwarder: Forwarder;
  lines: Record<string, unknown>[];
  dir: string;
}

/** Starts hooks-ingress forwarding to 127.0.0.1:`port`, with quick retries; `extra` adds a clock and config. */
export async function start(
  t: TestContext,
  port: number,
  extra: { now?: () => number; hooks?: Record<string, unknown>; forward?: Record<string, unknown> } = {},
): Promise<ForwardHarness> {
  let forwarder: Forwarder | undefined;
  const h = await startApp(t, {
    raw: {
      hooks: {
        forward: { url: `http://127.0.0.1:${port}/hooks/`, token: UPSTREAM_TOKEN, ...extra.forward },
        ...extra.hooks,
      },
    },
    token: TOKEN,
    idempotencyTtlMs: 60_000,
    ...(extra.now === undefined ? {} : { now: extra.now }),
    with: ({ config, store, log }) => {
      const started = new Forwarder({
        store,
        target: config.hooks.forward!,
        log,
        baseDelayMs: 20,
        maxDelayMs: 200,
        random: () => 1,
        ...(extra.now === undefined ? {} : { now: extra.now }),
      });
      defer(t, () => started.stop());
      forwarder = started;
      return {
        heartbeat: { request: () => assert.fail('forward mode asks for no local heartbeat') },
        forwarded: () => started.kick(),
      };
    },
  });
  return { url: h.url, store: h.store, forwarder: forwarder!, lines: h.lines, dir: h.state };
}

/** A fake gateway for `t`, closed when it ends. */
export async function gateway(t: TestContext, port = 0, options: FakeGatewayOptions = {}): Promise<FakeGateway> {
  const fake = await startFakeGateway(UPSTREAM_TOKEN, port, options);
  defer(t, () => fake.close());
  return fake;
}
