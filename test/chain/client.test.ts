/**
 * The chain client against a CKB node's recorded answers (fixtures/README.md): results parsed,
 * the pool's refusals classified, a node that goes away and comes back.
 */
import { ccc } from '@ckb-ccc/core';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ChainUnreachableError,
  CkbRpcError,
  createChainClient,
  describeChainStatus,
} from '../../src/chain/client.ts';
import { exchange, FixtureChain, fixture } from './fixture-chain.ts';

let chain: FixtureChain | undefined;
afterEach(async () => {
  await chain?.down();
  chain = undefined;
});

const sampleTx = () =>
  ccc.Transaction.from({
    cellDeps: [
      {
        outPoint: { txHash: '0xa4037a893eb48e18ed4ef61034ce26eba9c585f15c9cee102ae58505565eccc3', index: 0 },
        depType: 'code',
      },
    ],
    inputs: [
      {
        previousOutput: {
          txHash: '0x365698b50ca0da75dca2c87f9e7b563811d3b5813736b8cc62cc3b106faceb17',
          index: 0,
        },
      },
    ],
    outputs: [
      { capacity: 10_000_000_000n, lock: { codeHash: `0x${'28'.repeat(32)}`, hashType: 'data', args: '0x' } },
    ],
    outputsData: ['0x'],
  });

async function sendWith(name: string) {
  chain = await FixtureChain.start([exchange('send-transaction.json', name)]);
  const client = createChainClient({ rpcUrl: chain.url, attempts: 1 });
  return client.sendTransaction(sampleTx());
}

async function refusal(name: string): Promise<CkbRpcError> {
  const e = await sendWith(name).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(CkbRpcError);
  return e as CkbRpcError;
}

describe('chain client against CKB answers', () => {
  it('reads the tip header, the genesis hash, the tip number', async () => {
    chain = await FixtureChain.start(fixture('chain.json'));
    const client = createChainClient({ rpcUrl: chain.url, attempts: 1 });
    const h = await client.tipHeader();
    expect(h).toEqual({
      hash: '0xa5f5c85987a15de25661e5a214f2c1449cd803f071acc7999820f25246471f40',
      number: 0x400n,
      epoch: '0x7080018000001',
      timestamp: 0x5cd2b117n,
      parentHash: '0xae003585fa15309b30b31aed3dcf385e9472c3c3e93746a6c4540629a6a1ed2d',
    });
    expect(await client.chainHash()).toBe(
      '0x10639e0895502b5688a6be8cf69460d76541bfa4821629d86d62ba0aae3f9606',
    );
    expect(await client.tipBlockNumber()).toBe(0x400n);
    expect(describeChainStatus(client.status())).toBe('ok');
  });

  it('pages the indexer: get_cells and get_transactions, with the search key CKB expects', async () => {
    chain = await FixtureChain.start(fixture('indexer.json'));
    const client = createChainClient({ rpcUrl: chain.url, attempts: 1 });
    const key = {
      script: {
        code_hash: '0x9bd7e06f3ecf4be0f2fcd2188b23f1b9fcc88e5d4b65a8637b17723bbda3cce8',
        hash_type: 'type',
        args: '0x5989ae415bb667931a99896e5fbbfad9ba53a223',
      },
      script_type: 'lock' as const,
    };
    const cells = await client.getCells(key, 'asc', 100);
    expect(cells.objects.map((c) => c.output.capacity)).toEqual(['0x174876e800', '0x189640200']);
    expect(cells.last_cursor).toMatch(/^0x40/);
    const txs = await client.getTransactions(key, 'asc', 100);
    expect(txs.objects.map((t) => [t.io_type, t.block_number])).toEqual([
      ['output', '0x5b033a'],
      ['input', '0x5b0671'],
    ]);
    expect(chain.calls('get_transactions')[0]).toEqual([key, 'asc', '0x64']);
  });

  it('get_transaction: pending and committed come back with their status; unknown is null', async () => {
    chain = await FixtureChain.start([
      exchange('get-transaction.json', 'pending'),
      exchange('get-transaction.json', 'committed'),
      exchange('get-transaction.json', 'unknown'),
    ]);
    const client = createChainClient({ rpcUrl: chain.url, attempts: 1 });
    const hash = '0xa0ef4eb5f4ceeb08a4c8524d84c5da95dce2f608e0ca2ec8091191b0f330c6e3';
    expect((await client.getTransaction(hash))?.tx_status.status).toBe('pending');
    const committed = await client.getTransaction(hash);
    expect(committed?.tx_status).toMatchObject({ status: 'committed', block_number: '0x3fc' });
    expect(await client.getTransaction(hash)).toBeNull();
  });

  it('send_transaction passes outputs_validator passthrough and returns the hash', async () => {
    expect(await sendWith('ok')).toBe('0xa0ef4eb5f4ceeb08a4c8524d84c5da95dce2f608e0ca2ec8091191b0f330c6e3');
    expect(chain?.calls('send_transaction')[0]?.[1]).toBe('passthrough');
  });

  it('PoolRejectedDuplicatedTransaction means already sent: the send resolves to the tx hash', async () => {
    expect(await sendWith('duplicated')).toBe(sampleTx().hash());
  });

  it('classifies the pool refusals by code: fee too low (with the stated minimum), RBF, resolve, pool', async () => {
    const low = await refusal('min-fee-rate');
    expect([low.code, low.kind, low.minFeeRate]).toEqual([-1104, 'fee_too_low', 2000n]);
    const rbf = await refusal('rbf-fee');
    expect([rbf.code, rbf.kind]).toEqual([-1111, 'fee_too_low']);
    // An RBF refusal that is not about the fee is not fixed by paying more.
    expect((await refusal('rbf-unconfirmed-inputs')).kind).toBe('other');
    expect((await refusal('resolve-unknown')).kind).toBe('unresolvable');
    expect((await refusal('resolve-dead')).kind).toBe('unresolvable');
    expect((await refusal('pool-full')).kind).toBe('pool_busy');
    expect((await refusal('expired')).kind).toBe('expired');
  });

  it('fee rate: the median of recent blocks when above the floor, the floor when the node has none', async () => {
    chain = await FixtureChain.start(fixture('chain.json'));
    const client = createChainClient({ rpcUrl: chain.url, attempts: 1 });
    expect(await client.feeRate(1000n)).toBe(0x14a8n);
    expect(await client.feeRate(9000n)).toBe(9000n);
    chain.replace('get_fee_rate_statistics', {
      request: { method: 'get_fee_rate_statistics' },
      response: { result: null },
    });
    expect(await client.feeRate(1000n)).toBe(1000n);
    chain.replace('get_fee_rate_statistics'); // an older node: method not found
    expect(await client.feeRate(1000n)).toBe(1000n);
  });

  it('a node that goes away: retries with back-off, then unreachable since the first failure; ok when back', async () => {
    chain = await FixtureChain.start(fixture('chain.json'));
    const warnings: { attempt?: number; retryInMs?: number }[] = [];
    const client = createChainClient({
      rpcUrl: chain.url,
      attempts: 3,
      backoffMs: 5,
      logger: { warn: (o) => warnings.push(o), info: () => {} },
    });
    expect(await client.tipBlockNumber()).toBe(0x400n);
    await chain.down();
    const before = Date.now();
    await expect(client.tipBlockNumber()).rejects.toBeInstanceOf(ChainUnreachableError);
    // Two waits before the third and last attempt, the second twice the first.
    expect(warnings.filter((w) => w.retryInMs !== undefined).map((w) => w.retryInMs)).toEqual([5, 10]);
    const s = client.status();
    expect(s.state).toBe('unreachable');
    if (s.state !== 'unreachable') return;
    expect(s.since.getTime()).toBeGreaterThanOrEqual(before - 1);
    expect(describeChainStatus(s)).toBe(`unreachable since ${s.since.toISOString()}`);
    // Still away: the time stays that of the first failure.
    await expect(client.tipBlockNumber()).rejects.toBeInstanceOf(ChainUnreachableError);
    expect(client.status()).toEqual(s);
    await chain.up();
    expect(await client.tipBlockNumber()).toBe(0x400n);
    expect(client.status()).toEqual({ state: 'ok' });
  });

  it('a call made while the node is away succeeds once it comes back within the retries', async () => {
    chain = await FixtureChain.start(fixture('chain.json'));
    const c = chain;
    await c.down();
    let restarted: Promise<void> | undefined;
    const client = createChainClient({
      rpcUrl: c.url,
      attempts: 5,
      backoffMs: 20,
      // The node comes back while the client waits out its first back-off.
      logger: {
        warn: () => {
          restarted ??= c.up();
        },
        info: () => {},
      },
    });
    expect(await client.tipBlockNumber()).toBe(0x400n);
    expect(restarted).toBeDefined();
    expect(client.status()).toEqual({ state: 'ok' });
  });
});
