/**
 * `npm run lint` (with biome): the layer rule of docs/architecture.md, checked on every import
 * under src/. A folder imports only the folders its row allows; no file takes part in an import
 * cycle (type-only imports aside: they vanish at run time), and another folder is imported through
 * its entry point (`index.ts`) only. No allow-list: a breach is fixed by
 * moving the shared piece down a layer, never by listing it.
 */
import fs from 'node:fs';
import path from 'node:path';

/** The tree to check: src/ (an argument names another, for the checker's own test). */
const SRC = path.resolve(process.argv[2] ?? path.join(import.meta.dirname, '../src'));

const DOMAIN = ['chain', 'store', 'p2p', 'channel', 'graph', 'invoice', 'payment', 'watchtower', 'cch'];
/** The table of docs/architecture.md: what each folder may import. */
const ALLOWED: Record<string, string[]> = {
  codec: [],
  // The typed client ships to applications: it must not pull the node in.
  client: [],
  crypto: ['codec'],
  store: ['codec'],
  chain: ['codec', 'crypto'],
  devchain: ['codec', 'crypto', 'chain', 'store'],
  p2p: ['codec', 'crypto', 'store'],
  channel: ['codec', 'crypto', 'chain', 'store', 'p2p'],
  graph: ['codec', 'crypto', 'chain', 'store', 'p2p'],
  invoice: ['codec', 'crypto', 'store'],
  payment: ['codec', 'crypto', 'chain', 'store', 'p2p', 'channel', 'graph', 'invoice'],
  watchtower: ['codec', 'crypto', 'chain', 'store', 'p2p', 'channel', 'graph', 'invoice', 'payment'],
  // The hub talks to a Fiber node through the typed client, never through the RPC server's code.
  cch: ['codec', 'crypto', 'chain', 'store', 'p2p', 'channel', 'graph', 'invoice', 'payment', 'client'],
  rpc: ['codec', 'crypto', ...DOMAIN],
  node: ['codec', 'crypto', 'devchain', 'rpc', ...DOMAIN],
  devnet: ['codec', 'crypto', 'node', 'devchain', 'rpc', 'client', ...DOMAIN],
  cli: ['codec', 'crypto', 'node', 'devchain', 'devnet', 'rpc', 'client', ...DOMAIN],
};

interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

const IMPORT = /^\s*(import|export)\s+(type\s+)?[^'";]*?\bfrom\s+'(\.[^']+)'|^\s*import\s+'(\.[^']+)'/gm;

function edgesOf(file: string): Edge[] {
  const text = fs.readFileSync(file, 'utf8');
  const out: Edge[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[3] ?? m[4]!;
    out.push({
      from: path.relative(SRC, file),
      to: path.relative(SRC, path.resolve(path.dirname(file), spec)),
      typeOnly: m[2] !== undefined,
    });
  }
  return out;
}

const folderOf = (rel: string) => rel.split(path.sep)[0]!;

/** Strongly connected components of more than one file (Tarjan). */
function cycles(edges: Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) if (!e.typeOnly) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let n = 0;
  const visit = (v: string) => {
    index.set(v, n);
    low.set(v, n++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return out;
}

const edges = sourceFiles(SRC).flatMap(edgesOf);
const problems: string[] = [];

for (const e of edges) {
  const [a, b] = [folderOf(e.from), folderOf(e.to)];
  if (a === b || a.endsWith('.ts')) continue;
  const allowed = ALLOWED[a];
  if (!allowed)
    problems.push(`src/${a}/ is not in the layer table (docs/architecture.md, tools/check-layers.ts)`);
  else if (!allowed.includes(b)) problems.push(`layer breach: ${a} -> ${b}: ${e.from}`);
  // Another folder is used through its entry point only: what it offers is what its index.ts exports.
  if (allowed?.includes(b) && e.to !== path.join(b, 'index.ts'))
    problems.push(`not through ${b}/index.ts: ${e.from} imports ${e.to}`);
}

for (const c of cycles(edges)) problems.push(`import cycle: ${c.join(' ')}`);
// Folders too: two folders that import each other are one layer, whatever their files do.
const folderEdges = edges
  .map((e) => ({ ...e, from: folderOf(e.from), to: folderOf(e.to) }))
  .filter((e) => e.from !== e.to && !e.from.endsWith('.ts'));
for (const c of cycles(folderEdges)) problems.push(`folder cycle: ${c.join(' ')}`);

if (problems.length) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log(`layers: ${edges.length} imports checked, no breach, no cycle`);
