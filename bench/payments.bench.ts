/**
 * `npm run bench:payments`: payments per second over one channel (alice → bob, keysend) on a
 * devnet — sequential (latency p50/p99) and with several in flight — and, in the same run, the
 * signing ceiling of this machine (secp256k1 ECDSA and BIP340 Schnorr signatures per second),
 * since every TLC round signs commitments; then the same over two hops (alice → bob → carol, routed
 * by path-finding over the gossiped graph).
 */
import path from 'node:path';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { startDevnet } from '../src/devnet/devnet.ts';
import { createRpcClient, type RpcClient } from '../src/rpc/client.ts';
import { tempDir } from '../test/helpers/node-process.ts';

const PAYMENTS = Number(process.env.BENCH_PAYMENTS ?? 200);
// Payments in flight at once: the TLC updates asked for during a round go out together in the
// next one (batching); the payer's adds and the payee's fulfils still collide now and then.
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);

function signingCeiling() {
  const sk = secp256k1.utils.randomSecretKey();
  const msg = new Uint8Array(32).fill(7);
  const time = (fn: () => void) => {
    const n = 300;
    for (let i = 0; i < 50; i++) fn();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) fn();
    return (n * 1000) / (performance.now() - t0);
  };
  return {
    ecdsa: time(() => secp256k1.sign(msg, sk, { prehash: false })),
    schnorr: time(() => schnorr.sign(msg, sk)),
  };
}

async function pay(alice: RpcClient, bob: string): Promise<number> {
  const t0 = performance.now();
  let payment_hash = '';
  const giveUp = Date.now() + 60_000;
  while (!payment_hash) {
    if (Date.now() > giveUp) throw new Error(`no route to ${bob} after 60 s`);
    try {
      ({ payment_hash } = await alice.call('send_payment', {
        target_pubkey: bob,
        amount: '0x2710',
        keysend: true,
      }));
    } catch (e) {
      // Right after the channels are ready the route may not be known yet (the seed's rule).
      if (!/Failed to build route/.test((e as Error).message)) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  const stuck = Date.now() + 120_000;
  for (;;) {
    const p = await alice.call('get_payment', { payment_hash });
    if (p.status === 'Success') return performance.now() - t0;
    if (p.status === 'Failed') throw new Error(`payment failed: ${p.failed_error}`);
    // A TLC never settled would hold the run forever: name it instead.
    if (Date.now() > stuck) throw new Error(`payment still ${p.status} after 120 s`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;

const net = await startDevnet({
  dir: path.join(tempDir('strand-bench-pay-'), 'net'),
  nodes: 3,
  blockIntervalMs: 200,
  basePort: 40_000 + Math.floor(Math.random() * 10_000),
  // A line: alice knows of bob–carol only through bob's gossip (she is not peered with carol).
  topology: {
    peers: [
      ['alice', 'bob'],
      ['bob', 'carol'],
    ],
    channels: [
      { from: 'alice', to: 'bob', funding: 5000, udt: false, public: true },
      { from: 'bob', to: 'carol', funding: 5000, udt: false, public: true },
    ],
  },
  reset: true,
  log: () => {},
});
try {
  const alice = createRpcClient(net.description.nodes[0]!.rpc_url);
  const bob = net.description.nodes[1]!.pubkey;
  for (let i = 0; i < 10; i++) await pay(alice, bob); // warm-up
  const lat: number[] = [];
  let t0 = performance.now();
  for (let i = 0; i < PAYMENTS; i++) lat.push(await pay(alice, bob));
  const seqRate = (PAYMENTS * 1000) / (performance.now() - t0);
  let concRate = seqRate;
  if (CONCURRENCY > 1) {
    t0 = performance.now();
    let next = 0;
    const conc: number[] = [];
    // A payment whose first hop stays busy through all its tries fails: counted, not fatal.
    const failed: string[] = [];
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < PAYMENTS) {
          next++;
          await pay(alice, bob).then(
            (ms) => conc.push(ms),
            (e: Error) => failed.push(e.message),
          );
        }
      }),
    );
    concRate = (conc.length * 1000) / (performance.now() - t0);
    console.log(
      `  ${CONCURRENCY} in flight: ${concRate.toFixed(1)}/s, p50 ${pct(conc, 50).toFixed(1)} ms, p99 ${pct(conc, 99).toFixed(1)} ms${failed.length ? `; ${failed.length} failed (${[...new Set(failed)].join('; ')})` : ''}`,
    );
  }
  const carol = net.description.nodes[2]!.pubkey;
  const lat2: number[] = [];
  let twoHopRate = 0;
  try {
    for (let i = 0; i < 3; i++) await pay(alice, carol); // warm-up (and wait for the route)
    t0 = performance.now();
    for (let i = 0; i < PAYMENTS; i++) lat2.push(await pay(alice, carol));
    twoHopRate = (PAYMENTS * 1000) / (performance.now() - t0);
  } catch (e) {
    console.log(`two hops: ${(e as Error).message}`);
  }
  const sign = signingCeiling();
  console.log(`payments over one channel (keysend, ${PAYMENTS}, one at a time):`);
  console.log(
    `  ${seqRate.toFixed(1)}/s, latency p50 ${pct(lat, 50).toFixed(1)} ms, p99 ${pct(lat, 99).toFixed(1)} ms`,
  );
  if (lat2.length > 0) {
    console.log(`two hops (alice → bob → carol, one at a time):`);
    console.log(
      `  ${twoHopRate.toFixed(1)}/s, latency p50 ${pct(lat2, 50).toFixed(1)} ms, p99 ${pct(lat2, 99).toFixed(1)} ms`,
    );
  }
  console.log(`signing ceiling: ECDSA ${sign.ecdsa.toFixed(0)}/s, Schnorr ${sign.schnorr.toFixed(0)}/s`);
  console.log(
    `ratio payments / Schnorr signatures: ${(Math.max(seqRate, concRate) / sign.schnorr).toFixed(4)}`,
  );
} finally {
  await net.stop();
}
