// The documentation's relative links: every one in README.md and docs/*.md must name a file that
// exists and, when it has a #fragment into a Markdown file, a heading that file has.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './_cli.ts';

const DOCS = join(ROOT, 'docs');
// The topic files other documents and issues point at by name.
const TOPICS = [
  'configuration',
  'http-api',
  'mapped-hooks',
  'signed-senders',
  'runtime',
  'channels',
  'journal',
  'operations',
  'security',
  'benchmark',
  'development',
  'openclaw',
  'walkthrough',
];

function markdownFiles(): string[] {
  const docs = readdirSync(DOCS).filter((name) => name.endsWith('.md')).map((name) => join(DOCS, name));
  return [join(ROOT, 'README.md'), ...docs];
}

/** The text outside fenced code blocks and inline code spans, where a `[x](y)` is a link. */
function proseOf(markdown: string): string {
  const kept: string[] = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      continue;
    }
    if (!fenced) kept.push(line.replace(/`[^`]*`/g, ''));
  }
  return kept.join('\n');
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading === null) continue;
    const base = heading[1]!.toLowerCase().replace(/[^\p{L}\p{N}\- _]/gu, '').replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** The relative link targets of a Markdown text (absolute URLs and mail addresses left out). */
function relativeLinks(markdown: string): string[] {
  const links: string[] = [];
  for (const match of proseOf(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = match[1]!;
    if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) links.push(target);
  }
  return links;
}

test('the documentation has the topic files, and README.md stays short', () => {
  for (const topic of TOPICS) assert.ok(existsSync(join(DOCS, `${topic}.md`)), `docs/${topic}.md is missing`);
  const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length;
  assert.ok(lines <= 200, `README.md has ${lines} lines; the walk-through and the reference belong in docs/`);
});

test('every relative link in README.md and docs/ resolves, #anchors included', () => {
  const broken: string[] = [];
  let checked = 0;
  for (const file of markdownFiles()) {
    const text = readFileSync(file, 'utf8');
    for (const link of relativeLinks(text)) {
      checked++;
      const [path = '', fragment] = link.split('#', 2);
      const target = path === '' ? file : join(dirname(file), decodeURIComponent(path));
      const where = `${relative(ROOT, file)}: ${link}`;
      if (!existsSync(target)) {
        broken.push(`${where} (no such file)`);
        continue;
      }
      if (fragment === undefined || !target.endsWith('.md') || statSync(target).isDirectory()) continue;
      if (!anchorsOf(readFileSync(target, 'utf8')).has(fragment)) broken.push(`${where} (no such heading)`);
    }
  }
  assert.ok(checked > 20, `only ${checked} links were found; the link pattern is wrong`);
  assert.deepEqual(broken, []);
});

test('the link checker sees broken files and anchors, and ignores code', () => {
  assert.deepEqual(relativeLinks('[a](x.md#b) [c](https://e.org) `[d](e.md)`\n```\n[f](g.md)\n```\n[h](#i)'), [
    'x.md#b',
    '#i',
  ]);
  assert.deepEqual([...anchorsOf('# A b\n## `POST {path}/agent` → 202\n```\n# not a heading\n```\n## A b')], [
    'a-b',
    'post-pathagent--202',
    'a-b-1',
  ]);
});
