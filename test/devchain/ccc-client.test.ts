/**
 * A stock CKB SDK against the dev chain: ccc's JSON-RPC client and its private-key signer build,
 * sign (ccc's own sighash-all) and send a transfer; the dev chain verifies it natively.
 */
import { ccc } from '@ckb-ccc/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesToHex } from '../../src/codec/hex.ts';
import { type DevchainRpcServer, startDevchainRpc } from '../../src/devchain/rpc/server.ts';
import { CKB, KEY_A, KEY_B, lockOf, openTestChain, type TestChain } from './helpers.ts';

let t: TestChain;
let server: DevchainRpcServer;

class DevClient extends ccc.ClientJsonRpc {
  get addressPrefix(): string {
    return 'ckt';
  }
  async getKnownScript(script: ccc.KnownScript): Promise<ccc.ScriptInfo> {
    if (script !== ccc.KnownScript.Secp256k1Blake160) {
      // Not deployed here: a code hash nothing on the chain uses, so lookups find nothing.
      return ccc.ScriptInfo.from({ codeHash: `0x${'ee'.repeat(32)}`, hashType: 'type', cellDeps: [] });
    }
    const s = t.chain.scripts.secp256k1_blake160_sighash_all;
    return ccc.ScriptInfo.from({
      codeHash: s.codeHash,
      hashType: s.hashType,
      cellDeps: s.cellDeps.map((cellDep) => ({ cellDep })),
    });
  }
}

beforeAll(async () => {
  t = openTestChain();
  server = await startDevchainRpc(t.chain, '127.0.0.1', 0);
});
afterAll(async () => {
  await server.close();
  t.close();
});

describe('ccc (a stock CKB SDK) on the dev chain', () => {
  it('reads the chain, then completes, signs and sends a transfer the dev chain accepts', async () => {
    const client = new DevClient(server.url);
    expect(await client.getTip()).toBe(t.chain.tip.number);
    const signer = new ccc.SignerCkbPrivateKey(client, bytesToHex(KEY_A));
    expect((await signer.getRecommendedAddressObj()).script.eq(lockOf(KEY_A))).toBe(true);
    expect(await signer.getBalance()).toBe(10_000n * CKB);
    const tx = ccc.Transaction.from({ outputs: [{ lock: lockOf(KEY_B), capacity: 321n * CKB }] });
    await tx.completeInputsByCapacity(signer);
    await tx.completeFeeBy(signer, 1000);
    const hash = await signer.sendTransaction(tx);
    t.chain.generateBlock();
    const res = await client.getTransaction(hash);
    expect(res?.status).toBe('committed');
    expect((await client.getCellLive({ txHash: hash, index: 0 }, true))?.cellOutput.capacity).toBe(
      321n * CKB,
    );
  });
});
