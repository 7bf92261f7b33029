/**
 * The map of lib/ in docs/development.md, made from each file's opening comment: one line per
 * file, its path and the first sentence of the comment it opens with, in one section per folder.
 *
 *   node --import tsx tools/docs-map.ts           (npm run docs:map) writes the map between the
 *                                                  `<!-- lib-map -->` and `<!-- /lib-map -->` lines
 *   node --import tsx tools/docs-map.ts --check   exits 1 when the map is stale or a file opens with no comment
 *
 * A folder of other files (the inspector's page) is one line: the first sentence of its script's
 * opening comment and its files.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import process, { argv, stderr } from 'node:process';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The checkout this tool belongs to. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));

const _BEGIN = '<!-- lib-map -->';
const _END = '<!-- /lib-map -->';
const _COLUMN = 30;
// The folders in the order of the layer map at the top of docs/development.md: shared leaves and
// vocabulary first, the commands last. A folder not named here comes after them.
const _ORDER = [
  '',
  'model',
  'untrusted',
  'guard',
  'hooks',
  'policy',
  'store',
  'delivery',
  'runtime',
  'edge',
  'control',
  'inspector',
  'config',
  'server',
  'cli',
];

/** The comment a file's text opens with (its markers taken off), or `null` when its first line is not a comment. */
export function openingComment(text: string): string | null {
  const lines = text.split('\n');
  const first = lines[0] ?? '';
  const block: string[] = [];
  if (first.startsWith('//')) {
    for (const line of lines) {
      if (!line.startsWith('//')) break;
      block.push(line.replace(/^\/\/ ?/, ''));
    }
  } else if (first.startsWith('/*')) {
    for (const line of lines) {
      block.push(line.replace(/^\s*\/\*\*? ?/, '').replace(/\s*\*\/\s*$/, '').replace(/^\s*\* ?/, ''));
      if (line.includes('*/')) break;
    }
  } else {
    return null;
  }
  return block.join('\n').trim();
}

/** The first sentence of a comment's first paragraph (a JSDoc `@module` tag left out), without its full stop. */
export function firstSentence(comment: string): string {
  const paragraph = comment.replace(/^@module\s+/, '').split(/\n\s*\n/)[0]!.replace(/\s*\n\s*/g, ' ').trim();
  const sentence = /^(.*?[^.]\.)(?=\s+[A-Z`(]|$)/.exec(paragraph);
  return (sentence === null ? paragraph : sentence[1]!).replace(/\.$/, '');
}

interface _Folder {
  /** Relative to the checkout, with a trailing slash. */
  path: string;
  files: string[];
  folders: _Folder[];
}

function _walk(root: string, dir: string): _Folder {
  const entries = readdirSync(join(root, dir), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
  return {
    path: `${dir}/`,
    files: entries.filter((e) => e.isFile()).map((e) => e.name),
    folders: entries.filter((e) => e.isDirectory()).map((e) => _walk(root, `${dir}/${e.name}`)),
  };
}

/** Every .ts file under `lib/` whose first line is not a comment, relative to `root`. */
export function filesWithoutComment(root: string = ROOT): string[] {
  return readdirSync(join(root, 'lib'), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .filter((file) => openingComment(readFileSync(join(root, file), 'utf8')) === null)
    .sort();
}

function _line(path: string, text: string): string {
  return `${path.padEnd(_COLUMN - 2)}  ${text}`.trimEnd();
}

// A folder's lines: its .ts files, then each sub-folder; a folder without .ts files is one line.
function _lines(root: string, folder: _Folder): string[] {
  const ts = folder.files.filter((name) => name.endsWith('.ts'));
  if (ts.length === 0 && folder.folders.length === 0) {
    const script = folder.files.find((name) => name.endsWith('.js'));
    const comment = script === undefined ? null : openingComment(readFileSync(join(root, folder.path, script), 'utf8'));
    const what = comment === null ? '' : `${firstSentence(comment)}: `;
    return [_line(folder.path, `${what}${folder.files.join(', ')}, served as they are (no build)`)];
  }
  const lines = ts.map((name) => {
    const comment = openingComment(readFileSync(join(root, folder.path, name), 'utf8'));
    return _line(`${folder.path}${name}`, comment === null ? '(no opening comment)' : firstSentence(comment));
  });
  for (const sub of folder.folders) lines.push(..._lines(root, sub));
  return lines;
}

/** The map of lib/ as docs/development.md shows it: one section per folder, headed by its name, between the markers. */
export function libMap(root: string = ROOT): string {
  const lib = _walk(root, 'lib');
  const rank = (name: string) => (_ORDER.includes(name) ? _ORDER.indexOf(name) : _ORDER.length);
  const folders = [...lib.folders].sort((a, b) => rank(_name(a)) - rank(_name(b)) || (a.path < b.path ? -1 : 1));
  const sections = [
    [
      'shared leaves',
      ...lib.files.filter((name) => name.endsWith('.ts')).map((name) =>
        _line(
          `lib/${name}`,
          firstSentence(openingComment(readFileSync(join(root, 'lib', name), 'utf8')) ?? '(no opening comment)'),
        )
      ),
    ],
    ...folders.map((folder) => [_name(folder), ..._lines(root, folder)]),
  ];
  return [_BEGIN, '```', sections.map((section) => section.join('\n')).join('\n\n'), '```', _END].join('\n');
}

function _name(folder: _Folder): string {
  return folder.path.slice('lib/'.length, -1);
}

/** docs/development.md with its map made again from the files. */
export function withMap(doc: string, root: string = ROOT): string {
  const begin = doc.indexOf(_BEGIN);
  const end = doc.indexOf(_END);
  if (begin === -1 || end < begin) {
    throw new Error(`Cannot find the map in docs/development.md: expected the lines ${_BEGIN} and ${_END}`);
  }
  return doc.slice(0, begin) + libMap(root) + doc.slice(end + _END.length);
}

if (argv[1] !== undefined && import.meta.url === pathToFileURL(argv[1]).href) {
  const path = join(ROOT, 'docs', 'development.md');
  const doc = readFileSync(path, 'utf8');
  const next = withMap(doc);
  const bare = filesWithoutComment();
  if (bare.length > 0) {
    stderr.write(`docs-map: these files do not open with a comment saying what they are:\n  ${bare.join('\n  ')}\n`);
  }
  if (argv.includes('--check')) {
    if (next !== doc) stderr.write('docs-map: the map of lib/ in docs/development.md is stale: run npm run docs:map\n');
    process.exitCode = next !== doc || bare.length > 0 ? 1 : 0;
  } else {
    if (next !== doc) writeFileSync(path, next);
    process.exitCode = bare.length > 0 ? 1 : 0;
  }
}
