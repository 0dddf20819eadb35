// The thread that makes onion session keys ahead for the payer (`session-key-pool.ts` is its
// other side). An onion's first layer is two point multiplications: the session key e gives the
// packet's ephemeral key e·G and, with the first hop's public key P (always one of our channel
// peers), the shared point e·P. They need nothing of the payment, so this thread makes them on
// the core the node's thread is not using, and `send_payment` takes a finished triple.
// Plain JavaScript: a worker does not get tsx's loader.
//
// Request: { peer: Uint8Array (33 bytes), count }. Answer: { peer, keys, alphas, points }, count
// × 32, 33 and 33 bytes; or { unavailable: reason } once, when the native binding cannot load
// here (the pool then stops asking and the payer computes every layer itself, as before).
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { parentPort } from 'node:worker_threads';

let lib;
try {
  lib = createRequire(import.meta.url)('secp256k1/bindings');
} catch (e) {
  parentPort.postMessage({ unavailable: `the native secp256k1 binding did not load: ${e.message}` });
}

parentPort.on('message', ({ peer, count }) => {
  if (!lib) return;
  const keys = new Uint8Array(count * 32);
  const alphas = new Uint8Array(count * 33);
  const points = new Uint8Array(count * 33);
  try {
    for (let i = 0; i < count; i++) {
      let e = randomBytes(32);
      // A scalar of 0 or ≥ n (probability ~2⁻¹²⁸) is drawn again.
      while (!lib.privateKeyVerify(e)) e = randomBytes(32);
      keys.set(e, i * 32);
      alphas.set(lib.publicKeyCreate(e, true), i * 33);
      points.set(lib.publicKeyTweakMul(peer, e, true), i * 33);
    }
  } catch (e) {
    // A peer key that is not a point: nothing for it (the payer's own peel of it fails the same).
    parentPort.postMessage({ peer, failed: e.message });
    return;
  }
  parentPort.postMessage({ peer, keys, alphas, points }, [keys.buffer, alphas.buffer, points.buffer]);
});
