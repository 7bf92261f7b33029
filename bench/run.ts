// `npm run bench`: what the hooks-ingress edge costs next to a bare node:http JSON echo (and to
// adnanh/webhook's rejection path when `webhook` is on PATH) under the same wrk load, in CPU time
// of the server process per request as well as in req/s; plus a 64 MiB upload that must be refused
// with 413 without the server's memory growing. `--compare DIR` runs other builds (other
// checkouts) beside this one, so a change is measured before and after in the same run.
// A script, not a test: it prints figures; `--check` turns the reference values (docs/benchmark.md) into an exit code.
//
// This file is the plan; each step lives in a file of its own: the options (_options.ts), the tools
// and the build (_tools.ts), the servers and cases (_setup.ts, _servers.ts), wrk (_wrk.ts), the
// medians (_stats.ts), the report (_report.ts), the upload (_upload.ts), the coldstart scenario
// (coldstart.ts), and the child processes, stopped on every way out (_children.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { stopChildren } from './_children.ts';
import { type Options, parseOptions, ROOT } from './_options.ts';
import { filesystem, fsyncProbe } from './_proc.ts';
import { header, type Machine, report, roundLine, rows, summary, uploadReport, type UploadRow } from './_report.ts';
import { say, sayOnStderr } from './_say.ts';
import { probe } from './_servers.ts';
import { probeAll, type Setup, setUp } from './_setup.ts';
import { ensureBuild, ensureTool, which } from './_tools.ts';
import { upload } from './_upload.ts';
import { measure, wrkRun } from './_wrk.ts';
import { type ColdFigures, coldstart } from './coldstart.ts';

async function main(argv: string[]): Promise<number> {
  let o: Options | null;
  try {
    o = parseOptions(argv);
  } catch (error) {
    process.stderr.write(`bench: ${(error as Error).message}\nRun "npm run bench -- --help" for the options.\n`);
    return 2;
  }
  if (o === null) return 0;
  if (o.json) sayOnStderr();

  const wrk = o.scenarios.size === 0 ? '' : ensureTool('wrk', 'wrk', true);
  if (wrk === null) return 1;
  const webhook = o.scenarios.has('webhook') || o.coldstart ? ensureTool('webhook', 'webhook', false) : null;
  if (!ensureBuild(ROOT)) return 1;
  let cold: ColdFigures | null = null;
  if (o.coldstart) {
    cold = await _coldstart(o, webhook);
    if (cold === null) return 1;
    if (o.scenarios.size === 0) {
      if (o.json) {
        process.stdout.write(
          `${JSON.stringify({ date: new Date().toISOString(), node: process.version, coldstart: cold }, null, 2)}\n`,
        );
      }
      return 0;
    }
    say();
  }

  let setup: Setup | null = null;
  let exitCode = 0;
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`bench: ${signal}: stopping\n`);
    void stopChildren().then(() => {
      if (setup !== null && !o.keep) rmSync(setup.tmp, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    setup = await setUp(o, webhook);
    const machine: Machine = { fs: filesystem(setup.tmp), fsync: fsyncProbe(setup.tmp), cpu: cpus() };
    header(o, machine, setup.targets);
    await probeAll(setup);
    await _rounds(wrk, setup, o, () => stopping);
    const table = rows(setup.cases);
    const { invalid: badRuns, outside } = report(table, o);
    let invalid = badRuns;

    const uploads: UploadRow[] = [];
    if (o.upload) {
      invalid = !(await _uploads(setup, uploads)) || invalid;
      if (!uploadReport(uploads)) outside.push('upload: not answered 413, or RSS grew too much');
    }
    for (const line of outside) say(`outside the reference value: ${line}`);

    if (o.json) {
      process.stdout.write(
        `${
          JSON.stringify(
            summary(o, machine, { rows: table, uploads, coldstart: cold, outside, valid: !invalid }),
            null,
            2,
          )
        }\n`,
      );
    }
    if (invalid) {
      process.stderr.write('bench: some runs were INVALID (see above): their figures do not measure what they claim\n');
      exitCode = 1;
    } else if (outside.length > 0 && o.check) exitCode = 1;
  } catch (error) {
    // After SIGINT/SIGTERM the children were stopped on purpose; what that broke is no news.
    if (!stopping) process.stderr.write(`bench: ${(error as Error).message}\n`);
    exitCode = 1;
  } finally {
    await stopChildren();
    setup?.closeModel();
    if (setup !== null && !o.keep) rmSync(setup.tmp, { recursive: true, force: true });
    else if (setup !== null) say(`kept ${setup.tmp}`);
  }
  return exitCode;
}

// The coldstart scenario, in a temporary directory of its own; null when it failed (said on stderr).
async function _coldstart(o: Options, webhook: string | null): Promise<ColdFigures | null> {
  const tmp = mkdtempSync(join(o.tmp, 'hooks-ingress-coldstart-'));
  try {
    return await coldstart({
      tmp,
      builds: o.builds,
      root: ROOT,
      starts: o.starts,
      webhook,
      socketActivate: which('systemd-socket-activate'),
      say,
    });
  } catch (error) {
    process.stderr.write(`bench: coldstart: ${(error as Error).message}\n`);
    return null;
  } finally {
    if (!o.keep) rmSync(tmp, { recursive: true, force: true });
    else say(`kept ${tmp}`);
  }
}

// A warm-up run of every case, then the measured rounds.
async function _rounds(wrk: string, setup: Setup, o: Options, stopping: () => boolean): Promise<void> {
  say('warming up (1 s each)...');
  for (const c of setup.cases) await wrkRun(wrk, `${c.target.url}${c.path}`, c.lua, 1, o);
  for (let round = 1; round <= o.rounds && !stopping(); round++) {
    // Interleaved, so a slow patch of the machine hits every case alike; builds alternate which goes first.
    const order = round % 2 === 1 ? setup.cases : [...setup.cases].reverse();
    for (const c of order) {
      if (stopping()) break;
      const run = await measure(wrk, c, o);
      c.runs.push(run);
      roundLine(round, c, run);
    }
  }
}

// The 64 MiB upload to each upload server, both ways; false when a server no longer answers afterwards.
async function _uploads(setup: Setup, uploads: UploadRow[]): Promise<boolean> {
  let healthy = true;
  say();
  say('uploading 64 MiB to /hooks/wake with a valid token (streamed; the client never holds it)...');
  for (const t of setup.targets.filter((x) => x.serves === 'upload')) {
    for (const mode of ['chunked', 'content-length'] as const) {
      uploads.push({ server: t.name, result: await upload(t.url, setup.token, t.pid, mode, t.tap!) });
    }
    const health = await probe(`${t.url}/healthz`, {}, '', 'GET').catch(() => ({ status: 0 }));
    if (health.status !== 200) {
      healthy = false;
      say(`${t.name} did not answer /healthz after the uploads (status ${health.status})`);
    }
  }
  return healthy;
}

process.exitCode = await main(process.argv.slice(2));
