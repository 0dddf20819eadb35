/**
 * SIGTERM ends a real `strand node` process on every path — its stdout reader gone, payments in
 * flight to a peer that stopped reading, a channel in funding on a chain that stopped answering —
 * and the store reopens with everything committed before the signal.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CKB,
  type DevchainProcess,
  readyPair,
  rpc,
  startChannelNode,
  startDevchain,
  until,
} from '../channel/process-helpers.ts';
import { type NodeProcess, startNode } from '../helpers/node-process.ts';

const hex = (v: bigint) => `0x${v.toString(16)}`;
/** Generous: the node's own bound is 10 s; a busy machine may add to it. */
const EXIT_BOUND_MS = 30_000;
const MODULES = ['info', 'peer', 'channel', 'graph', 'payment', 'invoice'];

/** Sends SIGTERM; resolves with the exit code, or 'alive' if the process outlives the bound. */
function sigterm(n: NodeProcess): Promise<number | null | 'alive'> {
  return new Promise((resolve) => {
    if (n.proc.exitCode !== null) return resolve(n.proc.exitCode);
    const timer = setTimeout(() => {
      resolve('alive');
      n.proc.kill('SIGKILL');
    }, EXIT_BOUND_MS);
    n.proc.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
    n.proc.kill('SIGTERM');
  });
}

describe('SIGTERM without a chain', () => {
  it('ends a node whose stdout reader is gone; the store reopens with its invoice', async () => {
    const n = await startNode();
    const inv = await n.call('new_invoice', [{ amount: hex(1000n), currency: 'Fibd' }]);
    const hash = inv.result.invoice.data.payment_hash;
    n.proc.stdout!.destroy();
    expect(await sigterm(n)).not.toBe('alive');
    const again = await startNode({ dir: n.dir });
    try {
      expect((await again.call('get_invoice', [{ payment_hash: hash }])).result.status).toBe('Open');
    } finally {
      await again.stop();
      fs.rmSync(n.dir, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('SIGTERM with channels', () => {
  let chain: DevchainProcess;
  let a: NodeProcess;
  let b: NodeProcess;
  let bPubkey: string;

  beforeAll(async () => {
    chain = await startDevchain([1, 2]);
    let bInfo: { pubkey: string };
    ({ a, b, bInfo } = await readyPair(chain.url, MODULES));
    bPubkey = bInfo.pubkey;
  }, 180_000);

  afterAll(async () => {
    if (b?.proc.exitCode === null) b.proc.kill('SIGCONT');
    if (chain?.proc.exitCode === null) chain.proc.kill('SIGCONT');
    await Promise.all([a?.stop(), b?.stop()]);
    await chain?.stop();
  });

  it('ends a node with payments in flight to a peer that stopped reading', async () => {
    const invoices = [];
    for (let i = 0; i < 3; i++)
      invoices.push(await rpc(b, 'new_invoice', { amount: hex(CKB + BigInt(i)), currency: 'Fibd' }));
    b.proc.kill('SIGSTOP');
    const hashes: string[] = [];
    for (const inv of invoices) {
      const r = await a.call('send_payment', [{ invoice: inv.invoice_address }]);
      if (r.result) hashes.push(r.result.payment_hash);
    }
    expect(hashes.length).toBeGreaterThan(0);
    expect(await sigterm(a)).not.toBe('alive');
    a = await startChannelNode(1, chain.url, {}, a.dir, {}, MODULES);
    for (const h of hashes) expect((await rpc(a, 'get_payment', { payment_hash: h })).payment_hash).toBe(h);
    b.proc.kill('SIGCONT');
  }, 120_000);

  it('ends a node with a channel in funding on a chain that stopped answering', async () => {
    await until(
      'the peers connected again',
      async () => (await rpc(a, 'list_peers', {})).peers.length,
      (n) => n > 0,
    );
    // Closed ones too: after the restart the opening may already be aborted (a reconnect before its
    // funding was signed), and it must still be in the store.
    const all = { include_closed: true };
    const before = (await rpc(a, 'list_channels', all)).channels.length;
    // The chain stops answering first: the opening's funding waits on it, its RPC call pending.
    chain.proc.kill('SIGSTOP');
    const opening = a.call('open_channel', [
      { pubkey: bPubkey, funding_amount: hex(300n * CKB), public: false },
    ]);
    opening.catch(() => {});
    await until(
      'the opening to be recorded',
      async () => (await rpc(a, 'list_channels', all)).channels.length,
      (n) => n > before,
      20_000,
    );
    expect(await sigterm(a)).not.toBe('alive');
    chain.proc.kill('SIGCONT');
    a = await startChannelNode(1, chain.url, {}, a.dir, {}, MODULES);
    const channels = (await rpc(a, 'list_channels', all)).channels;
    expect(channels.length).toBe(before + 1);
  }, 120_000);
});
