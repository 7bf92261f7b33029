// Run by edge-hidden-classes.test.ts with V8's natives syntax: plans and commits wakes, runs and a template
// mapping's wakes as the hooks path does, then prints, per kind, how many answers and traces had
// a hidden class other than the one before them (past the first few, while V8 settles them).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCommit } from '../lib/edge/commit.ts';
import { createPlanner, type HookRequest, LIVE, plan } from '../lib/edge/plan.ts';
import { HttpError } from '../lib/errors.ts';
import { Store } from '../lib/store/journal/store.ts';
import { silentLogger, specConfig } from './_app.ts';

// `%HaveSameMap` is V8's own; the Function constructor parses it once the flag is on.
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

const dir = await mkdtemp(join(tmpdir(), 'shapes-'));
try {
  const config = await specConfig({
    hooks: {
      enabled: true,
      token: 'shapes-token-0123456789',
      mappings: [{ match: { path: 'plain' }, action: 'wake', textTemplate: 'seen {{n}}' }],
    },
  }, dir);
  const { store } = await Store.open(join(dir, 'state'), { idempotencyTtlMs: 60_000 });
  let ids = 0;
  const newId = () => `00000000-0000-4000-8000-${String(++ids).padStart(12, '0')}`;
  const planner = createPlanner({
    config,
    transforms: async () => ({ ok: true, value: null }),
    lastRoute: () => store.lastRoute(),
    newId,
    clock: Date.now,
  });
  const commit = createCommit({
    config,
    store,
    heartbeat: { request() {} },
    log: silentLogger,
    newId,
    auth: { refuse: (_client, reason) => new HttpError(401, 'ERR_UNAUTHORIZED', reason) },
    runs: { enqueue() {}, depth: 0 },
  });
  const kinds: Record<string, (i: number) => Record<string, unknown>> = {
    wake: (i) => ({ text: `wake ${i}`, mode: 'next-heartbeat' }),
    agent: (i) => ({ message: `run ${i}` }),
    plain: (i) => ({ n: i }),
  };
  const changed: Record<string, { answers: number; traces: number }> = {};
  for (const [name, body] of Object.entries(kinds)) {
    let last: { answer: object; trace: object } | null = null;
    changed[name] = { answers: 0, traces: 0 };
    for (let i = 0; i < 60; i++) {
      const request: HookRequest = {
        id: newId(),
        name,
        headers: { 'content-type': 'application/json' },
        query: new URLSearchParams(),
        rawQuery: '',
        bytes: Buffer.from(JSON.stringify(body(i))),
        client: { address: '127.0.0.1', key: '127.0.0.1' },
        trace: { hook: name, auth: 'token' },
        judged: LIVE,
      };
      const answer = await commit(await plan(planner, request), request, null);
      if (answer.status >= 300) throw new Error(`${name}: ${answer.status} ${JSON.stringify(answer.body)}`);
      if (last !== null && i >= 10) {
        if (!sameMap(last.answer, answer)) changed[name]!.answers++;
        if (!sameMap(last.trace, answer.trace!)) changed[name]!.traces++;
      }
      last = { answer, trace: answer.trace! };
    }
  }
  await store.close();
  process.stdout.write(`${JSON.stringify(changed)}\n`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
