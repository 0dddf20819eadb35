/** Channel announcements checked against a funding cell on a real dev chain over its RPC. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sighashLock } from '../../src/chain/address.ts';
import { createChainClient } from '../../src/chain/client.ts';
import { createWallet } from '../../src/chain/wallet.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { type DevchainRpcServer, startDevchainRpc } from '../../src/devchain/rpc/server.ts';
import { createChainFundingChecker, FundingCheckError } from '../../src/graph/funding.ts';
import { CKB, KEY_A, openTestChain, type TestChain } from '../devchain/helpers.ts';
import { party, signedChannel } from './gossip-helpers.ts';

let t: TestChain;
let server: DevchainRpcServer;
beforeAll(async () => {
  t = openTestChain();
  server = await startDevchainRpc(t.chain, '127.0.0.1', 0);
});
afterAll(async () => {
  await server.close();
  t.close();
});

describe('funding check on chain', () => {
  it('accepts the announced channel of a committed funding cell and returns its block time', async () => {
    const client = createChainClient({ rpcUrl: server.url });
    const wallet = createWallet({ client, secretKey: KEY_A });
    const chainHash = new Uint8Array(32).fill(1);
    const probe = signedChannel(party(1), party(2), chainHash, { txHash: new Uint8Array(32), index: 0 });
    const args = bytesToHex(ckbHash(probe.ckbKey).slice(0, 20));
    const txHash = await wallet.transfer(sighashLock(args), 500n * CKB);
    const op = { txHash: new Uint8Array(Buffer.from(txHash.slice(2), 'hex')), index: 0 };
    const checker = createChainFundingChecker(client);

    const ca = signedChannel(party(1), party(2), chainHash, op, 500n * CKB);
    await expect(checker.check(ca)).rejects.toThrow(/not found or not confirmed/);
    await client.generateBlock();
    const ts = await checker.check(ca);
    const header = await client.call<{ timestamp: string }>('get_header', [
      (await client.getTransaction(txHash))!.tx_status.block_hash,
    ]);
    expect(ts).toBe(BigInt(header.timestamp));

    await expect(checker.check(signedChannel(party(1), party(2), chainHash, op, 501n * CKB))).rejects.toThrow(
      /capacity mismatched/,
    );
    await expect(checker.check(signedChannel(party(3), party(4), chainHash, op, 1n))).rejects.toBeInstanceOf(
      FundingCheckError,
    );
    await expect(
      checker.check(
        signedChannel(party(1), party(2), chainHash, { txHash: new Uint8Array(32).fill(9), index: 0 }),
      ),
    ).rejects.toThrow(/not found/);
  });
});
