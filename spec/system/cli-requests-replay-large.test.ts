// A replay in a real server whose request ledger is 64 MiB (its default bound), in four segment
// files written by the ledger's own writer: while the server looks the entry up, /healthz is asked
// back to back over one keep-alive connection, and its slowest answer must come within 50 ms. The
// server read and parsed the whole ledger on its event loop for a replay: /healthz waited 1.3-1.7 s
// here (JSON.parse handed 67 MB, the loop held 1.3 s of CPU).
//
// A wall-clock bound depends on the machine. On this 2-core machine shared with other work (a load
// average of 15-22), /healthz during the fixed lookup mostly answers in under 1 ms, yet one answer
// in a hundred waits 50-230 ms for a core, the server idle meanwhile. So the bound is held where it
// means something, and the structural property behind it is held always:
// - time the machine gives to other work only ever adds to an answer's time, so the replay is run
//   up to three times and the fastest of the three slowest answers is held to 50 ms; while the
//   machine's one-minute load average is at or above its number of cores, to 250 ms instead
//   (generous, and still five times under what the old code took here), and the spec says so;
// - inside the server (under Node, by a probe loaded into it), always: JSON.parse is handed less
//   than 1 MiB during a replay (the line that names the entry, not the ledger), and the event loop
//   is never held more than 50 ms of CPU time (measured between the ticks of a 1 ms timer as the
//   lesser of the time passed and the CPU time used, so a machine busy elsewhere does not count).
// Measured with the spec alone at a load of 15-22: /healthz at its slowest 5-66 ms (fastest of
// the attempts), the loop held at most 2-13 ms of CPU, 734 bytes parsed for the first replay.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import { main } from '../../lib/cli/main.ts';
import { randomHex } from '../../lib/random.ts';
import { Ledger } from '../../lib/store/ledger/ledger.ts';
import type { LedgerConfig } from '../../lib/store/ledger/config.ts';
import type { LedgerEntry } from '../../lib/model/ledger-entry.ts';
import { readEvents } from '../../lib/store/journal/read.ts';
import { fingerprints } from '../../lib/guard/fingerprint.ts';
import { openCredentialKey } from '../../lib/store/state/credential-key.ts';
import { configFile, IS_DENO, spawnServer, stopAfter } from '../_cli.ts';
import { captureIo } from '../_io.ts';
import { until } from '../_until.ts';

const TOKEN = 'replay-large-token-0123456789abcdef';
const LEDGER_BYTES = 64 * 1024 * 1024;
const HEALTHZ_MS = 50;
const BUSY_HEALTHZ_MS = 250;
const LOOP_MS = 50;
const PARSED_BYTES = 1024 * 1024;
const ATTEMPTS = 3;

// The ledger's defaults (hooks-ingress.json(5)): the ledger is written at its own bounds.
const CONFIG: LedgerConfig = {
  enabled: true,
  maxEntries: 10_000,
  maxBytes: LEDGER_BYTES,
  maxAgeSeconds: 604_800,
  maxBodyBytes: 65_536,
  coalesceSeconds: 60,
  unauthenticated: { maxEntries: 2_000, maxBytes: 4_194_304, maxBodyBytes: 16_384 },
};

// Deliveries as the server records them: a wake with a JSON body of 5-9 KiB, a few headers and
// the fingerprint of the hook token it came with (under the state directory's key).
function delivery(i: number, now: number, credential: string, fields: Partial<LedgerEntry> = {}): LedgerEntry {
  return {
    id: randomHex(12),
    requestId: `delivery-${i}`,
    time: new Date(now - 3_600_000 + i).toISOString(),
    method: 'POST',
    path: '/hooks/wake',
    hook: 'wake',
    client: '127.0.0.1',
    lane: 'authenticated',
    auth: 'token',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'spec/1.0',
      'x-request-id': `delivery-${i}`,
      authorization: '[redacted]',
    },
    status: 202,
    durationMs: 1.5,
    credential,
    ...fields,
  };
}

function body(i: number): Buffer {
  const items = Array.from(
    { length: 40 + (i % 30) },
    (_, k) => ({ k, name: `item ${i}-${k}`, note: 'lorem ipsum dolor sit amet, '.repeat(3), done: k % 2 === 0 }),
  );
  return Buffer.from(JSON.stringify({ text: `delivery ${i}`, mode: 'next-heartbeat', items }));
}

// Writes a ledger of just under `bytes` through the ledger's writer; the entry to replay (a wake
// that failed) goes first, so the whole ledger lies between it and the newest line.
async function writeLedger(state: string, bytes: number): Promise<{ target: string; entries: number }> {
  const now = Date.now();
  const ledger = await Ledger.open(state, { config: CONFIG });
  const key = await openCredentialKey(state, { make: true });
  assert.ok(key.ok, key.ok ? '' : key.problem);
  const credential = fingerprints(key.key).of(TOKEN);
  const target = delivery(0, now, credential, { status: 503, code: 'ERR_UNAVAILABLE', error: 'the queue is full' });
  ledger.record(
    target,
    Buffer.from(JSON.stringify({ text: 'replayed from a large ledger', mode: 'now' })),
    CONFIG.maxBodyBytes,
  );
  let i = 1;
  // In batches that never take it past its bound (an entry's line is at most 10 KiB), which would trim the oldest segment.
  for (let left = bytes; left > 64 * 1024; left = bytes - ledger.size().bytes) {
    for (let n = Math.max(1, Math.min(500, Math.floor(left / 10_240))); n > 0; n--, i++) {
      ledger.record(delivery(i, now, credential), body(i), CONFIG.maxBodyBytes);
    }
    await ledger.flush();
  }
  await ledger.close();
  return { target: target.id, entries: i };
}

function get(url: string, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, timeout: 30_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} in 30 s`)));
    req.end();
  });
}

// /healthz asked back to back until `done` settles: how long each answer took (ms).
async function pollHealth(url: string, done: Promise<unknown>): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let finished = false;
  void done.finally(() => (finished = true));
  const times: number[] = [];
  try {
    do {
      const start = performance.now();
      assert.equal(await get(`${url}/healthz`, agent), 200);
      times.push(performance.now() - start);
    } while (!finished);
  } finally {
    agent.destroy();
  }
  return times;
}

// Loaded into the server with --require; changes nothing else of it. It counts what JSON.parse is
// handed, and keeps the longest the event loop was held: between two ticks of a 1 ms timer, the
// lesser of the time that passed and the CPU time the process used, so that time the machine gave
// to other work does not count (the wall-clock delay, perf_hooks.monitorEventLoopDelay's, is kept
// as well, to be shown). On SIGUSR2 it writes all three to PROBE_FILE and starts again.
const PROBE = `const { writeFileSync } = require('node:fs');
const { monitorEventLoopDelay, performance } = require('node:perf_hooks');
const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
let parsed = 0;
const parse = JSON.parse;
JSON.parse = function (text, reviver) {
  if (typeof text === 'string') parsed += text.length;
  return parse.call(this, text, reviver);
};
let held = 0;
let wall = performance.now();
let cpu = process.cpuUsage();
setInterval(() => {
  const nowWall = performance.now();
  const nowCpu = process.cpuUsage();
  const cpuMs = (nowCpu.user - cpu.user + nowCpu.system - cpu.system) / 1000;
  held = Math.max(held, Math.min(nowWall - wall, cpuMs));
  wall = nowWall;
  cpu = nowCpu;
}, 1).unref();
process.on('SIGUSR2', () => {
  writeFileSync(process.env.PROBE_FILE, JSON.stringify({ heldMs: held, delayMs: delay.max / 1e6, parsed }));
  delay.reset();
  held = 0;
  parsed = 0;
});
`;

interface Probed {
  heldMs: number;
  delayMs: number;
  parsed: number;
}

test(
  `/healthz answers within ${HEALTHZ_MS} ms while the server replays an entry of a 64 MiB ledger, and the lookup parses only the lines that name it`,
  { timeout: 300_000 },
  async (t) => {
    const s = await configFile(t, { hooks: { enabled: true, token: TOKEN } }, 'replay-large-');
    const written = await writeLedger(s.state, LEDGER_BYTES);
    const probe = join(s.dir, 'probe.cjs');
    const report = join(s.dir, 'probe.json');
    await writeFile(probe, PROBE);
    // Under Deno the server runs on Deno, which takes no --require: /healthz is measured, the probe not.
    const env: Record<string, string> = IS_DENO ? {} : { NODE_OPTIONS: `--require ${probe}`, PROBE_FILE: report };
    const server = await spawnServer(['--config', s.config, '--port', '0', '--state-dir', s.state], env);
    stopAfter(t, server);
    const probed = async (): Promise<Probed | null> => {
      if (IS_DENO) return null;
      await writeFile(report, '');
      process.kill(server.child.pid!, 'SIGUSR2');
      return JSON.parse(await until('the probe', async () => (await readFile(report, 'utf8')) || null)) as Probed;
    };
    // What the server counts of the ledger at its start is done before the replay: status waits for it.
    const { io: statusIo, out: statusOut } = captureIo({ HOOKS_INGRESS_CONFIG: s.config });
    assert.equal(await main(['status', '--state-dir', s.state], statusIo), 0, statusOut.stderr);
    assert.match(statusOut.stdout, new RegExp(`ledger: +${written.entries} entries, \\d+ bytes`), statusOut.stdout);

    // Up to three replays, until one's slowest /healthz answer is within the bound (see the header).
    const slowest: number[] = [];
    const loaded = loadavg()[0]! >= availableParallelism();
    for (let attempt = 0; attempt < ATTEMPTS && !slowest.some((ms) => ms < HEALTHZ_MS); attempt++) {
      await pollHealth(server.url, Promise.resolve());
      await probed();
      const { io, out } = captureIo({ HOOKS_INGRESS_CONFIG: s.config });
      // The first replay succeeds; running it again needs --force.
      const replay = main([
        'requests',
        'replay',
        written.target,
        ...(attempt === 0 ? [] : ['--force']),
        '--state-dir',
        s.state,
      ], io);
      const times = await pollHealth(server.url, replay);
      const code = await replay;
      const inside = await probed();
      slowest.push(Math.max(...times));
      t.diagnostic(
        `replay ${attempt + 1}: /healthz answered ${times.length} times, slowest ${slowest.at(-1)!.toFixed(1)} ms${
          inside === null
            ? ''
            : `; in the server the event loop was held at most ${inside.heldMs.toFixed(1)} ms of CPU (${
              inside.delayMs.toFixed(1)
            } ms of delay), JSON.parse was handed ${inside.parsed} bytes`
        }`,
      );
      assert.equal(code, 0, out.stderr);
      // Run again while its event is unread, the wake is that event again (coalesced), and says no event of its own.
      assert.match(
        out.stdout,
        new RegExp(
          `^replayed ${written.target}  as [0-9a-f]{24} request=\\S+  200${
            attempt === 0 ? '  event \\d+' : '(  event \\d+)?'
          }\\n$`,
        ),
      );
      if (attempt === 0) {
        assert.equal(
          (await readEvents(s.state)).filter((e) => e.text === 'replayed from a large ledger').length,
          1,
        );
      }
      if (inside !== null) {
        assert.ok(
          inside.parsed < PARSED_BYTES,
          `JSON.parse was handed ${inside.parsed} bytes during the replay: the lookup parses the lines that name the entry, not the ledger`,
        );
        assert.ok(
          inside.heldMs < LOOP_MS,
          `the server's event loop was held ${inside.heldMs.toFixed(1)} ms during the replay`,
        );
      }
    }
    const bound = loaded ? BUSY_HEALTHZ_MS : HEALTHZ_MS;
    if (loaded) {
      t.diagnostic(
        `the machine is busy (load average ${
          loadavg()[0]!.toFixed(1)
        } on ${availableParallelism()} cores): /healthz is held to ${BUSY_HEALTHZ_MS} ms, not ${HEALTHZ_MS}`,
      );
    }
    assert.ok(
      Math.min(...slowest) < bound,
      `/healthz took ${slowest.map((ms) => ms.toFixed(1)).join(', ')} ms at its slowest during each replay`,
    );
  },
);
