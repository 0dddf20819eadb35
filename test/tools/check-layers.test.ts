/** The layer checker of `npm run lint` on small trees: it names a breach and a cycle, and passes src/. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';

const TOOL = path.resolve(import.meta.dirname, '../../tools/check-layers.ts');
const run = (dir?: string) =>
  spawnSync(process.execPath, ['--import', 'tsx', TOOL, ...(dir ? [dir] : [])], { encoding: 'utf8' });

it('passes the project tree', () => {
  const r = run();
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
});

it('names an upward import, a runtime cycle and an import past an entry point, and ignores a type-only cycle', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-layers-'));
  const put = (file: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  };
  put('codec/a.ts', "import { b } from '../channel/b.ts';\nexport const a = b;\n");
  put('channel/b.ts', "export const b = 1;\nimport { c } from './c.ts';\nexport const bc = c;\n");
  put('channel/c.ts', "import { b } from './b.ts';\nexport const c = b;\n");
  put('store/d.ts', "import type { E } from './e.ts';\nexport type D = E;\n");
  put('store/e.ts', "import type { D } from './d.ts';\nexport type E = D | 1;\n");
  put('codec/index.ts', "export { h } from './h.ts';\n");
  put('codec/h.ts', 'export const h = 1;\n');
  put(
    'crypto/k.ts',
    "import { h } from '../codec/h.ts';\nimport { h as h2 } from '../codec/index.ts';\nexport const k = h + h2;\n",
  );
  const r = run(dir);
  expect(r.status).toBe(1);
  expect(r.stderr).toContain('layer breach: codec -> channel: codec/a.ts');
  expect(r.stderr).toContain('import cycle: channel/b.ts channel/c.ts');
  expect(r.stderr).not.toContain('store/d.ts');
  // Another folder only through its entry point.
  expect(r.stderr).toContain('not through codec/index.ts: crypto/k.ts imports codec/h.ts');
  expect(r.stderr).not.toContain('crypto/k.ts imports codec/index.ts');
  fs.rmSync(dir, { recursive: true, force: true });
});
