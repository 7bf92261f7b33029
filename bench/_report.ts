// What the bench prints: the reference values (docs/benchmark.md) and the lines measured against
// them, the header, one line per measured round, the table of medians with its ratios to the echo,
// the table of builds compared, the upload's table, and the JSON summary of `--json`.
import type { CpuInfo } from 'node:os';
import type { ColdFigures } from './coldstart.ts';
import type { Options, ScenarioName } from './_options.ts';
import type { fsyncProbe } from './_proc.ts';
import { say } from './_say.ts';
import type { Case, Target } from './_setup.ts';
import { type Figures, figures } from './_stats.ts';
import { UPLOAD_BYTES, type UploadResult } from './_upload.ts';
import type { Run } from './_wrk.ts';

/** The request ledger's cost: CPU per request with it on at most this much over the same scenario with it off. */
const LEDGER_TARGETS: Readonly<Record<'401' | 'wake', number>> = { '401': 0.1, wake: 0.15 };

/** The reference values: CPU per request at most this many times the echo's. */
const CPU_TARGETS: Partial<Record<ScenarioName, number>> = { '401': 1.6, wake: 2.5, template: 3.2, transform: 5 };

/** The upload's reference value: the server's RSS grows by less than this. */
const UPLOAD_RSS_TARGET_MIB = 16;

const _n = (x: number) => Math.round(x).toLocaleString('en-US');
const _ms = (x: number) => (Number.isNaN(x) ? 'n/a' : x < 1 ? `${(x * 1000).toFixed(0)}us` : `${x.toFixed(2)}ms`);
const _pad = (cells: string[], widths: number[]) =>
  cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');

/** The machine the figures were taken on. */
export interface Machine {
  cpu: CpuInfo[];
  /** The filesystem of the state directories. */
  fs: string;
  fsync: ReturnType<typeof fsyncProbe>;
}

/** What runs, on what, and which server is where. */
export function header(o: Options, machine: Machine, targets: Target[]): void {
  const { cpu, fs, fsync } = machine;
  say(
    `hooks-ingress benchmark: wrk -t${o.threads} -c${o.connections}, ${o.rounds} interleaved round(s) of ${o.duration} s per case, loopback 127.0.0.1`,
  );
  say(
    `node ${process.version}, ${cpu.length} x ${
      cpu[0]?.model ?? 'unknown CPU'
    }, state directories on ${fs}, fdatasync p50 ${_ms(fsync.p50Ms)} p99 ${_ms(fsync.p99Ms)}`,
  );
  say(
    'every hooks-ingress logs one JSON line per request to stderr (a pipe read by this script, as journald would); the echo logs nothing',
  );
  for (const t of targets) say(`  ${t.name.padEnd(13)} ${(t.serves ?? '').padEnd(9)} ${t.url} (pid ${t.pid})`);
}

/** One measured round of one case, as it comes. */
export function roundLine(round: number, c: Case, run: Run): void {
  const cpu = run.cpuUs === null ? 'n/a' : `${run.cpuUs.toFixed(1)} us/req`;
  say(
    `  round ${round} ${c.scenario.padEnd(9)} ${c.target.name.padEnd(13)} ${_n(run.rps).padStart(8)} req/s  p50 ${
      _ms(run.p50Ms)
    }  p99 ${_ms(run.p99Ms)}  cpu ${cpu}` +
      (run.problems.length > 0 ? `  INVALID: ${run.problems.join('; ')}` : ''),
  );
}

/** A case's medians, beside the echo's and the reference value. */
export interface Row {
  scenario: ScenarioName;
  server: string;
  figures: Figures;
  rpsRatio: number;
  cpuRatio: number;
  cpuTarget: number | null;
  current: boolean;
  runs: Run[];
}

/** One row per case, in the order of the cases; the echo's case must be among them. */
export function rows(cases: Case[]): Row[] {
  const echo = figures(cases.find((c) => c.scenario === 'echo')!.runs);
  return cases.map((c) => {
    const f = figures(c.runs);
    const target = c.target.current ? (CPU_TARGETS[c.scenario] ?? null) : null;
    return {
      scenario: c.scenario,
      server: c.target.name,
      figures: f,
      rpsRatio: f.rps / echo.rps,
      cpuRatio: f.cpuUs / echo.cpuUs,
      cpuTarget: target,
      current: c.target.current,
      runs: c.runs,
    };
  });
}

/** The table of medians and the lines that weigh them against the reference values. */
export function report(rows: Row[], o: Options): { invalid: boolean; outside: string[] } {
  const widths = [10, 13, 9, 9, 9, 11, 8, 8, 9];
  say();
  say(_pad(['scenario', 'server', 'req/s', 'p50', 'p99', 'cpu us/req', 'rps/echo', 'cpu/echo', 'cpu ref'], widths));
  const outside: string[] = [];
  let invalid = false;
  for (const r of rows) {
    const f = r.figures;
    invalid ||= !f.valid;
    const cpu = Number.isNaN(f.cpuUs) ? 'n/a' : f.cpuUs.toFixed(1);
    const reference = r.cpuTarget === null ? '' : `<=${r.cpuTarget.toFixed(1)}x`;
    if (r.cpuTarget !== null && !(r.cpuRatio <= r.cpuTarget)) {
      outside.push(`${r.scenario}: cpu ${r.cpuRatio.toFixed(2)}x the echo (reference <= ${r.cpuTarget}x)`);
    }
    say(
      _pad([
        r.scenario,
        r.server,
        _n(f.rps),
        _ms(f.p50Ms),
        _ms(f.p99Ms),
        cpu,
        `${r.rpsRatio.toFixed(2)}x`,
        Number.isNaN(r.cpuRatio) ? 'n/a' : `${r.cpuRatio.toFixed(2)}x`,
        reference + (f.valid ? '' : ' INVALID'),
      ], widths),
    );
  }
  say(`(median of ${o.rounds} interleaved round(s) of ${o.duration} s each; every round is listed above)`);
  const peer = rows.find((r) => r.scenario === 'webhook');
  const unauthorized = rows.find((r) => r.scenario === '401' && r.current);
  if (peer !== undefined && unauthorized !== undefined) {
    const ratio = unauthorized.figures.rps / peer.figures.rps;
    say(`401 throughput / adnanh/webhook's rejection: ${ratio.toFixed(2)}x (reference >= 0.8x)`);
    if (!(ratio >= 0.8)) outside.push(`401: ${ratio.toFixed(2)}x adnanh/webhook's rejection rate (reference >= 0.8x)`);
  }
  const floor = rows.find((r) => r.scenario === 'floor');
  if (floor !== undefined && unauthorized !== undefined) {
    say(
      `401 floor (bench/floor.mjs): cpu ${floor.cpuRatio.toFixed(2)}x the echo${
        peer === undefined ? '' : `, ${(floor.figures.rps / peer.figures.rps).toFixed(2)}x adnanh/webhook's rate`
      }; hooks-ingress's 401: ${(unauthorized.figures.cpuUs / floor.figures.cpuUs).toFixed(2)}x the floor's cpu`,
    );
  }
  const wake = rows.find((r) => r.scenario === 'wake' && r.current);
  if (wake !== undefined) {
    say(`durable wake throughput / echo: ${wake.rpsRatio.toFixed(2)}x (reference >= 0.5x)`);
    if (!(wake.rpsRatio >= 0.5)) {
      outside.push(`wake: ${wake.rpsRatio.toFixed(2)}x the echo's throughput (reference >= 0.5x)`);
    }
  }
  for (const scenario of ['401', 'wake'] as const) {
    for (const build of new Set(rows.filter((r) => r.scenario === scenario).map((r) => r.server))) {
      const on = rows.find((r) => r.scenario === scenario && r.server === build);
      const off = rows.find((r) => r.scenario === `${scenario}-off` && r.server === build);
      if (on === undefined || off === undefined) continue;
      const cost = on.figures.cpuUs / off.figures.cpuUs - 1;
      const limit = LEDGER_TARGETS[scenario];
      say(
        `request ledger on ${scenario} (${build}): ${on.figures.cpuUs.toFixed(1)} vs ${
          off.figures.cpuUs.toFixed(1)
        } us/req off, ${cost >= 0 ? '+' : ''}${(cost * 100).toFixed(1)}% cpu (reference <= ${limit * 100}%)`,
      );
      if (on.current && !(cost <= limit)) {
        outside.push(
          `${scenario}: the request ledger costs ${(cost * 100).toFixed(1)}% cpu (reference <= ${limit * 100}%)`,
        );
      }
    }
  }
  if (o.compare.length > 0) _compareTable(rows);
  return { invalid, outside };
}

// Each build against the one before it: CPU per request, then req/s, with the change in percent.
function _compareTable(rows: Row[]): void {
  const builds = [
    ...new Set(
      rows.filter((r) => r.server !== 'echo' && r.server !== 'webhook' && r.server !== 'floor').map((r) => r.server),
    ),
  ];
  const pct = (a: number, b: number) => `${b >= a ? '+' : ''}${(((b - a) / a) * 100).toFixed(0)}%`;
  for (
    const [title, figure, format] of [
      ['cpu us/req', (f: Figures) => f.cpuUs, (x: number) => x.toFixed(1)],
      ['req/s', (f: Figures) => f.rps, _n],
    ] as const
  ) {
    say();
    const widths = [10, ...builds.map((b) => Math.max(b.length, 16))];
    say(_pad([title, ...builds], widths));
    for (const scenario of new Set(rows.map((r) => r.scenario))) {
      const cells = builds.map((build, i) => {
        const row = rows.find((r) => r.scenario === scenario && r.server === build);
        const prev = i === 0 ? undefined : rows.find((r) => r.scenario === scenario && r.server === builds[i - 1]);
        if (row === undefined) return '';
        const value = figure(row.figures);
        return prev === undefined ? format(value) : `${format(value)} (${pct(figure(prev.figures), value)})`;
      });
      if (cells.some((c) => c !== '')) say(_pad([scenario, ...cells], widths));
    }
  }
}

/** The upload table; true when every upload met the reference value. */
export function uploadReport(uploads: UploadRow[]): boolean {
  say();
  const uw = [14, 26, 7, 10, 12, 7, 11, 11];
  say(
    _pad(['server', '64 MiB upload', 'status', 'to answer', 'sent before', 'closed', 'RSS before', 'RSS growth'], uw),
  );
  let ok = true;
  for (const { server, result: u } of uploads) {
    ok &&= u.status === 413 && (u.rssGrowthMiB ?? 0) < UPLOAD_RSS_TARGET_MIB;
    say(
      _pad(
        [
          server,
          u.mode === 'chunked' ? 'chunked, no Content-Length' : 'Content-Length: 64 MiB',
          String(u.status ?? u.error ?? '-'),
          u.msToAnswer === null ? '-' : _ms(u.msToAnswer),
          `${(u.bytesSentBeforeAnswer / 1024 / 1024).toFixed(2)} MiB`,
          u.connectionClosed ? 'yes' : 'no',
          u.rssBeforeMiB === null ? 'n/a' : `${u.rssBeforeMiB.toFixed(1)} MiB`,
          u.rssGrowthMiB === null ? 'n/a' : `+${u.rssGrowthMiB.toFixed(2)} MiB`,
        ],
        uw,
      ),
    );
  }
  say(`reference: 413, RSS growth < ${UPLOAD_RSS_TARGET_MIB} MiB; peak RSS: ${uploads[0]?.result.peakSource ?? 'n/a'}`);
  say(
    '"to answer" is from the first byte sent to the status line; "sent before" counts the bytes written by then (most sit in socket buffers)',
  );
  return ok;
}

/** One upload to one server. */
export interface UploadRow {
  server: string;
  result: UploadResult;
}

/** Everything measured, as the JSON `--json` prints. */
export function summary(
  o: Options,
  m: Machine,
  r: { rows: Row[]; uploads: UploadRow[]; coldstart: ColdFigures | null; outside: string[]; valid: boolean },
): object {
  return {
    date: new Date().toISOString(),
    node: process.version,
    cpus: { count: m.cpu.length, model: m.cpu[0]?.model ?? null },
    wrk: { threads: o.threads, connections: o.connections, durationSeconds: o.duration, rounds: o.rounds },
    stateFilesystem: m.fs,
    fdatasyncMs: { p50: m.fsync.p50Ms, p99: m.fsync.p99Ms, samples: m.fsync.samples },
    rows: r.rows,
    upload: { bytes: UPLOAD_BYTES, targetRssGrowthMiB: UPLOAD_RSS_TARGET_MIB, runs: r.uploads },
    coldstart: r.coldstart,
    outsideGoals: r.outside,
    valid: r.valid,
  };
}
