/**
 * Multi-part payment end to end: a devnet of four node processes, two parallel paths
 * alice→bob→dave and alice→carol→dave (500 CKB channels: alice can send 438 CKB on each), driven
 * only over JSON-RPC. Dave's MPP invoice for 600 CKB is more than any single channel carries:
 * alice's payment splits over both paths and succeeds; balances move by exactly the parts and
 * their fees.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DevnetDescription, type RunningDevnet, startDevnet } from '../../src/devnet/devnet.ts';
import type { RpcClient } from '../../src/rpc/client.ts';
import { tempDir } from '../helpers/node-process.ts';
import { devnetBasePort } from '../helpers/ports.ts';
import { big, CKB, hex, nodeClient, until } from './helpers.ts';

let net: RunningDevnet;
let desc: DevnetDescription;
let alice: RpcClient;
let dave: RpcClient;

interface ChannelRecord {
  channel_outpoint: string;
  local_balance: string;
  state: { state_name: string };
}

async function channels(client: RpcClient): Promise<ChannelRecord[]> {
  return (await client.call<{ channels: ChannelRecord[] }>('list_channels', {})).channels;
}

const sumLocal = (cs: ChannelRecord[]) => cs.reduce((a, c) => a + big(c.local_balance), 0n);

beforeAll(async () => {
  net = await startDevnet({
    dir: path.join(tempDir('strand-mpp-'), 'net'),
    nodes: 4,
    blockIntervalMs: 200,
    basePort: devnetBasePort(),
    topology: {
      peers: [
        ['alice', 'bob'],
        ['bob', 'dave'],
        ['alice', 'carol'],
        ['carol', 'dave'],
      ],
      channels: [
        { from: 'alice', to: 'bob', funding: 500, udt: false, public: true },
        { from: 'bob', to: 'dave', funding: 500, udt: false, public: true },
        { from: 'alice', to: 'carol', funding: 500, udt: false, public: true },
        { from: 'carol', to: 'dave', funding: 500, udt: false, public: true },
      ],
    },
    reset: true,
    log: () => {},
  });
  desc = net.description;
  alice = nodeClient(desc.nodes[0]!.rpc_url);
  dave = nodeClient(desc.nodes[3]!.rpc_url);
}, 240_000);

afterAll(async () => {
  await net?.stop();
}, 60_000);

describe('a multi-part payment over a devnet', { timeout: 180_000 }, () => {
  it('pays 600 CKB, more than any one channel carries, in parts over two paths', async () => {
    const amount = 600n * CKB;
    const mine = await channels(alice);
    expect(mine).toHaveLength(2);
    for (const c of mine) expect(big(c.local_balance)).toBeLessThan(amount);
    const daveBefore = sumLocal(await channels(dave));
    const aliceBefore = sumLocal(mine);

    const inv = await dave.call('new_invoice', { amount: hex(amount), currency: 'Fibd', allow_mpp: true });
    expect(inv.invoice.data.attrs).toEqual(
      expect.arrayContaining([{ Feature: ['BASIC_MPP_OPTIONAL'] }, { PaymentSecret: expect.any(String) }]),
    );
    const hash = inv.invoice.data.payment_hash;
    // An MPP invoice is always paid as MPP: one part only is refused, as the reference does.
    await expect(
      alice.call('send_payment', { invoice: inv.invoice_address, max_parts: '0x1' }),
    ).rejects.toThrow('invalid max_parts, value should be in range [1, 24]');

    // Right after the channels are ready the announcements may still be on their way: retry
    // while alice's graph lacks a path (dry runs store nothing).
    await until('both paths in alice’s graph', async () => {
      try {
        const dry = await alice.call('send_payment', { invoice: inv.invoice_address, dry_run: true });
        return dry.routers.length === 2 ? dry : undefined;
      } catch (e) {
        if (/Failed to build/.test((e as Error).message)) return undefined;
        throw e;
      }
    });
    const sent = await alice.call('send_payment', { invoice: inv.invoice_address, max_parts: '0x4' });
    expect(sent.status).toBe('Created');
    expect(sent.routers).toHaveLength(2);
    const done = await until('the payment', async () => {
      const p = await alice.call('get_payment', { payment_hash: hash });
      if (p.status === 'Failed') throw new Error(`payment failed: ${p.failed_error}`);
      return p.status === 'Success' ? p : undefined;
    });
    expect((await dave.call('get_invoice', { payment_hash: hash })).status).toBe('Paid');

    // Each part pays its middle node's fee, ceil(part × 1000 / 1e6), on what it delivers.
    const routers = done.routers as { nodes: { pubkey: string; amount: string }[] }[];
    expect(routers).toHaveLength(2);
    const middles = routers.map((r) => r.nodes[1]!.pubkey).sort();
    expect(middles).toEqual([desc.nodes[1]!.pubkey, desc.nodes[2]!.pubkey].sort());
    let fee = 0n;
    let delivered = 0n;
    for (const r of routers) {
      const part = big(r.nodes.at(-1)!.amount);
      expect(big(r.nodes[0]!.amount) - part).toBe((part * 1000n + 999_999n) / 1_000_000n);
      fee += big(r.nodes[0]!.amount) - part;
      delivered += part;
    }
    expect(delivered).toBe(amount);
    expect(big(done.fee)).toBe(fee);

    await until('balances to settle', async () => {
      const [a, d] = [sumLocal(await channels(alice)), sumLocal(await channels(dave))];
      return a === aliceBefore - amount - fee && d === daveBefore + amount ? true : undefined;
    });
  });
});
