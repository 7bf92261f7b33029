// Where a started server's resident memory goes: the same figures for node doing nothing, the bare
// node:http server, a chain of as many empty ES modules as serve loads, serve's modules loaded and
// not started, and serve started on a config with a hook token alone. Each process reports on itself
// (VmRSS split into anonymous and file-backed pages, V8's heap spaces) a while after its start,
// early (as the coldstart scenario measures) and late (after V8's memory reducer has run on an idle heap).
// Usage: npm run build && node --import tsx bench/memory-floor.ts [ROUNDS] [EARLY_S] [LATE_S]
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { emptyModules, staticGraph } from './coldstart.ts';

const ROUNDS = Number(process.argv[2] ?? 3);
const AT_S = [Number(process.argv[3] ?? 1.5), Number(process.argv[4] ?? 15)];
const ROOT = resolve(import.meta.dirname, '..');

// Preloaded into every process (--import): its own figures, written as JSON to $MEM_OUT at $MEM_AT ms.
const REPORT = `
import { readFileSync, writeFileSync } from 'node:fs';
import v8 from 'node:v8';
setTimeout(() => {
  const status = readFileSync('/proc/self/status', 'utf8');
  const kib = (key) => Number(new RegExp('^' + key + ':\\\\s+(\\\\d+)', 'm').exec(status)?.[1]) * 1024;
  const space = (name) => v8.getHeapSpaceStatistics().find((s) => s.space_name === name)?.physical_space_size ?? 0;
  const h = v8.getHeapStatistics();
  writeFileSync(process.env.MEM_OUT, JSON.stringify({ rss: kib('VmRSS'), anon: kib('RssAnon'), file: kib('RssFile'), heap: h.total_physical_size, newSpace: space('new_space'), oldSpace: space('old_space'), code: space('code_space'), malloced: h.malloced_memory }));
}, Number(process.env.MEM_AT));
`;

type Figures = Record<'rss' | 'anon' | 'file' | 'heap' | 'newSpace' | 'oldSpace' | 'code' | 'malloced', number>;

const tmp = mkdtempSync(join(tmpdir(), 'hooks-ingress-memory-'));
try {
  const report = join(tmp, 'report.mjs');
  writeFileSync(report, REPORT);
  const serve = join(ROOT, 'dist', 'cli', 'serve.js');
  const files = staticGraph(serve).size;
  const chain = emptyModules(join(tmp, 'empty'), files);
  const config = join(tmp, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({ hooks: { enabled: true, token: 'memory-floor-bench-token-0123456789abcdef' } }),
    { mode: 0o600 },
  );
  const hold = 'setTimeout(() => {}, 3_600_000)';
  const processes: [string, string[]][] = [
    ['node, idle', ['-e', hold]],
    ['bare node:http', [join(ROOT, 'bench', 'baseline.mjs')]],
    [`${files} empty ES modules`, ['--input-type=module', '-e', `await import(${JSON.stringify(chain)}); ${hold}`]],
    [`serve's ${files} modules, loaded`, [
      '--input-type=module',
      '-e',
      `await import(${JSON.stringify(serve)}); ${hold}`,
    ]],
    ['serve, started', [
      join(ROOT, 'bin', 'hooks-ingress'),
      'serve',
      '--config',
      config,
      '--state-dir',
      join(tmp, 'state'),
      '--host',
      '127.0.0.1',
      '--port',
      '0',
    ]],
  ];
  const seen = new Map<string, Figures[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const at of AT_S) {
      for (const [name, args] of processes) {
        const out = join(tmp, 'figures.json');
        rmSync(out, { force: true });
        const child = spawn(process.execPath, ['--import', report, ...args], {
          stdio: 'ignore',
          env: { ...process.env, MEM_OUT: out, MEM_AT: String(at * 1000), BENCH_PORT: '0' },
        });
        let figures: Figures | null = null;
        for (let waited = 0; figures === null && waited < at * 1000 + 30_000; waited += 50) {
          await new Promise((r) => setTimeout(r, 50));
          try {
            figures = JSON.parse(readFileSync(out, 'utf8')) as Figures;
          } catch {
            // not written yet
          }
        }
        child.kill('SIGTERM');
        if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
        if (figures === null) throw new Error(`${name}: no figures within ${at + 30} s`);
        const key = `${at}\t${name}`;
        seen.set(key, [...(seen.get(key) ?? []), figures]);
      }
    }
  }
  const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1]!;
  const mib = (bytes: number) => (bytes / 1048576).toFixed(1).padStart(6);
  for (const at of AT_S) {
    console.log(`\n${at} s after the start (median of ${ROUNDS}), MiB`);
    console.log(`${'process'.padEnd(30)}    RSS   anon   file | V8 heap    new    old   code | malloc`);
    for (const [name] of processes) {
      const list = seen.get(`${at}\t${name}`)!;
      const m = (key: keyof Figures) => mib(median(list.map((f) => f[key])));
      console.log(
        `${name.padEnd(30)} ${m('rss')} ${m('anon')} ${m('file')} | ${m('heap')} ${m('newSpace')} ${m('oldSpace')} ${
          m('code')
        } | ${m('malloced')}`,
      );
    }
  }
  console.log(
    "\n(RSS = anon + file: anon is the process's own memory, file the pages of the node binary and other mapped files it has touched, shared with every process that maps them)",
  );
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
