/**
 * A token channel with real processes, once with each of the dev chain's test tokens — the test
 * UDT (simple UDT) and the test xUDT, the standard of CKB's real tokens: the token whitelisted on
 * both nodes (the peer auto-accepting with its CKB reserve and no tokens), opened with 600
 * tokens, paid 100 through a TLC and 50 by keysend, closed cooperatively: the token amounts land
 * right on chain. Both wallets hold both tokens, so the funding must pick the right one. A token
 * not in the whitelist is refused with the reference's text. A names the token by the pattern
 * `0x.*`, B by its args.
 */
import { ccc } from '@ckb-ccc/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import type { NodeProcess } from '../helpers/node-process.ts';
import {
  CKB,
  connect,
  type DevchainProcess,
  rpc,
  startChannelNode,
  startDevchain,
  testUdtWhitelist,
  until,
} from './process-helpers.ts';

/** The default modules (`dev` has add_tlc / remove_tlc) and `payment` for the keysend. */
const MODULES = ['info', 'peer', 'channel', 'dev', 'graph', 'payment'];
const hex = (v: bigint) => `0x${v.toString(16)}`;

describe.each([
  { name: 'a UDT channel', token: 'test_udt' as const },
  { name: 'an xUDT channel', token: 'test_xudt' as const },
])('$name', ({ token }) => {
  let chain: DevchainProcess;
  let a: NodeProcess;
  let b: NodeProcess;
  let aInfo: any;
  let bInfo: any;
  let udt: { code_hash: string; hash_type: string; args: string };

  beforeAll(async () => {
    chain = await startDevchain([1, 2], 5000, 200, undefined, 1000, 1000);
    const t = await testUdtWhitelist(chain.url, token);
    udt = t.udt;
    const whitelist = t.whitelist;
    // A names the token by an args pattern, as fnn's own test configs write it; B by exact args.
    const byPattern = whitelist.map((w) => ({ ...w, script: { ...w.script, args: '0x.*' } }));
    a = await startChannelNode(1, chain.url, {}, undefined, { udt_whitelist: byPattern }, MODULES);
    b = await startChannelNode(2, chain.url, {}, undefined, { udt_whitelist: whitelist }, MODULES);
    ({ aInfo, bInfo } = await connect(a, b));
  }, 120_000);

  afterAll(async () => {
    if (process.env.DEBUG_CH) console.log(a?.output().slice(-4000), '\n-----\n', b?.output().slice(-4000));
    await a?.stop();
    await b?.stop();
    await chain?.stop();
  });

  it('opens, pays and closes with the token amounts right on chain', async () => {
    const client = createChainClient({ rpcUrl: chain.url });
    const r = await rpc(a, 'open_channel', {
      pubkey: bInfo.pubkey,
      funding_amount: hex(600n),
      funding_udt_type_script: udt,
      public: false,
    });
    expect(r.temporary_channel_id).toMatch(/^0x/);
    const ca = (
      await until(
        'A ready',
        () => rpc(a, 'list_channels', {}),
        (x) => x.channels[0]?.state.state_name === 'CHANNEL_READY',
      )
    ).channels[0];
    await until(
      'B ready',
      () => rpc(b, 'list_channels', {}),
      (x) => x.channels[0]?.state.state_name === 'CHANNEL_READY',
    );
    expect(ca.funding_udt_type_script).toEqual(udt);
    expect([ca.local_balance, ca.remote_balance]).toEqual([hex(600n), '0x0']);
    // The funding cell: both reserves as capacity (143 CKB each), 600 tokens as data.
    const op = ca.channel_outpoint as string;
    const cell = (await client.getLiveCell({ txHash: op.slice(0, 66), index: 0 }, true)) as any;
    expect(BigInt(cell.cell.output.capacity)).toBe(286n * CKB);
    expect(cell.cell.output.type).toEqual(udt);
    expect(ccc.numLeFromBytes(ccc.bytesFrom(cell.cell.data.content))).toBe(600n);

    // Pay 100 tokens through a TLC.
    const preimage = `0x${'07'.repeat(32)}`;
    const hash = ccc.hexFrom(ckbHash(ccc.bytesFrom(preimage)));
    await rpc(a, 'add_tlc', {
      channel_id: ca.channel_id,
      amount: hex(100n),
      payment_hash: hash,
      expiry: hex(BigInt(Date.now() + 3_600_000)),
    });
    await until(
      'TLC at B',
      () => rpc(b, 'list_channels', {}),
      (x) => x.channels[0]?.pending_tlcs[0]?.status?.Inbound === 'Committed',
    );
    await rpc(b, 'remove_tlc', {
      channel_id: ca.channel_id,
      tlc_id: '0x0',
      reason: { payment_preimage: preimage },
    });
    const paid = await until(
      'paid',
      () => rpc(b, 'list_channels', {}),
      (x) => x.channels[0]?.local_balance === hex(100n) && x.channels[0]?.pending_tlcs.length === 0,
    );
    expect(paid.channels[0].remote_balance).toBe(hex(500n));

    // Keysend 50 more tokens (a payment session: the route is the channel itself).
    const sent = await until(
      'keysend accepted',
      () =>
        a.call('send_payment', [
          { target_pubkey: bInfo.pubkey, amount: hex(50n), keysend: true, udt_type_script: udt },
        ]),
      (r) => !r.error,
      60_000,
    );
    const done = await until(
      'keysend ended',
      () => rpc(a, 'get_payment', { payment_hash: sent.result.payment_hash }),
      (p) => p.status === 'Success' || p.status === 'Failed',
    );
    expect(done.status).toBe('Success');
    await until(
      'keysend settled at B',
      () => rpc(b, 'list_channels', {}),
      (x) => x.channels[0]?.local_balance === hex(150n) && x.channels[0]?.pending_tlcs.length === 0,
    );
    await until(
      'A idle',
      () => a.call('shutdown_channel', [{ channel_id: ca.channel_id }]),
      (x) => {
        if (x.error) expect(x.error.message).toMatch(/pending outbound tlcs/);
        return !x.error;
      },
    );
    const closed = await until(
      'closed',
      () => rpc(a, 'list_channels', { include_closed: true }),
      (x) => x.channels[0]?.state.state_name === 'CLOSED',
    );
    expect(closed.channels[0].state.state_flags).toEqual(['COOPERATIVE']);
    const tx = (await client.getTransaction(closed.channels[0].shutdown_transaction_hash)) as any;
    const outs = tx.transaction.outputs.map((o: any, i: number) => ({
      args: o.lock.args,
      type: o.type,
      capacity: BigInt(o.capacity),
      tokens: ccc.numLeFromBytes(ccc.bytesFrom(tx.transaction.outputs_data[i])),
    }));
    const toA = outs.find((o: any) => o.args === aInfo.default_funding_lock_script.args);
    const toB = outs.find((o: any) => o.args === bInfo.default_funding_lock_script.args);
    expect([toA.tokens, toB.tokens]).toEqual([450n, 150n]);
    expect(toA.type).toEqual(udt);
    expect(toB.type).toEqual(udt);
    // Each side gets its reserve back; the initiator (A) pays the fee.
    expect(toB.capacity).toBe(143n * CKB);
    expect(143n * CKB - toA.capacity).toBeGreaterThan(0n);
    expect(143n * CKB - toA.capacity).toBeLessThan(CKB);
  }, 120_000);

  it('refuses a token that is not whitelisted', async () => {
    const other = { ...udt, code_hash: `0x${'ee'.repeat(32)}` };
    const r = await a.call('open_channel', [
      { pubkey: bInfo.pubkey, funding_amount: '0x64', funding_udt_type_script: other },
    ]);
    expect(r.error?.message).toBe('Invalid parameter: Invalid UDT type script');
  });
});
