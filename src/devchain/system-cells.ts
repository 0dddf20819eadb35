/**
 * The four binaries CKB bundles into every chain spec (sighash_all, multisig_all, dao,
 * secp256k1_data). They are not in any spec file: a genesis needs them byte for byte. They ship
 * inside the installed `@nervosnetwork/fiber-js` package (its inlined WebAssembly holds them as gzip
 * members); we scan, inflate and select each by its known blake2b data hash, so any change in the
 * packing fails loudly instead of yielding a different chain. Nothing is copied into the repo.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import zlib from 'node:zlib';
import { bytesToHex } from '../codec/index.ts';
import { ckbHash } from '../crypto/index.ts';

/** Data hashes of the bundled cells, keyed by their `specs/cells/<name>` name. */
export const BUNDLED_CELL_HASHES: Record<string, string> = {
  secp256k1_blake160_sighash_all: '0x709f3fda12f561cfacf92273c57a98fede188a3f1a59b1f888d113f9cce08649',
  secp256k1_blake160_multisig_all: '0x43400de165f0821abf63dcac299bbdf7fd73898675ee4ddb099b0a0d8db63bfb',
  dao: '0x32064a14ce10d95d4b7343054cc19d73b25b16ae61a6c681011ca781a60c7923',
  secp256k1_data: '0x9799bee251b975b82c45a02154ce28cec89c5853ecc14d12b7b8cccfc19e0af4',
};

export class SystemCellsError extends Error {}

let cache: Map<string, Uint8Array> | undefined;

/** Returns the bundled cell `specs/cells/<name>` (or `<name>`); throws SystemCellsError if absent. */
export function bundledCell(name: string): Uint8Array {
  const key = name.replace(/^specs\/cells\//, '');
  const hash = BUNDLED_CELL_HASHES[key];
  if (!hash) throw new SystemCellsError(`unknown bundled cell '${name}'`);
  cache ??= extractAll();
  const data = cache.get(hash);
  if (!data)
    throw new SystemCellsError(
      `bundled cell '${key}' (data hash ${hash}) not found in @nervosnetwork/fiber-js`,
    );
  return data;
}

function packageIndexJs(): string {
  // The package exports only its ES module entry, which is the file we scan.
  const require = createRequire(import.meta.url);
  try {
    return require.resolve('@nervosnetwork/fiber-js');
  } catch {
    throw new SystemCellsError(
      '@nervosnetwork/fiber-js is not installed (npm ci): the genesis system cells come from it',
    );
  }
}

function extractAll(): Map<string, Uint8Array> {
  const wanted = new Set(Object.values(BUNDLED_CELL_HASHES));
  const text = fs.readFileSync(packageIndexJs(), 'latin1');
  // The node's WebAssembly is the longest base64 run starting with the wasm magic.
  let best = '';
  for (const m of text.matchAll(/AGFzbQ[A-Za-z0-9+/=]+/g)) if (m[0].length > best.length) best = m[0];
  const wasm = Buffer.from(best, 'base64');
  const found = new Map<string, Uint8Array>();
  for (let i = 0; i + 10 < wasm.length && found.size < wanted.size; i++) {
    if (wasm[i] !== 0x1f || wasm[i + 1] !== 0x8b || wasm[i + 2] !== 8) continue;
    const body = gzipBodyStart(wasm, i);
    if (body < 0) continue;
    let out: Buffer;
    try {
      out = zlib.inflateRawSync(wasm.subarray(body));
    } catch {
      continue;
    }
    const h = bytesToHex(ckbHash(out));
    if (wanted.has(h)) found.set(h, new Uint8Array(out));
  }
  return found;
}

/** Offset of the deflate stream of a gzip member at `i` (RFC 1952 header), or -1. */
function gzipBodyStart(buf: Buffer, i: number): number {
  const flags = buf[i + 3] as number;
  let p = i + 10;
  if (flags & 4) p += 2 + buf.readUInt16LE(p);
  if (flags & 8) p = buf.indexOf(0, p) + 1;
  if (flags & 16) p = buf.indexOf(0, p) + 1;
  if (flags & 2) p += 2;
  return p > 0 && p < buf.length ? p : -1;
}
