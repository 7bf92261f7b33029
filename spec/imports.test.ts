import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, normalize, relative } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './_cli.ts';

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(join(ROOT, dir), { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => relative(ROOT, join(e.parentPath ?? e.path, e.name)));
}

// Static `import`/`export ... from`, side-effect imports, and dynamic import() of a literal.
const SPECIFIER =
  /(?:^|[\s;])(?:import|export)\s[^'"`]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;

/** One import of a file: what it names, where that resolves to (relative ones), whether it is `import type`, and whether an `import()` (made when used). */
interface Edge {
  specifier: string;
  target: string | null;
  typeOnly: boolean;
  dynamic: boolean;
}

async function importsOf(file: string): Promise<Edge[]> {
  // Comments may say "import" too: only code counts.
  const text = (await readFile(join(ROOT, file), 'utf8')).replace(/\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, '');
  const edges: Edge[] = [];
  for (const match of text.matchAll(SPECIFIER)) {
    const specifier = match[1] ?? match[2] ?? match[3]!;
    const target = specifier.startsWith('.') ? normalize(join(dirname(file), specifier)) : null;
    edges.push({
      specifier,
      target,
      typeOnly: /^\s*(?:[;\s])?(?:import|export)\s+type\s/.test(match[0]),
      dynamic: match[3] !== undefined,
    });
  }
  return edges;
}

async function libGraph(): Promise<Map<string, Edge[]>> {
  const graph = new Map<string, Edge[]>();
  for (const file of await sources('lib')) graph.set(file, await importsOf(file));
  return graph;
}

/** The first import cycle found among `graph`'s relative imports (type imports count), as a path; `null` without one. */
function findCycle(graph: ReadonlyMap<string, readonly { target: string | null }[]>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string): string[] | null => {
    if (state.get(file) === 'done') return null;
    if (state.get(file) === 'open') return [...path.slice(path.indexOf(file)), file];
    state.set(file, 'open');
    path.push(file);
    for (const edge of graph.get(file) ?? []) {
      if (edge.target === null || !graph.has(edge.target)) continue;
      const cycle = visit(edge.target);
      if (cycle !== null) return cycle;
    }
    path.pop();
    state.set(file, 'done');
    return null;
  };
  for (const file of graph.keys()) {
    const cycle = visit(file);
    if (cycle !== null) return cycle;
  }
  return null;
}

/** A lib/ file's layer: its folder (`hooks/transforms` apart from `hooks`; providers belong to runtime), `''` for the shared leaves. */
function layerOf(file: string): string {
  const parts = file.split('/').slice(1, -1);
  if (parts[0] === 'hooks' && parts[1] === 'transforms') return 'hooks/transforms';
  return parts[0] ?? '';
}

// Which layers each layer may import: the map at the top of docs/development.md. Data flows one
// way: cli and config build everything below; the edge uses guard, hooks, policy and store; the
// runtime uses store, policy, its providers and delivery. Hooks read guard's signature settings (a
// mapping's `signature`); the transform runner uses guard's containment on real paths. Hooks, the
// edge and the runtime wrap request text a model or a reader meets as untrusted content. The edge
// hands runs to the runtime through interfaces of its own; of runtime/ it imports forward mode's
// outbox bodies only (below). The edge and
// the runtime read the validated config (config/types.ts); policy, hooks and store declare what they
// read of it, and config builds that.
// The domain's words (model/: actions, runs and events, ledger entries) import nothing but the root;
// the layers that speak them import them, so policy and delivery need nothing of the store.
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  '': [''],
  model: ['', 'model'],
  untrusted: ['', 'untrusted'],
  guard: ['', 'guard'],
  hooks: ['', 'hooks', 'hooks/transforms', 'guard', 'untrusted', 'model'],
  'hooks/transforms': ['', 'hooks/transforms', 'guard'],
  policy: ['', 'policy', 'model'],
  store: ['', 'store', 'model'],
  delivery: ['', 'delivery', 'policy', 'model'],
  runtime: ['', 'runtime', 'store', 'policy', 'delivery', 'untrusted', 'config', 'model'],
  edge: ['', 'edge', 'guard', 'hooks', 'policy', 'store', 'untrusted', 'runtime', 'config', 'model'],
  control: ['', 'control', 'guard', 'store', 'server', 'model'],
  inspector: ['', 'inspector', 'edge', 'guard', 'store', 'model', 'config'],
  server: [
    '',
    'server',
    'config',
    'guard',
    'hooks',
    'hooks/transforms',
    'policy',
    'store',
    'delivery',
    'runtime',
    'edge',
    'untrusted',
    'model',
  ],
  config: ['', 'config', 'guard', 'hooks', 'hooks/transforms', 'policy', 'store', 'delivery', 'runtime', 'model'],
  cli: [
    '',
    'cli',
    'server',
    'control',
    'inspector',
    'config',
    'guard',
    'hooks',
    'hooks/transforms',
    'policy',
    'store',
    'delivery',
    'runtime',
    'edge',
    'untrusted',
    'model',
  ],
};

/** The files of `graph` that import nothing from lib/: such a leaf may be imported from any layer. */
function leavesOf(graph: ReadonlyMap<string, readonly Edge[]>): Set<string> {
  return new Set([...graph].filter(([, edges]) => edges.every((e) => e.target === null)).map(([file]) => file));
}

/** The layers' own graph: an edge from one layer to another for each import between their files, leaves left out. */
function layerGraph(graph: ReadonlyMap<string, readonly Edge[]>): Map<string, { target: string }[]> {
  const leaves = leavesOf(graph);
  const layers = new Map<string, { target: string }[]>();
  for (const [file, edges] of graph) {
    const from = layerOf(file);
    const out = layers.get(from) ?? layers.set(from, []).get(from)!;
    for (const { target } of edges) {
      if (target === null || leaves.has(target) || layerOf(target) === from) continue;
      if (!out.some((e) => e.target === layerOf(target))) out.push({ target: layerOf(target) });
    }
  }
  return layers;
}

// Disk, network and processes: hooks and policy turn requests into decisions without them.
const IO_MODULES = new Set([
  'node:fs',
  'node:fs/promises',
  'node:net',
  'node:http',
  'node:https',
  'node:child_process',
  'node:worker_threads',
]);

test('lib/ and bin/ import only node: built-ins and relative files (zero runtime dependencies)', async () => {
  const files = [...(await sources('lib')), ...(await sources('bin'))];
  assert.ok(files.length > 10);
  const offenders: string[] = [];
  for (const file of files) {
    for (const { specifier } of await importsOf(file)) {
      // The inspector page's scripts run in the browser, served as they are: they import one another only.
      const page = file.startsWith('lib/inspector/page/') && /^\.\/[\w-]+\.js$/.test(specifier);
      const allowed = page || specifier.startsWith('node:') ||
        (file.startsWith('lib/') ? /^\.\.?\/.*\.ts$/.test(specifier) : specifier.startsWith('../'));
      if (!allowed) offenders.push(`${file}: ${specifier}`);
    }
  }
  assert.deepEqual(offenders, []);
});

test('lib/ holds at most 8 files at its root: the shared leaves', async () => {
  const root = (await sources('lib')).filter((file) => layerOf(file) === '');
  assert.ok(root.length <= 8, `${root.length} files at the root of lib/: ${root.join(', ')}`);
});

test('findCycle() finds a cycle through type imports and none in a tree', () => {
  const edge = (target: string) => ({ target });
  assert.deepEqual(findCycle(new Map([['a', [edge('b')]], ['b', [edge('c')]], ['c', [edge('a')]]])), [
    'a',
    'b',
    'c',
    'a',
  ]);
  assert.equal(findCycle(new Map([['a', [edge('b'), edge('c')]], ['b', [edge('c')]], ['c', []]])), null);
});

test('lib/ has no import cycle, counting type imports', async () => {
  assert.deepEqual(findCycle(await libGraph()), null);
});

test('lib/ has no import cycle between its folders either, counting type imports (a file that imports nothing from lib/ is a leaf anyone may import)', async () => {
  assert.deepEqual(findCycle(layerGraph(await libGraph())), null);
});

test('each layer of lib/ imports only the layers below it (cli → config → the rest; edge → guard, hooks, policy, store; runtime → store, policy, delivery)', async () => {
  const graph = await libGraph();
  const leaves = leavesOf(graph);
  const offenders: string[] = [];
  for (const [file, edges] of graph) {
    const layer = layerOf(file);
    for (const { target } of edges) {
      if (target === null || leaves.has(target)) continue;
      if (!ALLOWED[layer]?.includes(layerOf(target))) offenders.push(`${file} → ${target}`);
    }
  }
  assert.deepEqual(offenders, []);
});

test('store/ imports nothing from hooks, runtime, edge or delivery, and delivery/ nothing from edge or runtime', async () => {
  const offenders: string[] = [];
  for (const [file, edges] of await libGraph()) {
    const forbidden = file.startsWith('lib/store/')
      ? ['hooks', 'runtime', 'edge', 'delivery']
      : file.startsWith('lib/delivery/')
      ? ['edge', 'runtime']
      : [];
    for (const { target } of edges) {
      if (target !== null && forbidden.includes(layerOf(target).split('/')[0]!)) {
        offenders.push(`${file} → ${target}`);
      }
    }
  }
  assert.deepEqual(offenders, []);
});

test("store/ holds at most 6 files directly: the rest is in its components' sub-folders", async () => {
  const flat = (await sources('lib')).filter((file) => /^lib\/store\/[^/]+$/.test(file));
  assert.ok(flat.length <= 6, `${flat.length} files directly in lib/store/: ${flat.join(', ')}`);
});

test("store/'s components (its sub-folders: the journal, the ledger, the state files) import nothing of one another", async () => {
  const component = (file: string) => /^lib\/store\/([\w-]+)\//.exec(file)?.[1];
  const offenders: string[] = [];
  for (const [file, edges] of await libGraph()) {
    const own = component(file);
    if (own === undefined) continue;
    for (const { target } of edges) {
      const other = target === null ? undefined : component(target);
      if (other !== undefined && other !== own) offenders.push(`${file} → ${target}`);
    }
  }
  assert.deepEqual(offenders, []);
});

test("the edge imports nothing of the runtime but forward mode's outbox bodies (runtime/forward-body.ts)", async () => {
  const offenders: string[] = [];
  for (const [file, edges] of await libGraph()) {
    if (!file.startsWith('lib/edge/')) continue;
    for (const { target } of edges) {
      if (target !== null && layerOf(target) === 'runtime' && target !== 'lib/runtime/forward-body.ts') {
        offenders.push(`${file} → ${target}`);
      }
    }
  }
  assert.deepEqual(offenders, []);
});

test('hooks/ and policy/ touch neither disk, network nor processes; hooks/transforms/ (the transform runner) is the one exception', async () => {
  const offenders: string[] = [];
  for (const [file, edges] of await libGraph()) {
    const layer = layerOf(file);
    if (layer !== 'hooks' && layer !== 'policy') continue;
    for (const { specifier, target, typeOnly } of edges) {
      if (IO_MODULES.has(specifier) || target === 'lib/delivery/http-call.ts') offenders.push(`${file}: ${specifier}`);
      // The rest of hooks may name the runner's types, never load it.
      if (target !== null && layerOf(target) === 'hooks/transforms' && !typeOnly) {
        offenders.push(`${file}: ${specifier} (not import type)`);
      }
    }
  }
  assert.deepEqual(offenders, []);
});

test('lib/config/types.ts, the validated config the edge and the runtime read, holds types only', async () => {
  const file = 'lib/config/types.ts';
  assert.deepEqual((await importsOf(file)).filter((e) => !e.typeOnly).map((e) => e.specifier), []);
  assert.doesNotMatch(await readFile(join(ROOT, file), 'utf8'), /^export (?:const|function|class|let|async)/m);
});

test('lib/ is ESM that Deno runs as it is: no require, __dirname or module.exports outside strings', async () => {
  const offenders: string[] = [];
  for (const file of await sources('lib')) {
    const text = await readFile(join(ROOT, file), 'utf8');
    // Template literals are worker sources; their text runs inside a worker, not as this module.
    const code = text.replace(/`(?:\\[\s\S]|[^`\\])*`/g, '``');
    if (/\brequire\(|__dirname|__filename|module\.exports/.test(code)) offenders.push(file);
  }
  assert.deepEqual(offenders, []);
});

/** The lib/ files loading `entry` loads before any of its code runs: its static imports, followed, without `import type` and `import()`. */
function loadedBy(graph: ReadonlyMap<string, readonly Edge[]>, entry: string): Set<string> {
  const loaded = new Set<string>();
  const visit = (file: string) => {
    if (loaded.has(file)) return;
    loaded.add(file);
    for (const edge of graph.get(file) ?? []) {
      if (edge.target !== null && !edge.typeOnly && !edge.dynamic) visit(edge.target);
    }
  };
  visit(entry);
  return loaded;
}

// What serves, not what reads: the HTTP app, the runtime and its providers, the adapters, the
// transform runner, the signature schemes, the config's validation, the server's composition.
const SERVER_CODE =
  /^lib\/(?:edge\/|runtime\/|delivery\/|hooks\/transforms\/|guard\/signatures?[/.]|cli\/serve\.ts|server\/|config\/(?:load|file-schema|checks)\.ts)/;

test('lib/cli/main.ts imports each command when it runs: --version loads no command and nothing below the CLI', async () => {
  const loaded = [...loadedBy(await libGraph(), 'lib/cli/main.ts')];
  assert.ok(loaded.includes('lib/cli/usage.ts'));
  assert.deepEqual(loaded.filter((f) => !/^lib\/(?:cli\/(?:main|io|usage|command)\.ts|[\w-]+\.ts)$/.test(f)), []);
});

// The state directory's writers: a command that reads it loads its readers only.
const STATE_WRITERS = /^lib\/store\/(?:journal\/(?:journal|store)|ledger\/ledger)\.ts$/;

test('a command that only reads the state directory (NEEDS: state) loads no server code, no config validation and no writer of the state directory', async () => {
  const graph = await libGraph();
  const main = await readFile(join(ROOT, 'lib/cli/main.ts'), 'utf8');
  const { NEEDS } = await import('../lib/cli/load-config.ts');
  const readers = Object.keys(NEEDS).filter((name) => NEEDS[name]!.of === 'state');
  assert.ok(readers.includes('events') && readers.includes('outbox'));
  const offenders: string[] = [];
  for (const name of readers) {
    const file = new RegExp(`^\\s+${name}: async \\(\\) => \\(await import\\('\\./([\\w-]+\\.ts)'\\)\\)`, 'm').exec(
      main,
    )?.[1];
    // A command NEEDS names before it exists (the table is shared) is nothing to check yet; one main.ts runs is in its table of imports.
    if (file === undefined) {
      assert.doesNotMatch(main, new RegExp(`\\b${name}\\b`), `${name} is not imported through main.ts's table`);
      continue;
    }
    for (const loaded of loadedBy(graph, `lib/cli/${file}`)) {
      if (SERVER_CODE.test(loaded) || STATE_WRITERS.test(loaded)) {
        offenders.push(`${name} (lib/cli/${file}) → ${loaded}`);
      }
    }
  }
  assert.deepEqual(offenders, []);
});

test('serve loads no chat adapter, model provider, signature scheme or transform runner until its config names one, and no try or replay until asked', async () => {
  const loaded = [...loadedBy(await libGraph(), 'lib/cli/serve.ts')];
  assert.ok(loaded.includes('lib/edge/server.ts'));
  const parts =
    /^lib\/(?:delivery\/(?!channels|deliver|chunk|adapter|_platform)|runtime\/providers\/(?!registry|provider)|guard\/signatures\/(?!config|verify|paths)|hooks\/transforms\/|(?:cli|server)\/gmail-companion\.ts|runtime\/gmail-companion\.ts|runtime\/forward\.ts|server\/(?:try|replay)\.ts|cli\/(?:try|requests-replay)\.ts|edge\/(?:preview|replay)\.ts)/;
  assert.deepEqual(loaded.filter((f) => parts.test(f)), []);
});

/** Every lib/ file loading `entry` may load: its imports followed, `import()` included, `import type` left out. */
function reachedFrom(graph: ReadonlyMap<string, readonly Edge[]>, entry: string): Set<string> {
  const reached = new Set<string>();
  const visit = (file: string) => {
    if (reached.has(file)) return;
    reached.add(file);
    for (const edge of graph.get(file) ?? []) if (edge.target !== null && !edge.typeOnly) visit(edge.target);
  };
  visit(entry);
  return reached;
}

test('nothing outside lib/cli/ imports lib/cli/, type imports counted: the commands are the top', async () => {
  const offenders: string[] = [];
  for (const [file, edges] of await libGraph()) {
    if (file.startsWith('lib/cli/')) continue;
    for (const { target } of edges) if (target?.startsWith('lib/cli/')) offenders.push(`${file} → ${target}`);
  }
  assert.deepEqual(offenders, []);
});

// The serve command's own plumbing in lib/cli/: its options and help, the io, usage errors, the
// config loaded for a command, the log's text form, SIGUSR1 ignored.
const SERVE_COMMAND = /^lib\/cli\/(?:serve|command|io|usage|load-config|log-text|debugger-signal)\.ts$/;

test("what serve runs does not live in lib/cli/: of lib/cli/ it loads its command's plumbing only, the server it composes and runs comes from lib/server/ and the folders below", async () => {
  const reached = reachedFrom(await libGraph(), 'lib/cli/serve.ts');
  assert.ok(
    reached.has('lib/server/service.ts') && reached.has('lib/server/try.ts') && reached.has('lib/inspector/serve.ts') &&
      reached.has('lib/server/gmail-companion.ts'),
  );
  assert.deepEqual([...reached].filter((file) => file.startsWith('lib/cli/') && !SERVE_COMMAND.test(file)), []);
});

test('package.json declares no runtime dependencies', async () => {
  const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
  for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies', 'bundledDependencies']) {
    assert.equal(pkg[field], undefined, `${field} must be absent`);
  }
});
