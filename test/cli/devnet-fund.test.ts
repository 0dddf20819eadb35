/**
 * `strand devnet fund` waits for the faucet's transaction to commit: while it waits (a devnet with
 * a slow block interval), it says so every few seconds, then prints what was sent and the balance.
 * Against a small stand-in for the dev chain's RPC whose transaction commits after a while.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { fundFromFaucet } from '../../src/cli/devnet-fund.ts';

let server: http.Server | undefined;
afterEach(() => server?.close());

const HASH = `0x${'ab'.repeat(32)}`;
const LOCK_ARGS = `0x${'11'.repeat(20)}`;

/** Answers the three calls the faucet makes; the tx commits `commitAfterMs` after it was sent. */
async function chainStandIn(commitAfterMs: number): Promise<string> {
  let sentAt = 0;
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      const { id, method } = JSON.parse(body) as { id: number; method: string };
      let result: unknown;
      if (method === 'faucet') {
        sentAt = Date.now();
        result = HASH;
      } else if (method === 'get_transaction') {
        result = { tx_status: { status: Date.now() - sentAt >= commitAfterMs ? 'committed' : 'pending' } };
      } else if (method === 'get_cells_capacity') {
        result = { capacity: '0x9184e72a000' };
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id, result }));
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

it('says how long the faucet transaction has waited, then what was sent', async () => {
  const url = await chainStandIn(1300);
  const progress: string[] = [];
  const lines = await fundFromFaucet(
    { chain: { rpc_url: url, chain_hash: '0x', dir: '' }, nodes: [] },
    {
      target: LOCK_ARGS,
      ckb: 5n,
      udt: 0n,
      xudt: 0n,
      progress: (l) => progress.push(l),
      progressEveryMs: 500,
    },
  );
  expect(progress.length).toBeGreaterThanOrEqual(2);
  expect(progress[0]).toMatch(new RegExp(`^tx ${HASH} \\d+ s, not committed yet…$`));
  expect(lines[1]).toBe(`tx ${HASH}`);
  expect(lines[2]).toBe('balance 100000 CKB');
});

it('a transaction that commits at once prints no progress', async () => {
  const url = await chainStandIn(0);
  const progress: string[] = [];
  await fundFromFaucet(
    { chain: { rpc_url: url, chain_hash: '0x', dir: '' }, nodes: [] },
    {
      target: LOCK_ARGS,
      ckb: 5n,
      udt: 0n,
      xudt: 0n,
      progress: (l) => progress.push(l),
      progressEveryMs: 500,
    },
  );
  expect(progress).toEqual([]);
});
