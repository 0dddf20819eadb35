/**
 * The wallet against a testnet node's answers when the pool refuses a transfer's fee: it builds
 * the transfer again at a higher rate (the pool's stated minimum, or double) and sends that.
 */
import { ccc } from '@ckb-ccc/core';
import { cccA } from '@ckb-ccc/core/advanced';
import { afterEach, describe, expect, it } from 'vitest';
import { CkbRpcError, createChainClient } from '../../src/chain/client.ts';
import { createWallet } from '../../src/chain/wallet.ts';
import { hexToBytes } from '../../src/codec/hex.ts';
import { type Exchange, exchange, FixtureChain, fixture } from './fixture-chain.ts';

const CKB = 100_000_000n;
const KEY = hexToBytes(`0x${'a1'.repeat(32)}`);
const IN_CAPACITY = 1000n * CKB;
const walletCell: Exchange = {
  request: { method: 'get_cells' },
  response: {
    result: {
      last_cursor: '0x',
      objects: [
        {
          block_number: '0x12d6b00',
          out_point: { tx_hash: `0x${'5a'.repeat(32)}`, index: '0x0' },
          output: {
            capacity: `0x${IN_CAPACITY.toString(16)}`,
            lock: {
              code_hash: '0x9bd7e06f3ecf4be0f2fcd2188b23f1b9fcc88e5d4b65a8637b17723bbda3cce8',
              hash_type: 'type',
              args: `0x${'00'.repeat(20)}`,
            },
            type: null,
          },
          output_data: '0x',
          tx_index: '0x1',
        },
      ],
    },
  },
};
const send = (name: string) => exchange('send-transaction.json', name);

let chain: FixtureChain | undefined;
afterEach(async () => {
  await chain?.down();
  chain = undefined;
});

/** Fee rate (shannons per 1000 bytes in a block) of each transaction sent. */
function sentRates(c: FixtureChain): bigint[] {
  return c.calls('send_transaction').map((p) => {
    const tx = ccc.Transaction.from(cccA.JsonRpcTransformers.transactionTo(p[0] as never));
    const fee = IN_CAPACITY - tx.outputs.reduce((s, o) => s + o.capacity, 0n);
    return (fee * 1000n) / BigInt(tx.toBytes().length + 4);
  });
}

async function walletOn(sends: Exchange[], feeRate = 500n) {
  chain = await FixtureChain.start([
    ...fixture('testnet.json').filter((e) => e.request.method !== 'get_cells'),
    walletCell,
    ...sends,
  ]);
  const warned: string[] = [];
  const wallet = createWallet({
    client: createChainClient({ rpcUrl: chain.url, attempts: 1 }),
    secretKey: KEY,
    feeRate,
    logger: { warn: (_o, msg) => warned.push(msg ?? '') },
  });
  return { wallet, warned, chain };
}

describe('wallet transfer refused for its fee', () => {
  it('below the pool minimum: sent again at the stated minimum, which the wallet keeps', async () => {
    const { wallet, warned, chain: c } = await walletOn([send('min-fee-rate'), send('ok')]);
    const to = wallet.lockScript;
    expect(await wallet.transfer(to, 100n * CKB)).toBe(
      '0xa0ef4eb5f4ceeb08a4c8524d84c5da95dce2f608e0ca2ec8091191b0f330c6e3',
    );
    const [first, second] = sentRates(c);
    expect(first).toBeGreaterThanOrEqual(500n);
    expect(first).toBeLessThan(2000n);
    // "The min fee rate is 2000 shannons/KW": above double the 500 configured.
    expect(second).toBeGreaterThanOrEqual(2000n);
    expect(wallet.feeRate()).toBe(2000n);
    expect(warned).toEqual(['fee refused by the pool: sending again at a higher rate']);
    // Both sends spend the same cell: the refused one gave it back.
    const inputs = c
      .calls('send_transaction')
      .map((p) => JSON.stringify((p[0] as { inputs: unknown }).inputs));
    expect(inputs[0]).toBe(inputs[1]);
    // On a CKB node (no get_dev_scripts) the sighash dep group is genesis tx 1, output 0.
    expect((c.calls('send_transaction')[0]![0] as { cell_deps: unknown }).cell_deps).toEqual([
      {
        out_point: {
          tx_hash: '0xf8de3bb47d055cdf460d93a2a6e1b05f7432f9777c8c474abf4eec1d4aee5d37',
          index: '0x0',
        },
        dep_type: 'dep_group',
      },
    ]);
  });

  it('outbid under RBF (no rate stated): double the rate', async () => {
    const { wallet, chain: c } = await walletOn([send('rbf-fee'), send('ok')], 1000n);
    await wallet.transfer(wallet.lockScript, 100n * CKB);
    expect(wallet.feeRate()).toBe(2000n);
    expect(sentRates(c)[1]).toBeGreaterThanOrEqual(2000n);
  });

  it('a refusal that is not about the fee fails the transfer at once', async () => {
    const { wallet, chain: c } = await walletOn([send('resolve-dead')]);
    const err = await wallet.transfer(wallet.lockScript, 100n * CKB).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CkbRpcError);
    expect((err as CkbRpcError).kind).toBe('unresolvable');
    expect(c.calls('send_transaction')).toHaveLength(1);
    expect(wallet.feeRate()).toBe(500n);
  });

  it('gives up after four raises', async () => {
    const { wallet, chain: c } = await walletOn([send('rbf-fee')], 1000n);
    await expect(wallet.transfer(wallet.lockScript, 100n * CKB)).rejects.toBeInstanceOf(CkbRpcError);
    expect(c.calls('send_transaction')).toHaveLength(5);
    expect(wallet.feeRate()).toBe(16_000n);
  });
});
