// biome-ignore-all lint/suspicious/noExplicitAny: RPC responses are untyped JSON here
import { ccc } from '@ckb-ccc/core';
import { cccA } from '@ckb-ccc/core/advanced';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ChainClient,
  CkbRpcError,
  createChainClient,
  scriptToJson,
  txToJson,
} from '../../src/chain/client.ts';
import { type DevchainRpcServer, startDevchainRpc } from '../../src/devchain/rpc/server.ts';
import { CKB, KEY_A, KEY_B, lockOf, openTestChain, simpleTransfer, type TestChain } from './helpers.ts';

let t: TestChain;
let server: DevchainRpcServer;
let client: ChainClient;
const rpc = <T = any>(method: string, params: unknown[] = []) => client.call<T>(method, params);

// Ten small cells for B whose args share a prefix, to page through.
const prefixLock = (i: number) =>
  ccc.Script.from({ ...lockOf(KEY_B), args: `0x${'ab'.repeat(19)}${i.toString(16).padStart(2, '0')}` });

beforeAll(async () => {
  t = openTestChain();
  server = await startDevchainRpc(t.chain, '127.0.0.1', 0);
  client = createChainClient({ rpcUrl: server.url, attempts: 1 });
  for (let i = 0; i < 10; i++) {
    t.chain.sendTransaction(simpleTransfer(t.chain, KEY_A, prefixLock(i), 100n * CKB + BigInt(i)));
    t.chain.generateBlock();
  }
});
afterAll(async () => {
  await server.close();
  t.close();
});

describe('dev chain JSON-RPC: chain methods', () => {
  it('get_consensus names the system scripts by their type hashes, as a CKB SDK reads them', async () => {
    const c = await rpc('get_consensus');
    expect(c.id).toBe('ckb_dev');
    expect(c.genesis_hash).toBe((await rpc('get_block_by_number', ['0x0'])).header.hash);
    // CKB's well-known dev-chain type hashes of the bundled sighash and multisig cells.
    expect(c.secp256k1_blake160_sighash_all_type_hash).toBe(
      '0x9bd7e06f3ecf4be0f2fcd2188b23f1b9fcc88e5d4b65a8637b17723bbda3cce8',
    );
    expect(c.secp256k1_blake160_multisig_all_type_hash).toBe(
      '0x5c5069eb0857efc65e1bca0c07df34c31663b3622fd3876c876320fc9634e2a8',
    );
    expect(c.dao_type_hash).toBe('0x82d76d1b75fe2fd9a27dfbaa65a039221a380d76c926f378d3f81cf3e7e13f2e');
    expect(c.hardfork_features.map((f: { rfc: string }) => f.rfc)).toContain('0049');
  });

  it('get_epoch_by_number answers the epochs reached, null beyond; get_current_epoch agrees', async () => {
    const current = await rpc('get_current_epoch');
    expect(await rpc('get_epoch_by_number', [current.number])).toEqual(current);
    expect((await rpc('get_epoch_by_number', ['0x0'])).start_number).toBe('0x0');
    expect(await rpc('get_epoch_by_number', [`0x${(BigInt(current.number) + 1n).toString(16)}`])).toBeNull();
    await expect(rpc('get_epoch_by_number', [])).rejects.toThrow(/InvalidParams/);
  });

  it('serves headers and blocks in CKB shapes, genesis included', async () => {
    const tip = await rpc('get_tip_header');
    expect(Object.keys(tip).sort()).toEqual([
      'compact_target',
      'dao',
      'epoch',
      'extra_hash',
      'hash',
      'nonce',
      'number',
      'parent_hash',
      'proposals_hash',
      'timestamp',
      'transactions_root',
      'version',
    ]);
    expect(await rpc('get_tip_block_number')).toBe(tip.number);
    expect(await rpc('get_header', [tip.hash])).toEqual(tip);
    expect(await rpc('get_header_by_number', [tip.number])).toEqual(tip);
    expect(await rpc('get_header', [`0x${'00'.repeat(32)}`])).toBeNull();
    const genesis = await rpc('get_block_by_number', ['0x0']);
    expect(genesis.header.hash).toBe('0x677c33a40ddd906cdb6ca996d80081a0a6da2ff40050525da640d5c24d557614');
    expect(genesis.transactions[1].hash).toBe(
      '0x154518a71076c327a5dd3945cd6250deeca8051fa08ec7da2a6078ef1ad5fcba',
    );
    // The block as served re-hashes to the same transactions (the reference node re-hashes them).
    const tx0 = ccc.Transaction.from(
      (await import('@ckb-ccc/core/advanced')).cccA.JsonRpcTransformers.transactionTo(
        genesis.transactions[1],
      ),
    );
    expect(tx0.hash()).toBe(genesis.transactions[1].hash);
    expect(await client.chainHash()).toBe(genesis.header.hash);
    const b1 = await rpc('get_block', [await rpc('get_block_hash', ['0x1'])]);
    expect(b1.header.number).toBe('0x1');
    expect(BigInt(await rpc('get_block_median_time', [tip.hash]))).toBeGreaterThan(0n);
    const info = await rpc('get_blockchain_info');
    expect(info.chain).toBe('ckb_dev');
  });

  it('sends, finds and tracks a transaction; live cells turn unknown when spent', async () => {
    const tx = simpleTransfer(t.chain, KEY_A, lockOf(KEY_B), 200n * CKB);
    const hash = await client.sendTransaction(tx);
    expect(hash).toBe(tx.hash());
    expect((await rpc('get_transaction', [hash])).tx_status.status).toBe('pending');
    await rpc('generate_block');
    const got = await rpc('get_transaction', [hash]);
    expect(got.tx_status.status).toBe('committed');
    expect(got.transaction.hash).toBe(hash);
    const live = await rpc('get_live_cell', [{ tx_hash: hash, index: '0x0' }, true]);
    expect(live).toMatchObject({
      status: 'live',
      cell: { output: { capacity: `0x${(200n * CKB).toString(16)}` }, data: { content: '0x' } },
    });
    const spentInput = tx.inputs[0] as ccc.CellInput;
    expect(
      (
        await rpc('get_live_cell', [
          {
            tx_hash: spentInput.previousOutput.txHash,
            index: `0x${spentInput.previousOutput.index.toString(16)}`,
          },
          false,
        ])
      ).status,
    ).toBe('unknown');
    expect((await rpc('get_transaction', [`0x${'12'.repeat(32)}`])).tx_status.status).toBe('unknown');
  });

  it('returns CKB error codes and texts for rejected transactions', async () => {
    const tx = simpleTransfer(t.chain, KEY_A, lockOf(KEY_B), 100n * CKB);
    (tx.outputs[0] as ccc.CellOutput).capacity += 1n; // breaks the signature
    const err = await client.sendTransaction(tx).catch((e) => e);
    expect(err).toBeInstanceOf(CkbRpcError);
    expect(err.code).toBe(-302);
    expect(err.message).toMatch(
      /^TransactionFailedToVerify: Verification failed Script\(TransactionScriptError \{ source: Inputs\[0\]\.Lock/,
    );
    const json = txToJson(simpleTransfer(t.chain, KEY_A, lockOf(KEY_B), 100n * CKB)) as {
      inputs: { since: string }[];
    };
    (json.inputs[0] as { since: string }).since = '0x6000000000000000';
    await expect(rpc('send_transaction', [json])).rejects.toMatchObject({
      code: -302,
      message: /InvalidSince\(Inputs\[0\]\)/,
    });
    await expect(rpc('send_transaction', [{ version: '0x0' }])).rejects.toMatchObject({ code: -32602 });
  });

  it('generate_epochs advances by whole and fractional epochs', async () => {
    const before = BigInt((await rpc('get_tip_header')).number);
    const epoch = BigInt(await rpc('generate_epochs', ['0x1']));
    const after = BigInt((await rpc('get_tip_header')).number);
    expect(after - before).toBe(10n);
    expect(epoch).toBe(BigInt((await rpc('get_tip_header')).epoch));
    const half = 0n | (1n << 24n) | (2n << 40n); // 1/2 epoch
    await rpc('generate_epochs', [`0x${half.toString(16)}`]);
    expect(BigInt((await rpc('get_tip_header')).number) - after).toBe(5n);
    await expect(rpc('generate_epochs', ['0xffffff'])).rejects.toMatchObject({
      code: -32602,
      message: /limit per call/,
    });
  });

  it('describes its scripts and their cell deps in CKB JSON', async () => {
    const s = await rpc('get_dev_scripts');
    expect(s.secp256k1_blake160_sighash_all).toEqual({
      script: {
        code_hash: '0x9bd7e06f3ecf4be0f2fcd2188b23f1b9fcc88e5d4b65a8637b17723bbda3cce8',
        hash_type: 'type',
        args: '0x',
      },
      cell_deps: [
        {
          out_point: {
            tx_hash: '0x154518a71076c327a5dd3945cd6250deeca8051fa08ec7da2a6078ef1ad5fcba',
            index: '0x0',
          },
          dep_type: 'dep_group',
        },
      ],
    });
    expect(s.funding_lock.script).toEqual({
      code_hash: t.chain.scripts.funding_lock.codeHash,
      hash_type: 'data2',
      args: '0x',
    });
    expect(s.commitment_lock.cell_deps[0].dep_type).toBe('code');
    expect(s.test_udt.script.args).toBe(t.chain.scripts.test_udt.args);
    // The test xUDT: the same owner (the faucet lock), on the xUDT code cell.
    expect(s.test_xudt).toEqual({
      script: { code_hash: s.xudt.script.code_hash, hash_type: 'data2', args: s.test_udt.script.args },
      cell_deps: s.xudt.cell_deps,
    });
    expect(s.test_xudt.script.code_hash).not.toBe(s.test_udt.script.code_hash);
  });

  it('answers malformed requests like a JSON-RPC server', async () => {
    const post = (body: string) =>
      fetch(server.url, { method: 'POST', body, headers: { 'content-type': 'application/json' } }).then(
        async (r) => ({
          cors: r.headers.get('access-control-allow-origin'),
          json: (await r.json()) as any,
        }),
      );
    expect((await post('{not json')).json.error.code).toBe(-32700);
    expect((await post('{"jsonrpc":"2.0","id":1,"method":"nope","params":[]}')).json.error.code).toBe(-32601);
    const bad = await post('{"jsonrpc":"2.0","id":1,"method":"get_header_by_number","params":["12"]}');
    expect(bad.json.error.code).toBe(-32602);
    expect(bad.cors).toBe('*');
    const batch = await post(
      '[{"jsonrpc":"2.0","id":1,"method":"get_tip_block_number","params":[]},{"jsonrpc":"2.0","id":2,"method":"x"}]',
    );
    expect(batch.json[0].result).toMatch(/^0x/);
    expect(batch.json[1].error.code).toBe(-32601);
  });
});

describe('dev chain JSON-RPC: indexer', () => {
  const prefixKey = (extra: object = {}) => ({
    script: { ...scriptToJson(prefixLock(0)), args: `0x${'ab'.repeat(19)}` },
    script_type: 'lock',
    script_search_mode: 'prefix',
    ...extra,
  });

  it('prefix search finds all ten cells; exact finds one; partial matches on byte boundaries', async () => {
    const all = await rpc('get_cells', [prefixKey(), 'asc', '0x64']);
    expect(all.objects).toHaveLength(10);
    expect(all.objects.map((o: any) => BigInt(o.output.capacity) - 100n * CKB)).toEqual(
      [...Array(10).keys()].map(BigInt),
    );
    const exact = await rpc('get_cells', [
      { script: scriptToJson(prefixLock(3)), script_type: 'lock', script_search_mode: 'exact' },
      'asc',
      '0x64',
    ]);
    expect(exact.objects).toHaveLength(1);
    const partial = await rpc('get_cells', [
      {
        ...prefixKey(),
        script: { ...scriptToJson(prefixLock(0)), args: '0xab07' },
        script_search_mode: 'partial',
      },
      'asc',
      '0x64',
    ]);
    expect(partial.objects).toHaveLength(1);
    const misaligned = await rpc('get_cells', [
      {
        ...prefixKey(),
        script: { ...scriptToJson(prefixLock(0)), args: '0xbaba' },
        script_search_mode: 'partial',
      },
      'asc',
      '0x64',
    ]);
    expect(misaligned.objects).toHaveLength(0);
  });

  it('pages with a cursor in both orders without gaps or repeats', async () => {
    for (const order of ['asc', 'desc'] as const) {
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 6; page++) {
        const r = await rpc(
          'get_cells',
          cursor ? [prefixKey(), order, '0x3', cursor] : [prefixKey(), order, '0x3'],
        );
        seen.push(...r.objects.map((o: any) => o.out_point.tx_hash));
        cursor = r.last_cursor;
        if (r.objects.length < 3) break;
      }
      expect(seen).toHaveLength(10);
      expect(new Set(seen).size).toBe(10);
      const numbers = seen.map((h) => t.chain.transaction(h)?.blockNumber as bigint);
      const sorted = [...numbers].sort((a, b) => (a < b ? -1 : 1));
      expect(numbers).toEqual(order === 'asc' ? sorted : sorted.reverse());
    }
  });

  it('filters by capacity, data length, block range and type-script length', async () => {
    const r = await rpc('get_cells', [
      prefixKey({
        filter: {
          output_capacity_range: [`0x${(100n * CKB + 5n).toString(16)}`, `0x${(200n * CKB).toString(16)}`],
        },
      }),
      'asc',
      '0x64',
    ]);
    expect(r.objects).toHaveLength(5);
    // u64 bounds past SQLite's signed 64 bits, as fnn's cell collector sends them (to u64::MAX).
    const U64_MAX = '0xffffffffffffffff';
    const open = await rpc('get_cells', [
      prefixKey({ filter: { output_capacity_range: [`0x${(100n * CKB + 5n).toString(16)}`, U64_MAX] } }),
      'asc',
      '0x64',
    ]);
    expect(open.objects.length).toBeGreaterThanOrEqual(5);
    const past = await rpc('get_cells', [
      prefixKey({ filter: { output_capacity_range: ['0x8000000000000000', U64_MAX] } }),
      'asc',
      '0x64',
    ]);
    expect(past.objects).toHaveLength(0);
    const capacity = await rpc('get_cells_capacity', [
      prefixKey({ filter: { output_data_len_range: ['0x0', U64_MAX] } }),
    ]);
    expect(BigInt(capacity.capacity)).toBeGreaterThan(0n);
    const noType = await rpc('get_cells', [
      prefixKey({ filter: { script_len_range: ['0x0', '0x1'] } }),
      'asc',
      '0x64',
    ]);
    expect(noType.objects).toHaveLength(10);
    const typed = await rpc('get_cells', [
      prefixKey({ filter: { script_len_range: ['0x1', '0x100'] } }),
      'asc',
      '0x64',
    ]);
    expect(typed.objects).toHaveLength(0);
    const early = await rpc('get_cells', [
      prefixKey({ filter: { block_range: ['0x0', '0x5'] } }),
      'asc',
      '0x64',
    ]);
    expect(early.objects).toHaveLength(3); // blocks 2, 3, 4
    const noData = await rpc('get_cells', [prefixKey({ with_data: false }), 'asc', '0x1']);
    expect(noData.objects[0].output_data).toBeNull();
    const cap = await client.getCellsCapacity(prefixKey() as any);
    expect(cap).toBe(1000n * CKB + 45n);
  });

  it('finds the test UDT by type script and sums capacity', async () => {
    const key = {
      script: scriptToJson(t.chain.scripts.test_udt),
      script_type: 'type',
      script_search_mode: 'exact',
    };
    const r = await rpc('get_cells', [key, 'asc', '0x64']);
    expect(r.objects).toHaveLength(2);
    expect(
      r.objects.map((o: any) => BigInt(`0x${o.output_data.slice(2).match(/../g).reverse().join('')}`)),
    ).toEqual([1000n, 1000n]);
  });

  it('lists transactions grouped and ungrouped', async () => {
    const flat = await rpc('get_transactions', [prefixKey(), 'asc', '0x64']);
    expect(flat.objects).toHaveLength(10);
    expect(flat.objects[0]).toMatchObject({ io_type: 'output', io_index: '0x0' });
    const grouped = await rpc('get_transactions', [prefixKey({ group_by_transaction: true }), 'desc', '0x4']);
    expect(grouped.objects).toHaveLength(4);
    expect(grouped.objects[0].cells).toEqual([['output', '0x0']]);
    const next = await rpc('get_transactions', [
      prefixKey({ group_by_transaction: true }),
      'desc',
      '0x64',
      grouped.last_cursor,
    ]);
    expect(next.objects).toHaveLength(6);
    // A's lock appears as input and output (change) of each of its transfers.
    const a = await rpc('get_transactions', [
      { script: scriptToJson(lockOf(KEY_A)), script_type: 'lock', group_by_transaction: true },
      'desc',
      '0x1',
    ]);
    expect(a.objects[0].cells).toEqual([
      ['input', '0x0'],
      ['output', '0x1'],
    ]);
  });

  it('rejects bad limits and cursors', async () => {
    await expect(rpc('get_cells', [prefixKey(), 'asc', '0x0'])).rejects.toMatchObject({ code: -1200 });
    await expect(rpc('get_cells', [prefixKey(), 'asc', '0x1', '0x12'])).rejects.toMatchObject({
      code: -1200,
    });
    await expect(rpc('get_cells', [prefixKey(), 'sideways', '0x1'])).rejects.toMatchObject({ code: -32602 });
  });

  it('names the param and its limit or expected form in faucet refusals', async () => {
    const address = 'ckt1qzda0cr08m85hc8jlnfp3zer7xulejywt49kt2rr0vthywaa50xwsqgx7g4s3';
    await expect(rpc('faucet', [address, `0x1${'0'.repeat(16)}`])).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining(
        'param 1 (capacity in shannons): out of range: the u64 maximum is 0xffffffffffffffff',
      ),
    });
    await expect(rpc('faucet', ['ckt1nope', '0x1'])).rejects.toMatchObject({
      code: -32602,
      message: expect.stringMatching(
        /param 0 \(address\): invalid CKB address 'ckt1nope'.*ckt1… on a dev chain/,
      ),
    });
  });
});

describe('dev chain JSON-RPC: the faucet', () => {
  it('issues the test xUDT as its fourth param, the test UDT as its third', async () => {
    const to = { code_hash: lockOf(KEY_A).codeHash, hash_type: 'type', args: `0x${'cd'.repeat(20)}` };
    await rpc('faucet', [to, `0x${(500n * CKB).toString(16)}`, '0x0', '0x2a']);
    await rpc('faucet', [to, `0x${(500n * CKB).toString(16)}`, '0x7']);
    await rpc('generate_block');
    const s = await rpc('get_dev_scripts');
    const amounts = async (type: unknown) => {
      const key = { script: to, script_type: 'lock', filter: { script: type } };
      const r = await rpc('get_cells', [key, 'asc', '0x64']);
      return r.objects.map((o: any) => ccc.numLeFromBytes(ccc.bytesFrom(o.output_data)));
    };
    expect(await amounts(s.test_xudt.script)).toEqual([42n]);
    expect(await amounts(s.test_udt.script)).toEqual([7n]);
  });
});

describe('dev chain JSON-RPC: read by a stock CKB client library', () => {
  it("ccc's JSON-RPC transformers parse headers, blocks, transactions and indexer pages", async () => {
    const T = cccA.JsonRpcTransformers;
    const header = T.blockHeaderTo(await rpc('get_tip_header'));
    expect(header.number).toBe(t.chain.tip.number);
    expect(header.hash).toBe(t.chain.tipHash);
    const block = T.blockTo(await rpc('get_block_by_number', ['0x1']));
    expect(block.transactions).toHaveLength(3); // cellbase, deploy, funding
    const setupHash = (block.transactions[1] as ccc.Transaction).hash();
    const res = T.transactionResponseTo(await rpc('get_transaction', [setupHash]));
    expect(res?.status).toBe('committed');
    expect(res?.blockNumber).toBe(1n);
    const page = T.findCellsResponseTo(
      await rpc('get_cells', [{ script: scriptToJson(lockOf(KEY_A)), script_type: 'lock' }, 'asc', '0x10']),
    );
    expect(page.cells.length).toBeGreaterThan(0);
    expect(page.cells[0]?.cellOutput.lock.eq(lockOf(KEY_A))).toBe(true);
  });
});
