// What an answer on the control socket can do to the terminal of the command that asked: nothing.
// Whatever listens in the server's place wrote it (a process of the server's user can), so every
// command that prints an answer (status, reload, outbox retry, requests replay, try, inspect)
// shows its texts escaped, in text and in --json, and an answer of another shape is one line, not a crash.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { main } from '../lib/cli/main.ts';
import { startImpostor } from './_control.ts';
import { captureIo } from './_io.ts';

// An OSC 8 link, a clear-screen, a C1 CSI, a right-to-left override and a line separator.
const X = '\x1b]8;;http://attacker.example/\x07\x1b[2J\u009b31m\u202e\u2028';
// Anything that acts on a terminal, but the newline that ends a line.
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

// Which of two shapes an answer has: left as it is, so that the texts of each shape are shown.
const _SHAPE = new Set(['kind', 'outcome', 'filter']);

// Every string in `value` with X added, but the ones that pick a shape.
function poisoned(value: unknown): unknown {
  if (typeof value === 'string') return `${value}${X}`;
  if (Array.isArray(value)) return value.map(poisoned);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, _SHAPE.has(k) ? v : poisoned(v)]));
  }
  return value;
}

const PREVIEW = {
  hook: 'github',
  status: 202,
  code: 'ERR_X',
  error: 'no',
  signature: { ok: false, scheme: 'github', why: 'mismatch', reason: 'r' },
  mapping: 'm1',
  transforms: [{ ok: true, value: { t: 'v' } }, { ok: false, error: 'e' }],
  actions: [
    {
      kind: 'agent',
      text: 'line one\nline two',
      unresolved: ['p'],
      run: { name: 'n', agentId: 'a', sessionKey: 's', model: 'm', channel: 'c', to: 't', deliver: true },
    },
    { kind: 'wake', text: 'w', unresolved: [], mode: 'now' },
  ],
  warnings: ['w'],
};
// Its keys are printed too.
const CHANGES = {
  hooks: { added: ['/hooks/a'], removed: [], changed: [] },
  [`mappings${X}`]: { [`added${X}`]: ['m'] },
};
const STATUS = {
  pid: 1,
  startedAt: '2026-01-01T00:00:00.000Z',
  uptimeSeconds: 5,
  url: 'http://127.0.0.1:8789',
  stateDir: '/state',
  backlog: { events: 1, bytes: 2 },
  outbox: { pending: 1, sent: 2, dead: 3 },
  journalBytes: 4,
  ledger: { entries: 5, bytes: 6 },
  lastReload: {
    outcome: 'applied',
    at: '2026-01-01T00:00:01.000Z',
    file: '/etc/hooks.json',
    changes: CHANGES,
    needsRestart: ['gateway.port'],
  },
  reloading: { running: true, pending: true, requests: 1 },
  hooks: [{ hook: 'ci', running: 1, queued: 2, concurrency: 1, maxQueued: null }],
  limits: [{
    hook: 'ci',
    limitedToday: 1,
    overBudgetToday: 1,
    budget: { day: '2026-01-01', used: 2, runsPerDay: 2, waiting: 1, timeZone: 'UTC' },
  }],
};

interface Case {
  name: string;
  args: string[];
  result: unknown;
}

const CASES: Case[] = [
  { name: 'status', args: ['status'], result: STATUS },
  { name: 'status --json', args: ['status', '--json'], result: STATUS },
  {
    name: 'status, a refused reload',
    args: ['status'],
    result: { ...STATUS, lastReload: { outcome: 'refused', at: 'a', file: null, problems: ['p1', 'p2'] } },
  },
  {
    name: 'reload, applied',
    args: ['reload'],
    result: { outcome: 'applied', at: 'a', file: '/etc/hooks.json', changes: CHANGES, needsRestart: ['gateway.port'] },
  },
  {
    name: 'reload, refused',
    args: ['reload'],
    result: { outcome: 'refused', at: 'a', file: '/etc/hooks.json', problems: ['p1'] },
  },
  { name: 'outbox retry', args: ['outbox', 'retry', 'id1'], result: { retried: [], notRetryable: ['id1'] } },
  {
    name: 'requests replay',
    args: ['requests', 'replay', 'e1'],
    result: {
      results: [
        { id: 'e1', ok: false, code: 'ERR_NOT_REPLAYABLE', error: 'no body' },
        {
          id: 'e2',
          ok: true,
          outcome: {
            replayOf: 'e2',
            entry: 'e3',
            requestId: 'r',
            status: 500,
            code: 'ERR_X',
            error: 'x',
            became: { events: ['ev'], runs: ['ru'] },
          },
        },
        { id: 'e4', ok: true, preview: PREVIEW },
      ],
    },
  },
  {
    name: 'requests replay --json',
    args: ['requests', 'replay', 'e1', '--json'],
    result: { results: [{ id: 'e1', ok: false, code: 'ERR_NOT_REPLAYABLE', error: 'no body' }] },
  },
  { name: 'try', args: ['try', 'github', '--body', 'BODY'], result: PREVIEW },
  { name: 'try --json', args: ['try', 'github', '--body', 'BODY', '--json'], result: PREVIEW },
  {
    name: 'try, a config file that differs',
    args: ['try', 'github', '--body', 'BODY'],
    result: {
      ...PREVIEW,
      configFile: { file: '/etc/hooks.json', differs: true, changes: CHANGES, needsRestart: ['inspector.port'] },
    },
  },
  {
    name: 'try, a config file with problems',
    args: ['try', 'github', '--body', 'BODY'],
    result: { configRefused: { file: '/etc/hooks.json', problems: ['p1'] } },
  },
  {
    name: 'reload --dry-run',
    args: ['reload', '--dry-run'],
    result: {
      outcome: 'would-apply',
      at: 'a',
      file: '/etc/hooks.json',
      changes: CHANGES,
      needsRestart: ['gateway.port'],
    },
  },
  {
    name: 'inspect',
    args: ['inspect'],
    result: { url: 'http://127.0.0.1:9/inspector/login?code=abcdefabcdefabcdef', expiresAt: 'x' },
  },
];

async function run(
  t: TestContext,
  args: string[],
  answer: unknown,
): Promise<{ code: number; stdout: string; stderr: string; heard: number }> {
  const impostor = await startImpostor(t, () => answer);
  const body = join(impostor.dir, 'body.json');
  await writeFile(body, '{}');
  const { io, out } = captureIo({});
  const code = await main([...args.map((a) => (a === 'BODY' ? body : a)), '--state-dir', impostor.dir], io);
  return { code, ...out, heard: impostor.requests.length };
}

function assertSafe(got: { stdout: string; stderr: string }, what: string): void {
  for (const stream of ['stdout', 'stderr'] as const) {
    const found = UNSAFE.exec(got[stream]);
    assert.equal(
      found,
      null,
      `${what}: ${stream} holds U+${found?.[0].charCodeAt(0).toString(16).padStart(4, '0')}: ${
        JSON.stringify(got[stream])
      }`,
    );
  }
}

for (const c of CASES) {
  test(`${c.name} shows every text of the answer with its control characters escaped`, async (t) => {
    const got = await run(t, c.args, { ok: true, result: poisoned(c.result) });
    assert.equal(got.heard, 1);
    assertSafe(got, c.name);
    assert.ok(got.stdout.length + got.stderr.length > 0);
    if (c.name !== 'inspect') {
      assert.match(
        got.stdout + got.stderr,
        /\\(?:x1b|u001b)\]8;;http:\/\/attacker\.example\/\\(?:x07|u0007)/,
        `${c.name}: shown escaped: ${got.stdout}${got.stderr}`,
      );
    }
  });
}

for (
  const command of [
    ['status'],
    ['status', '--json'],
    ['reload'],
    ['outbox', 'retry', 'id1'],
    ['requests', 'replay', 'e1'],
    ['try', 'github', '--body', 'BODY'],
    ['inspect'],
  ]
) {
  test(`${command.join(' ')} shows an error answer's code and message escaped, and exits 1`, async (t) => {
    const got = await run(t, command, { ok: false, error: { code: `ERR_X${X}`, message: `refused${X}` } });
    assert.equal(got.code, 1);
    assertSafe(got, command.join(' '));
    assert.match(got.stderr, /refused\\x1b\]8;;http/);
  });

  test(`${command.join(' ')} says in one line that an answer of another shape is not one it reads`, async (t) => {
    for (const result of [42, null, { results: 'x' }, []]) {
      const got = await run(t, command, { ok: true, result });
      assert.equal(got.code, 1, `${JSON.stringify(result)}: ${got.stdout}${got.stderr}`);
      assertSafe(got, command.join(' '));
      assert.match(
        got.stderr,
        /^hooks-ingress [a-z ]+: the server's answer is not (?:one this command reads|a login link to an inspector on a loopback address; nothing opened)\n$/m,
        JSON.stringify(result),
      );
    }
  });
}
