import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { test } from 'node:test';
import { main, type Io } from '../lib/cli.ts';
import { ROOT } from './_cli.ts';

const PAGE = 'man/hooks-ingress.1';
const source = readFileSync(join(ROOT, PAGE), 'utf8');

// mandoc is the stricter checker; groff is what most Linux machines have. Each that is installed runs,
// so a machine with both catches what a machine with only groff (CI) would.
const LINTERS = [
  { tool: 'mandoc', args: ['-T', 'lint', '-W', 'warning', PAGE] },
  { tool: 'groff', args: ['-w', 'all', '-z', '-mdoc', PAGE] },
].filter((linter) => _onPath(linter.tool));

test(
  'man page is clean under mandoc -T lint',
  { skip: LINTERS.length === 0 ? 'neither mandoc nor groff is installed' : false },
  () => {
    for (const { tool, args } of LINTERS) {
      const run = spawnSync(tool, args, { cwd: ROOT, encoding: 'utf8' });
      assert.equal(run.error, undefined, `${tool} did not run`);
      assert.equal(`${run.stdout}${run.stderr}`.trim(), '', `${tool} ${args.join(' ')} reported problems`);
      assert.equal(run.status, 0, `${tool} exited with ${run.status}`);
    }
  },
);

test('every option in --help appears in the man page', async () => {
  const top = await _help(['--help']);
  const commands = [...(/^Commands:\n((?: {2}\S.*\n)+)/m.exec(top)?.[1] ?? '').matchAll(/^ {2}([a-z][\w-]*)/gm)].map((m) => m[1]!);
  assert.ok(commands.includes('serve'), 'the top-level help lists its commands');

  const synopsis = _section('SYNOPSIS');
  const commandsSection = _section('COMMANDS');
  const missing: string[] = [];
  for (const option of _options(top)) if (!_flags(source.split('\n')).has(option)) missing.push(`hooks-ingress ${option}`);
  for (const command of commands) {
    if (!synopsis.some((line) => new RegExp(`\\bCm ${command}\\b`).test(line))) missing.push(`${command} in SYNOPSIS`);
    const entry = _entry(commandsSection, command);
    if (entry === null) {
      missing.push(`${command} in COMMANDS`);
      continue;
    }
    const documented = _flags(entry);
    for (const option of _options(await _help([command, '--help']))) {
      if (!documented.has(option)) missing.push(`${command} ${option}`);
    }
  }
  assert.deepEqual(missing, []);
});

async function _help(argv: string[]): Promise<string> {
  let out = '';
  const io: Io = { stdout: (text) => void (out += text), stderr: (text) => void (out += text), env: {} };
  assert.equal(await main(argv, io), 0, `hooks-ingress ${argv.join(' ')}`);
  return out;
}

/** Every `--long` option named anywhere in a help text, and the `-x` short forms of its option lines. */
function _options(help: string): Set<string> {
  const options = new Set<string>();
  for (const match of help.matchAll(/(?<![\w-])(--[a-z][\w-]*)/g)) options.add(match[1]!);
  for (const match of help.matchAll(/^\s+(-[a-zA-Z]),\s+--/gm)) options.add(match[1]!);
  return options;
}

/** The source lines of one section, from its `.Sh` to the next. */
function _section(name: string): string[] {
  const lines = source.split('\n');
  const start = lines.indexOf(`.Sh ${name}`);
  assert.ok(start >= 0, `the page has a ${name} section`);
  const end = lines.findIndex((line, i) => i > start && line.startsWith('.Sh '));
  return lines.slice(start, end < 0 ? undefined : end);
}

/** A command's `.It Cm NAME` item with its nested option list, or `null` when there is none. */
function _entry(lines: string[], command: string): string[] | null {
  const start = lines.findIndex((line) => line === `.It Cm ${command}` || line.startsWith(`.It Cm ${command} `));
  if (start < 0) return null;
  let depth = 0;
  let end = start + 1;
  for (; end < lines.length; end++) {
    const line = lines[end]!;
    if (line.startsWith('.Bl ')) depth++;
    else if (line.startsWith('.El')) {
      if (depth === 0) break;
      depth--;
    } else if (depth === 0 && /^\.(It|Sh)\b/.test(line)) break;
  }
  return lines.slice(start, end);
}

/**
 * The options an mdoc text marks up with `Fl`, as they render: every word after `Fl` up to the next
 * macro is one flag, so `.It Fl c , Fl -config Ar path` gives `-c` and `--config`.
 */
function _flags(lines: string[]): Set<string> {
  const flags = new Set<string>();
  for (const line of lines) {
    if (!line.startsWith('.') || line.startsWith('.\\"')) continue;
    let inFl = false;
    for (const word of line.slice(1).trim().split(/\s+/)) {
      if (word === 'Fl') inFl = true;
      else if (/^[A-Z][a-z]{1,2}$/.test(word)) inFl = false;
      else if (inFl && /^-?\w[\w-]*$/.test(word)) flags.add(`-${word}`);
    }
  }
  return flags;
}

function _onPath(tool: string): boolean {
  return (process.env['PATH'] ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, tool), constants.X_OK);
      return dir !== '';
    } catch {
      return false;
    }
  });
}
