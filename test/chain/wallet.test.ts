import net from 'node:net';
import { ccc } from '@ckb-ccc/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressToScript, sighashLock } from '../../src/chain/address.ts';
import { ChainUnreachableError, createChainClient } from '../../src/chain/client.ts';
import { txConfirmation, waitForConfirmations } from '../../src/chain/tracker.ts';
import { createWallet, InsufficientFunds } from '../../src/chain/wallet.ts';
import { type DevchainRpcServer, startDevchainRpc } from '../../src/devchain/rpc/server.ts';
import { CKB, KEY_A, lockOf, openTestChain, type TestChain } from '../devchain/helpers.ts';

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

describe('wallet over the dev chain RPC', () => {
  it('derives the lock and address of its key', () => {
    const client = createChainClient({ rpcUrl: server.url });
    const w = createWallet({ client, secretKey: KEY_A });
    expect(w.lockScript.eq(lockOf(KEY_A))).toBe(true);
    expect(w.address.startsWith('ckt1')).toBe(true);
    expect(addressToScript(w.address).eq(w.lockScript)).toBe(true);
  });

  it('transfers CKB, pays a size-based fee, and both balances move', async () => {
    const client = createChainClient({ rpcUrl: server.url });
    // Without waiting for its own transactions in flight (that is checked below).
    const a = createWallet({ client, secretKey: KEY_A, pendingWaitMs: 0 });
    const toKey = new Uint8Array(32).fill(0x5c);
    const b = createWallet({ client, secretKey: toKey });
    const a0 = await a.balance();
    expect(a0).toBe(10_000n * CKB + 142n * CKB); // plain cell + the UDT cell's capacity
    expect(await b.balance()).toBe(0n);
    const hash = await a.transfer(b.lockScript, 300n * CKB);
    // A second transfer before the first is mined must not reuse its input.
    const hash2 = await a.transfer(b.lockScript, 100n * CKB).catch((e) => e);
    expect(hash2).toBeInstanceOf(InsufficientFunds);
    await client.generateBlock();
    expect(await b.balance()).toBe(300n * CKB);
    const tx = t.chain.transaction(hash)?.tx as ccc.Transaction;
    const fee = a0 - 300n * CKB - (await a.balance());
    expect(fee).toBe((BigInt(tx.toBytes().length + 4) * 1000n + 999n) / 1000n);
    // Now the change is confirmed, A can send again; B can spend what it received.
    await a.transfer(b.lockScript, 100n * CKB);
    await b.transfer(sighashLock(`0x${'77'.repeat(20)}`), 61n * CKB);
    await client.generateBlock();
    expect(await b.balance()).toBeLessThan(339n * CKB);
    expect(await b.balance()).toBeGreaterThan(338n * CKB);
  });

  it('short while a transaction of its own is in flight, waits for it to commit and spends its change', async () => {
    const client = createChainClient({ rpcUrl: server.url });
    const key = new Uint8Array(32).fill(0x4e);
    const w = createWallet({ client, secretKey: key, pendingWaitMs: 20_000 });
    t.chain.faucet(w.lockScript, 500n * CKB);
    t.chain.generateBlock();
    await w.transfer(lockOf(KEY_A), 100n * CKB); // its only cell, now in flight
    let second: string | undefined;
    const waiting = w.transfer(lockOf(KEY_A), 100n * CKB).then((h) => {
      second = h;
    });
    await new Promise((r) => setTimeout(r, 1200));
    expect(second).toBeUndefined(); // still waiting: the change of the first is not committed
    t.chain.generateBlock();
    await waiting;
    expect(second).toMatch(/^0x[0-9a-f]{64}$/);
    // With nothing of its own in flight, a shortfall fails at once.
    t.chain.generateBlock();
    await expect(w.transfer(lockOf(KEY_A), 10_000n * CKB)).rejects.toBeInstanceOf(InsufficientFunds);
  });

  it('refuses amounts it cannot cover or that cannot form a cell', async () => {
    const client = createChainClient({ rpcUrl: server.url });
    const poor = createWallet({ client, secretKey: new Uint8Array(32).fill(0x6d) });
    await expect(poor.transfer(lockOf(KEY_A), 100n * CKB)).rejects.toBeInstanceOf(InsufficientFunds);
    const a = createWallet({ client, secretKey: KEY_A });
    await expect(a.transfer(lockOf(KEY_A), 60n * CKB)).rejects.toThrow(/61 CKB/);
  });

  it('funds and signs a transaction built elsewhere (e.g. a channel funding tx)', async () => {
    const client = createChainClient({ rpcUrl: server.url });
    const a = createWallet({ client, secretKey: KEY_A });
    const funding = ccc.Transaction.from({
      version: 0,
      outputs: [
        { lock: { ...t.chain.scripts.funding_lock, args: `0x${'99'.repeat(20)}` }, capacity: 500n * CKB },
      ],
      outputsData: ['0x'],
    });
    await a.fund(funding);
    a.sign(funding);
    const hash = await client.sendTransaction(funding);
    await client.generateBlock();
    expect((await txConfirmation(client, hash)).status).toBe('committed');
  });

  it('reserves funded inputs until sent or released', async () => {
    const client = createChainClient({ rpcUrl: server.url });
    const key = new Uint8Array(32).fill(0x2f);
    const w = createWallet({ client, secretKey: key, pendingWaitMs: 0 });
    t.chain.faucet(w.lockScript, 300n * CKB);
    t.chain.faucet(w.lockScript, 300n * CKB);
    t.chain.generateBlock();
    const out = () =>
      ccc.Transaction.from({
        version: 0,
        outputs: [{ lock: lockOf(KEY_A), capacity: 200n * CKB }],
        outputsData: ['0x'],
      });
    const first = await w.fund(out());
    const second = await w.fund(out());
    expect(first.inputs[0]?.previousOutput.eq(second.inputs[0]?.previousOutput as ccc.OutPoint)).toBe(false);
    await expect(w.fund(out())).rejects.toBeInstanceOf(InsufficientFunds);
    w.release(first);
    const third = await w.fund(out());
    expect(third.inputs[0]?.previousOutput.eq(first.inputs[0]?.previousOutput as ccc.OutPoint)).toBe(true);
    await client.sendTransaction(w.sign(second));
    // A fresh wallet object (as after a restart) signs the same inputs by looking them up.
    const again = createWallet({ client, secretKey: key });
    w.release(third);
    const rebuilt = await w.fund(out());
    await client.sendTransaction(await again.signOwnInputs(rebuilt));
  });

  it('tracks confirmations to the reference depth of 4 blocks', async () => {
    const client = createChainClient({ rpcUrl: server.url });
    const a = createWallet({ client, secretKey: KEY_A });
    await client.generateBlock();
    const hash = await a.transfer(lockOf(KEY_A), 70n * CKB);
    expect((await txConfirmation(client, hash)).status).toBe('pending');
    const miner = setInterval(() => t.chain.generateBlock(), 20);
    try {
      const c = await waitForConfirmations(client, hash, { pollMs: 10, timeoutMs: 10_000 });
      expect(c.depth).toBeGreaterThanOrEqual(4);
    } finally {
      clearInterval(miner);
    }
    await expect(
      waitForConfirmations(client, `0x${'31'.repeat(32)}`, { pollMs: 5, timeoutMs: 30 }),
    ).rejects.toThrow(/not confirmed in time/);
  });
});

describe('chain client when the chain is unreachable', () => {
  it('retries with backoff, logs each retry, then fails with a clear error', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const warnings: object[] = [];
    const client = createChainClient({
      rpcUrl: `http://127.0.0.1:${port}/`,
      attempts: 3,
      backoffMs: 5,
      logger: { warn: (o) => warnings.push(o), info: () => {} },
    });
    const err = await client.chainHash().catch((e) => e);
    expect(err).toBeInstanceOf(ChainUnreachableError);
    expect(err.message).toMatch(
      new RegExp(`CKB RPC at http://127.0.0.1:${port}/ is unreachable \\(get_block_hash: ECONNREFUSED\\)`),
    );
    expect(warnings).toHaveLength(3); // two retries and the final give-up
  });
});

describe('chain client against a chain that lies', () => {
  it('rejects malformed results with ChainProtocolError instead of crashing', async () => {
    const http = await import('node:http');
    const { ChainProtocolError } = await import('../../src/chain/client.ts');
    const answers: Record<string, unknown> = {
      get_tip_block_number: '0xZZ',
      get_block_hash: '0x1234',
      get_cells: { last_cursor: '0x', objects: [{ output: { capacity: 'lots' } }] },
      get_cells_capacity: { capacity: -1 },
      get_transaction: { transaction: null, tx_status: { status: 'weird' } },
    };
    const srv = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => {
        body += d;
      });
      req.on('end', () => {
        const { id, method } = JSON.parse(body);
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ jsonrpc: '2.0', id, result: answers[method] }));
      });
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    try {
      const client = createChainClient({
        rpcUrl: `http://127.0.0.1:${(srv.address() as net.AddressInfo).port}/`,
      });
      await expect(client.tipBlockNumber()).rejects.toBeInstanceOf(ChainProtocolError);
      await expect(client.chainHash()).rejects.toBeInstanceOf(ChainProtocolError);
      const key = {
        script: { code_hash: `0x${'00'.repeat(32)}`, hash_type: 'type', args: '0x' },
        script_type: 'lock' as const,
      };
      await expect(client.getCells(key, 'asc', 10)).rejects.toBeInstanceOf(ChainProtocolError);
      await expect(client.getCellsCapacity(key)).rejects.toBeInstanceOf(ChainProtocolError);
      await expect(client.getTransaction(`0x${'00'.repeat(32)}`)).rejects.toBeInstanceOf(ChainProtocolError);
      const w = createWallet({ client, secretKey: KEY_A });
      await expect(w.transfer(lockOf(KEY_A), 100n * CKB)).rejects.toBeInstanceOf(Error);
    } finally {
      srv.close();
    }
  });
});
