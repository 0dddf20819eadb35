/**
 * The hashes of CKB and Fiber.
 *
 * CKB's hash (BLAKE2b-256, personalised) runs in WebAssembly (`blake2b-wasm`, compiled from the
 * reference C): ~0.7 µs for 32 bytes and ~3.7 µs for 1 KB here, against ~6.6 µs and ~32 µs for
 * @noble/hashes in pure JS. A channel step hashes a lot of small things (a commitment secret alone
 * is up to 48 chained hashes), so it shows in every node's profile. The module compiles
 * asynchronously; until it is ready, or if it cannot load, the same hash comes from noble, and
 * `hashBackend()` says why (the node logs it once at start). The results are the same bytes
 * either way (`test/crypto/hash.test.ts` checks them against each other).
 */
import { createRequire } from 'node:module';
import { blake2b } from '@noble/hashes/blake2.js';
import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';

const CKB_PERSONAL = new TextEncoder().encode('ckb-default-hash');

/** What `blake2b-wasm` exports, as used here: a hasher per call. */
interface WasmBlake2b {
  (
    digestLength: number,
    key: null,
    salt: null,
    personal: Uint8Array,
    noAssert: boolean,
  ): {
    update(input: Uint8Array): unknown;
    digest(): Uint8Array;
  };
  ready(cb: (err?: Error) => void): unknown;
  SUPPORTED: boolean;
}

let wasm: WasmBlake2b | undefined;
let fallbackReason: string | undefined = 'the WebAssembly BLAKE2b is still compiling';

/** Resolves once the WebAssembly hash is in use, or with the reason it is not. */
export const hashReady: Promise<string | undefined> = new Promise((resolve) => {
  if (process.env.STRAND_HASH === 'noble') {
    fallbackReason = 'STRAND_HASH=noble';
    resolve(fallbackReason);
    return;
  }
  try {
    const b2 = createRequire(import.meta.url)('blake2b-wasm') as WasmBlake2b;
    if (!b2.SUPPORTED) throw new Error('WebAssembly is not supported');
    b2.ready((err) => {
      if (err) fallbackReason = `the WebAssembly BLAKE2b did not load: ${err.message}`;
      else {
        wasm = b2;
        fallbackReason = undefined;
      }
      resolve(fallbackReason);
    });
  } catch (e) {
    fallbackReason = `the WebAssembly BLAKE2b did not load: ${(e as Error).message}`;
    resolve(fallbackReason);
  }
});

/** Which implementation `ckbHash` uses now, and why not the WebAssembly one when it is not. */
export function hashBackend(): { name: 'wasm' | 'noble'; fallbackReason?: string } {
  return wasm ? { name: 'wasm' } : { name: 'noble', fallbackReason };
}

/** CKB's hash: BLAKE2b-256 with personalisation `ckb-default-hash`. */
export function ckbHash(...parts: Uint8Array[]): Uint8Array {
  if (wasm) {
    // One hasher from creation to digest, nothing in between: the module's memory may grow
    // during an update, which only this hasher's own view follows.
    const h = wasm(32, null, null, CKB_PERSONAL, true);
    for (const p of parts) h.update(p);
    return h.digest();
  }
  return nobleCkbHash(parts);
}

/** The pure-JS form of `ckbHash` (the fallback, and the reference in tests). */
export function nobleCkbHash(parts: Uint8Array[]): Uint8Array {
  const h = blake2b.create({ dkLen: 32, personalization: CKB_PERSONAL });
  for (const p of parts) h.update(p);
  return h.digest();
}

/** First 20 bytes of the CKB hash (lock args of secp256k1-blake160). */
export function blake160(data: Uint8Array): Uint8Array {
  return ckbHash(data).slice(0, 20);
}

export function sha256(...parts: Uint8Array[]): Uint8Array {
  const h = nobleSha256.create();
  for (const p of parts) h.update(p);
  return h.digest();
}
