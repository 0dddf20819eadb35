/**
 * Loads @biscuit-auth/biscuit-wasm on plain Node 20. The package is built for bundlers: its entry
 * imports the `.wasm` file as an ES module, which Node 20 refuses without a flag. We instantiate
 * the wasm ourselves against the package's JS glue (`biscuit_bg.js`) and hand the glue's exports
 * out — the same thing the bundler target would have done, with no loader hook or flag.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export type BiscuitModule = typeof import('@biscuit-auth/biscuit-wasm');

const PKG = '@biscuit-auth/biscuit-wasm';
/** The slice of the WebAssembly API used here (its types live in lib.dom, which we don't load). */
interface Wasm {
  compile(bytes: Uint8Array): Promise<object>;
  instantiate(
    module: object,
    imports: Record<string, unknown>,
  ): Promise<{ exports: Record<string, unknown> }>;
  Module: { imports(module: object): { module: string }[] };
}
const WebAssembly = (globalThis as unknown as { WebAssembly: Wasm }).WebAssembly;

let loaded: Promise<BiscuitModule> | undefined;

export function loadBiscuit(): Promise<BiscuitModule> {
  loaded ??= instantiate();
  return loaded;
}

async function instantiate(): Promise<BiscuitModule> {
  const require = createRequire(import.meta.url);
  // Find the package folder along Node's search paths (its exports map hides every file but
  // the bundler entry, so require.resolve cannot name the glue file directly).
  const pkgDir = (require.resolve.paths(PKG) ?? [])
    .map((dir) => path.join(dir, PKG))
    .find((dir) => fs.existsSync(path.join(dir, 'module', 'biscuit_bg.wasm')));
  if (!pkgDir) throw new Error(`${PKG} is not installed (run npm ci)`);
  const glueUrl = pathToFileURL(path.join(pkgDir, 'module', 'biscuit_bg.js')).href;
  const glue = (await import(glueUrl)) as BiscuitModule & {
    __wbg_set_wasm(exports: Record<string, unknown>): void;
  };
  const wasmModule = await WebAssembly.compile(
    fs.readFileSync(path.join(pkgDir, 'module', 'biscuit_bg.wasm')),
  );
  // The wasm imports the glue plus small JS snippets, each by a path relative to `module/`.
  const imports: Record<string, unknown> = {};
  for (const { module: name } of WebAssembly.Module.imports(wasmModule)) {
    if (imports[name]) continue;
    imports[name] =
      name === './biscuit_bg.js' ? glue : await import(pathToFileURL(path.join(pkgDir, 'module', name)).href);
  }
  const instance = await WebAssembly.instantiate(wasmModule, imports);
  glue.__wbg_set_wasm(instance.exports);
  // The module's start function logs "biscuit-wasm loading" to stdout; keep stdout clean for
  // commands whose output is data (`strand token mint`).
  const log = console.log;
  console.log = () => {};
  try {
    (instance.exports.__wbindgen_start as () => void)();
  } finally {
    console.log = log;
  }
  return glue;
}
