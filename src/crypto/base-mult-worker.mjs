// A thread that multiplies the base point: for each 32-byte scalar k of a request, k·G
// (compressed). `base-mult.ts` is its other side; the channels' nonce pool (`nonce-pool.ts`) has
// the public halves of its nonces made here, on the core the node's thread is not using.
// Plain JavaScript: a worker does not get tsx's loader.
//
// Request: { id, scalars: Uint8Array (n × 32) }. Answer: { id, points: Uint8Array (n × 33) }, or
// { id, failed: reason } for a scalar out of range; { unavailable: reason } once, when the native
// binding cannot load here (the other side then stops asking).
import { createRequire } from 'node:module';
import { parentPort } from 'node:worker_threads';

let lib;
try {
  lib = createRequire(import.meta.url)('secp256k1/bindings');
} catch (e) {
  parentPort.postMessage({ unavailable: `the native secp256k1 binding did not load: ${e.message}` });
}

parentPort.on('message', ({ id, scalars }) => {
  if (!lib) return;
  const n = scalars.length / 32;
  const points = new Uint8Array(n * 33);
  try {
    for (let i = 0; i < n; i++)
      points.set(lib.publicKeyCreate(scalars.subarray(i * 32, i * 32 + 32), true), i * 33);
  } catch (e) {
    parentPort.postMessage({ id, failed: e.message });
    return;
  }
  parentPort.postMessage({ id, points }, [points.buffer]);
});
