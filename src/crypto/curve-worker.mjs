// The thread that does curve work made ahead (`made-ahead.ts` is its other side): for each
// 32-byte scalar k of a request, k·G, and k·P when the request names a point P (compressed, 33
// bytes each). The channels' nonces and the payer's onion session keys have their
// multiplications made here, on the core the node's thread is not using; and the received
// onions' ECDH, in a thread of its own (`ecdh-ahead.ts`).
// Plain JavaScript: a worker does not get tsx's loader.
//
// Request: { id, scalars: Uint8Array (n × 32), point?: Uint8Array (33) }. Answer: { id, kG, kP? }
// (n × 33 bytes each); or { id, failed: reason } (a scalar out of range, a point that does not
// decode); or { unavailable: reason } once, when the native binding cannot load here.
// Request for the other way round, one scalar and many points (the onions' ECDH, `ecdh-ahead.ts`):
// { id, scalar: Uint8Array (32), points: Uint8Array (n × 33) }. Answer: { id, kPs } (n × 33
// bytes), with 33 zero bytes where a point does not decode: its user does that one itself.
import { createRequire } from 'node:module';
import { parentPort } from 'node:worker_threads';

let lib;
try {
  lib = createRequire(import.meta.url)('secp256k1/bindings');
} catch (e) {
  parentPort.postMessage({ unavailable: `the native secp256k1 binding did not load: ${e.message}` });
}

parentPort.on('message', (m) => {
  if (!lib) return;
  if (m.points) {
    timesPoints(m);
    return;
  }
  const { id, scalars, point } = m;
  const n = scalars.length / 32;
  const kG = new Uint8Array(n * 33);
  const kP = point ? new Uint8Array(n * 33) : undefined;
  try {
    for (let i = 0; i < n; i++) {
      const k = scalars.subarray(i * 32, i * 32 + 32);
      kG.set(lib.publicKeyCreate(k, true), i * 33);
      if (kP) kP.set(lib.publicKeyTweakMul(point, k, true), i * 33);
    }
  } catch (e) {
    parentPort.postMessage({ id, failed: e.message });
    return;
  }
  parentPort.postMessage({ id, kG, kP }, kP ? [kG.buffer, kP.buffer] : [kG.buffer]);
});

function timesPoints({ id, scalar, points }) {
  const n = points.length / 33;
  const kPs = new Uint8Array(n * 33);
  for (let i = 0; i < n; i++) {
    try {
      kPs.set(lib.publicKeyTweakMul(points.subarray(i * 33, i * 33 + 33), scalar, true), i * 33);
    } catch {
      // Left as zeros: not a point (or a scalar out of range), reported by the peel that follows.
    }
  }
  parentPort.postMessage({ id, kPs }, [kPs.buffer]);
}
