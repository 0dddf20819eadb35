/**
 * `npm run bench:devchain`: sighash-all transfers per second through the dev chain — verification
 * alone (dry run: resolution, capacity, since, signature recovery) and the full path (verify, add
 * to the pool, commit in a block to SQLite). Transfers spend distinct cells prepared beforehand.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ccc } from '@ckb-ccc/core';
import { sighashLock } from '../src/chain/address.ts';
import { bytesToHex } from '../src/codec/hex.ts';
import { lockArgsOf } from '../src/crypto/secp256k1.ts';
import { signSighashAll } from '../src/crypto/sighash.ts';
import { DevChain } from '../src/devchain/chain.ts';
import type { ViewCell } from '../src/devchain/validate.ts';

const CKB = 100_000_000n;
const N = Number(process.env.BENCH_TXS ?? 2000);
const KEY = new Uint8Array(32).fill(0xa7);
const lock = sighashLock(bytesToHex(lockArgsOf(KEY)));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-devchain-bench-'));

const t0 = performance.now();
const chain = DevChain.open({ dir, accounts: [{ lock, capacity: BigInt(N + 10) * 200n * CKB }] });
console.log(`chain created (genesis + setup) in ${(performance.now() - t0).toFixed(0)} ms`);

// Fan the funded cell out into N cells of 200 CKB, in batches of 500 outputs.
const deps = chain.scripts.secp256k1_blake160_sighash_all.cellDeps;
function spend(cell: ViewCell, outputs: ccc.CellOutputLike[]): ccc.Transaction {
  const tx = ccc.Transaction.from({
    version: 0,
    cellDeps: deps,
    inputs: [{ previousOutput: cell.outPoint, since: 0n }],
    outputs,
    outputsData: outputs.map(() => '0x'),
  });
  signSighashAll(tx, [0], KEY);
  return tx;
}
let made = 0;
while (made < N) {
  const big = chain
    .liveCellsByLock(lock)
    .sort((a, b) => (a.output.capacity > b.output.capacity ? -1 : 1))[0] as ViewCell;
  const count = Math.min(500, N - made);
  const outs: ccc.CellOutputLike[] = Array.from({ length: count }, () => ({ lock, capacity: 200n * CKB }));
  outs.push({ lock, capacity: big.output.capacity - BigInt(count) * 200n * CKB - 100_000n });
  chain.sendTransaction(spend(big, outs));
  chain.generateBlock();
  made += count;
}
const cells = chain
  .liveCellsByLock(lock)
  .filter((c) => c.output.capacity === 200n * CKB)
  .slice(0, N);
const to = sighashLock(`0x${'42'.repeat(20)}`);
const build0 = performance.now();
const txs = cells.map((c) =>
  spend(c, [
    { lock: to, capacity: 100n * CKB },
    { lock, capacity: 100n * CKB - 1000n },
  ]),
);
const buildMs = performance.now() - build0;

const v0 = performance.now();
for (const tx of txs) chain.dryRun(tx);
const verifyMs = performance.now() - v0;

const s0 = performance.now();
for (const tx of txs) chain.sendTransaction(tx);
chain.generateBlock();
const fullMs = performance.now() - s0;

const per = (ms: number) => ((txs.length / ms) * 1000).toFixed(0);
console.log(`transfers: ${txs.length} (1 input, 2 outputs, sighash-all)`);
console.log(`build + sign:           ${per(buildMs)} tx/s`);
console.log(`verify (dry run):       ${per(verifyMs)} tx/s`);
console.log(`verify + pool + commit: ${per(fullMs)} tx/s (one block of ${txs.length} transactions)`);
chain.close();
fs.rmSync(dir, { recursive: true, force: true });
