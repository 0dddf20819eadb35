/** Confirmation waits against a CKB node's answers: a reorg (committed, then unknown or moved) starts the wait over. */
import { afterEach, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { TxRejected, waitForConfirmations } from '../../src/chain/tracker.ts';
import { type Exchange, exchange, FixtureChain } from './fixture-chain.ts';

const HASH = '0xa0ef4eb5f4ceeb08a4c8524d84c5da95dce2f608e0ca2ec8091191b0f330c6e3';
const BLOCK_A = '0xa5f5c85987a15de25661e5a214f2c1449cd803f071acc7999820f25246471f40';
const BLOCK_B = `0x${'11'.repeat(32)}`;
const tx = (name: string) => exchange('get-transaction.json', name);
const tip = (n: string): Exchange => ({
  request: { method: 'get_tip_block_number' },
  response: { result: n },
});

let chain: FixtureChain | undefined;
afterEach(async () => {
  await chain?.down();
  chain = undefined;
});

describe('waitForConfirmations', () => {
  it('committed, then unknown (reorged out), then committed in another block: one reorg, depth from the new block', async () => {
    // Tip 0x3fd while in block A (0x3fc): depth 1; tip 0x402 once in block B (0x3fd): depth 5.
    chain = await FixtureChain.start([
      tx('committed'),
      tx('unknown'),
      tx('committed-elsewhere'),
      tip('0x3fd'),
      tip('0x402'),
    ]);
    const client = createChainClient({ rpcUrl: chain.url, attempts: 1 });
    const reorgs: (string | undefined)[] = [];
    const c = await waitForConfirmations(client, HASH, {
      confirmations: 5,
      pollMs: 1,
      onReorg: (_h, previous) => {
        reorgs.push(previous);
      },
    });
    expect(reorgs).toEqual([BLOCK_A]);
    expect(c).toMatchObject({ status: 'committed', blockHash: BLOCK_B, blockNumber: 0x3fdn, depth: 5 });
    expect(chain.calls('get_transaction')).toHaveLength(3);
  });

  it('a block that changes under the tx is a reorg too', async () => {
    chain = await FixtureChain.start([
      tx('committed'),
      tx('committed-elsewhere'),
      tip('0x3fd'),
      tip('0x402'),
    ]);
    const client = createChainClient({ rpcUrl: chain.url, attempts: 1 });
    const reorgs: (string | undefined)[] = [];
    const c = await waitForConfirmations(client, HASH, {
      confirmations: 5,
      pollMs: 1,
      onReorg: (_h, previous) => {
        reorgs.push(previous);
      },
    });
    expect(reorgs).toEqual([BLOCK_A]);
    expect(c.blockHash).toBe(BLOCK_B);
  });

  it('a rejected tx ends the wait with TxRejected', async () => {
    chain = await FixtureChain.start([tx('pending'), tx('rejected')]);
    const client = createChainClient({ rpcUrl: chain.url, attempts: 1 });
    await expect(waitForConfirmations(client, HASH, { pollMs: 1 })).rejects.toBeInstanceOf(TxRejected);
  });
});
