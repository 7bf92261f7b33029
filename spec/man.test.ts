import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { test } from 'node:test';
import { CHANNELS, THINKING_LEVELS, WAKE_MODES } from '../lib/model/actions.ts';
import type { Io } from '../lib/cli/io.ts';
import { main } from '../lib/cli/main.ts';
import { PRESETS, PROVIDER_APIS } from '../lib/config/file-schema.ts';
import { buildConfig } from '../lib/config/load.ts';
import { DEFAULT_HEARTBEAT_PROMPT, DEFAULT_PATHS, DEFAULTS } from '../lib/config/normalise.ts';
import { GMAIL_DEFAULTS } from '../lib/server/gmail-companion.ts';
import { MAX_FOR_EACH } from '../lib/hooks/mappings.ts';
import { parseJsonc } from '../lib/config/jsonc.ts';
import { ROOT } from './_cli.ts';
import { tempDir } from './_dir.ts';

const PAGE = 'man/hooks-ingress.1';
const CONFIG_PAGE = 'man/hooks-ingress.json.5';
const source = readFileSync(join(ROOT, PAGE), 'utf8');
const configSource = readFileSync(join(ROOT, CONFIG_PAGE), 'utf8');

// mandoc is the stricter checker; groff is what most Linux machines have. Each that is installed runs,
// so a machine with both catches what a machine with only groff (CI) would.
const LINTERS = [
  { tool: 'mandoc', args: ['-T', 'lint', '-W', 'warning'] },
  { tool: 'groff', args: ['-w', 'all', '-z', '-mdoc'] },
].filter((linter) => _onPath(linter.tool));

for (const page of [PAGE, CONFIG_PAGE]) {
  test(`${page} is clean under mandoc -T lint and groff -w all`, {
    skip: LINTERS.length === 0 ? 'neither mandoc nor groff is installed' : false,
  }, () => {
    for (const { tool, args } of LINTERS) {
      const run = spawnSync(tool, [...args, page], { cwd: ROOT, encoding: 'utf8' });
      assert.equal(run.error, undefined, `${tool} did not run`);
      assert.equal(`${run.stdout}${run.stderr}`.trim(), '', `${tool} ${args.join(' ')} ${page} reported problems`);
      assert.equal(run.status, 0, `${tool} exited with ${run.status}`);
    }
  });
}

test('package.json installs both man pages', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { man: string[] };
  assert.deepEqual(pkg.man, [PAGE, CONFIG_PAGE]);
});

test('every command and option in --help appears in hooks-ingress.1, subcommands included', async () => {
  const top = await _help(['--help']);
  const commands = _commands(top);
  for (const expected of ['serve', 'check', 'events', 'runs', 'reload', 'send', 'gmail', 'token']) {
    assert.ok(commands.includes(expected), `the top-level help lists ${expected}`);
  }

  const lines = source.split('\n');
  const synopsis = _section(lines, 'SYNOPSIS');
  const commandsSection = _section(lines, 'COMMANDS');
  const missing: string[] = [];
  for (const option of _options(top)) if (!_flags(lines).has(option)) missing.push(`hooks-ingress ${option}`);
  const check = async (command: string[]) => {
    const name = command.join(' ');
    if (!synopsis.some((line) => new RegExp(`\\bCm ${name}\\b`).test(line))) missing.push(`${name} in SYNOPSIS`);
    const help = await _help([...command, '--help']);
    // A command with commands of its own (gmail) is documented one subcommand at a time.
    const subcommands = _commands(help);
    if (subcommands.length > 0) {
      for (const sub of subcommands) await check([...command, sub]);
      return;
    }
    const entry = _entry(commandsSection, name);
    if (entry === null) {
      missing.push(`${name} in COMMANDS`);
      return;
    }
    const documented = _flags(entry);
    for (const option of _options(help)) if (!documented.has(option)) missing.push(`${name} ${option}`);
  };
  for (const command of commands) await check([command]);
  assert.deepEqual(missing, []);
});

test('hooks-ingress.json.5 documents every key of the config, mapping and channel schemas', () => {
  const documented = _configKeys();
  const segments = (prefix: string) =>
    new Set(documented.filter((k) => k.startsWith(prefix)).flatMap((k) => k.slice(prefix.length).split('.')));
  const missing: string[] = [];
  const schemas = [
    {
      file: 'lib/config/file-schema.ts',
      from: 'export const fileSchema = object(',
      to: 'export type FileConfig',
      prefix: '',
    },
    {
      file: 'lib/hooks/mappings.ts',
      from: 'export const mappingSchema = object(',
      to: 'export type RawMapping',
      prefix: 'hooks.mappings[].',
    },
    {
      file: 'lib/delivery/channels.ts',
      from: 'export const channelsSchema = object(',
      to: 'export type ChannelsConfig',
      prefix: 'channels.',
    },
  ];
  for (const { file, from, to, prefix } of schemas) {
    const names = _schemaKeys(readFileSync(join(ROOT, file), 'utf8'), from, to);
    assert.ok(names.size > 5, `found the keys of ${file}`);
    const known = segments(prefix);
    for (const name of names) if (!known.has(name)) missing.push(`${prefix}${name} (${file})`);
  }
  assert.deepEqual(missing, []);
});

test('hooks-ingress.json.5 documents no key the configuration refuses as unknown', async () => {
  const refused: string[] = [];
  for (const key of _configKeys()) {
    const result = await buildConfig(_probe(key), { file: null, env: {}, dir: tmpdir() });
    const unknown = result.ok ? [] : result.problems.filter((p) => /: unknown key/.test(p));
    if (unknown.length > 0) refused.push(`${key}: ${unknown.join('; ')}`);
  }
  assert.deepEqual(refused, []);
});

test('hooks-ingress.json.5 states the defaults and value sets of the code', () => {
  // DEFAULT_PATHS is typed over DEFAULTS, so every default is checked against the page.
  const where = DEFAULT_PATHS;
  assert.deepEqual(Object.keys(where).sort(), Object.keys(DEFAULTS).sort());
  const wrong: string[] = [];
  const expect = (key: string, value: string | number | boolean, inDefault = true) => {
    const text = inDefault ? _defaultOf(key) : _text(_configEntry(key));
    if (!new RegExp(`(^|[\\s"(])${_escape(String(value))}($|[\\s".,;)])`).test(text)) {
      wrong.push(`${key}: ${JSON.stringify(value)} not in "${text}"`);
    }
  };
  for (const [name, key] of Object.entries(where)) expect(key, DEFAULTS[name as keyof typeof DEFAULTS]);
  expect('hooks.gmail.includeBody', GMAIL_DEFAULTS.includeBody);
  expect('hooks.gmail.maxBytes', GMAIL_DEFAULTS.maxBytes);
  for (const key of ['label', 'topic', 'subscription'] as const) {
    expect(`hooks.gmail.${key}`, GMAIL_DEFAULTS[key], false);
  }
  expect('hooks.mappings[].forEach', MAX_FOR_EACH, false);
  for (const api of PROVIDER_APIS) expect('models.providers.<id>.api', api, false);
  for (const preset of PRESETS) expect('hooks.presets', preset, false);
  for (const mode of WAKE_MODES) expect('hooks.mappings[].wakeMode', mode, false);
  assert.deepEqual(wrong, []);

  assert.ok(
    _text(_configEntry('agents.defaults.heartbeat.prompt')).includes(DEFAULT_HEARTBEAT_PROMPT),
    'the default heartbeat prompt is quoted in full',
  );
  const page = _text(configSource.split('\n'));
  for (const value of [...CHANNELS, ...THINKING_LEVELS]) {
    assert.ok(page.includes(`"${value}"`), `the page names ${JSON.stringify(value)}`);
  }
});

test('the configuration files in EXAMPLES of hooks-ingress.json.5 validate, using documented keys only', async (t) => {
  const examples = _literals(_section(configSource.split('\n'), 'EXAMPLES')).filter((block) => block.startsWith('{'));
  assert.ok(examples.length >= 2, 'EXAMPLES holds a complete file and a file for the systemd service');
  const dir = await tempDir(t, 'hooks-ingress-man-');
  await mkdir(join(dir, 'hooks', 'transforms'), { recursive: true });
  await writeFile(join(dir, 'hooks', 'transforms', 'github.mjs'), 'export default () => null;\n');
  await mkdir(join(dir, 'credentials'));
  await writeFile(join(dir, 'credentials', 'hooks-token'), 'credential-token\n');
  const env = {
    HOOKS_TOKEN: 'hook-token',
    GATEWAY_TOKEN: 'gateway-token',
    ANTHROPIC_API_KEY: 'anthropic-key',
    OPENAI_API_KEY: 'openai-key',
    TELEGRAM_BOT_TOKEN: '123456:telegram-token',
    CREDENTIALS_DIRECTORY: join(dir, 'credentials'),
  };
  const documented = _configKeys().map((key) => new RegExp(`^${_escape(key).replace(/<id>/g, '[^.]+')}$`));
  for (const example of examples) {
    const parsed = parseJsonc(example);
    assert.ok(parsed.ok, `the example parses: ${parsed.ok ? '' : parsed.error}`);
    const result = await buildConfig(parsed.value, { file: join(dir, 'config.json'), env });
    assert.deepEqual(result.ok ? [] : result.problems, []);
    // An example should not teach a file that draws warnings either (a model without its provider).
    assert.deepEqual(result.ok && 'warnings' in result ? result.warnings : [], []);
    const undocumented = _leaves(parsed.value, '').filter((path) => !documented.some((re) => re.test(path)));
    assert.deepEqual(undocumented, []);
  }
});

async function _help(argv: string[]): Promise<string> {
  let out = '';
  const io: Io = { stdout: (text) => void (out += text), stderr: (text) => void (out += text), env: {} };
  assert.equal(await main(argv, io), 0, `hooks-ingress ${argv.join(' ')}`);
  return out;
}

/** The names a help text lists under `Commands:`. */
function _commands(help: string): string[] {
  return [...(/^Commands:\n((?: {2}\S.*\n)+)/m.exec(help)?.[1] ?? '').matchAll(/^ {2}([a-z][\w-]*)/gm)].map((m) =>
    m[1]!
  );
}

/** Every `--long` option named anywhere in a help text, and the `-x` short forms of its option lines. */
function _options(help: string): Set<string> {
  const options = new Set<string>();
  for (const match of help.matchAll(/(?<![\w-])(--[a-z][\w-]*)/g)) options.add(match[1]!);
  for (const match of help.matchAll(/^\s+(-[a-zA-Z]),\s+--/gm)) options.add(match[1]!);
  return options;
}

/** The source lines of one section, from its `.Sh` to the next. */
function _section(lines: string[], name: string): string[] {
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

/** The keys hooks-ingress.json.5 documents: each `.It Cm KEY` of its CONFIGURATION KEYS section. */
function _configKeys(): string[] {
  const keys = _section(configSource.split('\n'), 'CONFIGURATION KEYS').flatMap((line) =>
    /^\.It Cm ([\w.[\]<>]+)/.exec(line)?.[1] ?? []
  );
  assert.ok(keys.length > 50, 'the page documents the configuration keys');
  // The Templates list in the same section names expressions (`payload.`, `now`), not keys.
  return keys.filter((key) => /^(hooks|agents|models|channels|gateway|state|inspector|log|alerts)\.\w/.test(key));
}

/** The source lines of one key's item in hooks-ingress.json.5. */
function _configEntry(key: string): string[] {
  const entry = _entry(_section(configSource.split('\n'), 'CONFIGURATION KEYS'), key);
  assert.ok(entry !== null, `hooks-ingress.json.5 documents ${key}`);
  return entry;
}

/** The first sentence of a key's item, which states its default. */
function _defaultOf(key: string): string {
  const text = _text(_configEntry(key).slice(1));
  const match = /^Default: (.*?)\.(?:\s|$)/.exec(text);
  assert.ok(match !== null, `${key} states its default first`);
  return match[1]!;
}

/** Mdoc source as plain text, near enough to compare: macro names dropped, quoting macros as quotes. */
function _text(lines: string[]): string {
  return lines
    .filter((line) => !line.startsWith('.\\"') && !/^\.(Bd|Ed|Pp|Bl|El|Sm)\b/.test(line))
    .map((line) =>
      line.startsWith('.')
        ? line
          .slice(1)
          .replace(/\bQq (\S+)/g, '"$1"')
          .replace(/\bQo (\S+) Qc/g, '"$1"')
          .replace(/\b(?:It|Cm|Ar|Li|Ql|Pa|Ev|Fl|Pq|Po|Pc|Ns|No|Sx|Xr|Ic|Em|Dv|Sy)\b ?/g, '')
        : line
    )
    .join(' ')
    .replace(/\\\(dq/g, '"')
    .replace(/\\&/g, '')
    .replace(/\s+([.,;:)])(?=\s|$)/g, '$1')
    .replace(/\s+/g, ' ')
    .trim();
}

/** The `.Bd -literal` blocks of some mdoc lines, unescaped. */
function _literals(lines: string[]): string[] {
  const blocks: string[] = [];
  let block: string[] | null = null;
  for (const line of lines) {
    if (line.startsWith('.Bd -literal')) block = [];
    else if (line === '.Ed' && block !== null) {
      blocks.push(block.join('\n').replace(/\\e/g, '\\').replace(/\\&/g, ''));
      block = null;
    } else block?.push(line);
  }
  return blocks;
}

/** A raw config with `null` at a documented key (`[]` an array of one object, `<id>` a map key). */
function _probe(key: string): unknown {
  const segments = key.split('.');
  const build = (i: number): unknown => {
    if (i === segments.length) return null;
    const segment = segments[i]!;
    const inner = build(i + 1);
    if (segment.endsWith('[]')) return { [segment.slice(0, -2)]: [inner] };
    return { [segment === '<id>' ? 'probe/id' : segment]: inner };
  };
  return build(0);
}

/** The key paths of a parsed config's values, with `[]` for array elements; empty objects have none. */
function _leaves(value: unknown, at: string): string[] {
  if (Array.isArray(value)) {
    return value.some((v) => typeof v === 'object' && v !== null) ? value.flatMap((v) => _leaves(v, `${at}[]`)) : [at];
  }
  if (typeof value === 'object' && value !== null) {
    return Object.entries(value).flatMap(([k, v]) => _leaves(v, at === '' ? k : `${at}.${k}`));
  }
  return [at];
}

/**
 * The key names a schema literal in a source file declares, read from its text: `name:` followed by a
 * schema, and shorthand properties (`{ url, account: text }`). Names only, not their nesting.
 */
function _schemaKeys(text: string, from: string, to: string): Set<string> {
  const start = text.indexOf(from);
  const end = text.indexOf(to, start);
  assert.ok(start >= 0 && end > start, `found ${from}`);
  // Comments and string literals (rule texts such as "letters, digits, ...") hold no keys.
  const body = text
    .slice(start + from.length, end)
    .replace(/^\s*\/\/.*$/gm, '')
    .replace(/'(?:[^'\\]|\\.)*'/g, "''");
  const schema =
    /\b(\w+): (?=optional\(|object\(|array\(|string\(|number\(|boolean\b|literal\(|record\(|refine\(|[a-z]\w*Schema\b|hooksPath\b|duration\b|cidr\b|seconds\b|template\b|payloadPath\b|text\b|url\b)/g;
  const names = new Set([...body.matchAll(schema)].map((m) => m[1]!));
  for (const m of body.matchAll(/[{,]\s*([a-z]\w*)\s*(?=[,}])/g)) names.add(m[1]!);
  return names;
}

function _escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
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
