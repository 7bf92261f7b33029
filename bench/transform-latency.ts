// `node --import tsx bench/transform-latency.ts [DIR]...` (or `deno run -A bench/transform-latency.ts`):
// what a call of a trivial transform costs in the transform child pool alone, without HTTP or the
// journal: one call at a time, then 32 callers at once, after a warm-up that starts the pool and
// loads the module. Each DIR is a checkout whose lib/hooks/transforms/child-pool.ts is measured
// (default: this one), in turn, twice, so that two builds can be compared in the same minutes.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SEQUENTIAL = 3000;
const CONCURRENT = 6000;
const CALLERS = 32;

interface Runner {
  run(ref: { module: string }, input: unknown): Promise<unknown>;
  close(): Promise<void>;
}

const root = mkdtempSync(join(tmpdir(), 'transform-latency-'));
const module = join(root, 'trivial.js');
writeFileSync(module, "export default ({ payload }) => ({ kind: 'wake', text: String(payload.text) });\n");
const input = { payload: { text: 'bench' }, headers: { 'content-type': 'application/json' }, query: {}, path: 't' };
const here = fileURLToPath(new URL('..', import.meta.url));
const dirs = process.argv.slice(2).length > 0 ? process.argv.slice(2).map((d) => resolve(d)) : [here];

const at = (samples: number[], p: number) => [...samples].sort((a, b) => a - b)[Math.floor(samples.length * p)]!;
const ms = (value: number) => `${value.toFixed(3)} ms`;

async function measure(dir: string): Promise<void> {
  // Checkouts from before the rename keep the pool in runner.ts as createTransformRunner.
  const renamed = existsSync(join(dir, 'lib', 'hooks', 'transforms', 'child-pool.ts'));
  const url = pathToFileURL(join(dir, 'lib', 'hooks', 'transforms', renamed ? 'child-pool.ts' : 'runner.ts')).href;
  type Create = (o: { root: string }) => Runner;
  const loaded = (await import(url)) as { createTransformChildPool?: Create; createTransformRunner?: Create };
  const runner = (loaded.createTransformChildPool ?? loaded.createTransformRunner)!({ root });
  try {
    for (let i = 0; i < 200; i++) await runner.run({ module }, input);
    const one: number[] = [];
    for (let i = 0; i < SEQUENTIAL; i++) {
      const t = performance.now();
      await runner.run({ module }, input);
      one.push(performance.now() - t);
    }
    const many: number[] = [];
    let left = CONCURRENT;
    const started = performance.now();
    await Promise.all(Array.from({ length: CALLERS }, async () => {
      while (left-- > 0) {
        const t = performance.now();
        await runner.run({ module }, input);
        many.push(performance.now() - t);
      }
    }));
    const perSecond = Math.round(many.length / ((performance.now() - started) / 1000));
    console.log(
      `${dir}: one at a time p50 ${ms(at(one, 0.5))} p99 ${ms(at(one, 0.99))}; ${CALLERS} at once p50 ${
        ms(at(many, 0.5))
      } p99 ${ms(at(many, 0.99))}, ${perSecond} calls/s`,
    );
  } finally {
    await runner.close();
  }
}

try {
  for (let round = 0; round < 2; round++) for (const dir of dirs) await measure(dir);
} finally {
  rmSync(root, { recursive: true, force: true });
}
