/**
 * Every value bounded, every error clear, through a real node on a dev chain: values beyond their
 * type are -32602 naming the field and the limit; values a method refuses are -32000 with fnn's
 * `Invalid parameter:` / `InvalidParameter:` texts; no message repeats more than ~200 characters
 * of the input; unknown fields are accepted (as fnn) and logged.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connect,
  type DevchainProcess,
  startChannelNode,
  startDevchain,
} from '../channel/process-helpers.ts';
import type { NodeProcess } from '../helpers/node-process.ts';

const U128_MAX = `0x${'f'.repeat(32)}`;
const U64_MAX = `0x${'f'.repeat(16)}`;
const PEER = `02${'11'.repeat(32)}`;
const HASH = `0x${'22'.repeat(32)}`;
const HUGE = 'Q'.repeat(1 << 20);

let chain: DevchainProcess;
let node: NodeProcess;
let peer: NodeProcess;
let peerPubkey: string;
beforeAll(async () => {
  chain = await startDevchain([1, 2]);
  node = await startChannelNode(1, chain.url, {}, undefined, {}, ['info', 'peer', 'channel', 'invoice']);
  peer = await startChannelNode(2, chain.url);
  peerPubkey = (await connect(node, peer)).bInfo.pubkey;
}, 120_000);
afterAll(async () => {
  await node?.stop();
  await peer?.stop();
  await chain?.stop();
});

async function refused(method: string, params: object) {
  const r = await node.call(method, [params]);
  expect(r.result, `${method} ${JSON.stringify(params).slice(0, 200)}`).toBeUndefined();
  return r.error!;
}

describe('channel values', () => {
  it('refuses a CKB funding of u64::MAX or more with fnn text', async () => {
    for (const funding_amount of [U128_MAX, U64_MAX]) {
      expect(await refused('open_channel', { pubkey: PEER, funding_amount })).toMatchObject({
        code: -32000,
        message: `Invalid parameter: The funding amount (${BigInt(funding_amount)}) should be less than 18446744073709551615`,
      });
    }
  });

  it('bounds tlc fee and tlc minimum in open_channel and update_channel', async () => {
    const open = { pubkey: PEER, funding_amount: '0x174876e800' };
    expect(
      await refused('open_channel', { ...open, tlc_fee_proportional_millionths: U128_MAX }),
    ).toMatchObject({
      code: -32000,
      message: expect.stringMatching(
        /^Invalid parameter: tlc_fee_proportional_millionths \(\d+\) should be at most 1000000/,
      ),
    });
    expect(await refused('open_channel', { ...open, tlc_min_value: U128_MAX })).toMatchObject({
      code: -32000,
      message: expect.stringMatching(
        /^Invalid parameter: tlc_min_value \(\d+\) should be at most 18446744073709551615/,
      ),
    });
    expect(await refused('open_channel', { ...open, funding_fee_rate: U64_MAX })).toMatchObject({
      code: -32000,
      message: expect.stringMatching(
        /^Invalid parameter: funding_fee_rate \(\d+\) should be at most 100000000 shannons per kB$/,
      ),
    });
    expect(await refused('shutdown_channel', { channel_id: HASH, fee_rate: '0x5f5e101' })).toMatchObject({
      code: -32000,
      message: expect.stringContaining('fee_rate (100000001) should be at most 100000000'),
    });
    expect(
      await refused('update_channel', { channel_id: HASH, tlc_fee_proportional_millionths: '0xf4241' }),
    ).toMatchObject({
      code: -32000,
      message: expect.stringContaining('tlc_fee_proportional_millionths (1000001)'),
    });
  });

  it('refuses every edge value of open_channel to a connected peer with a clear error, never Internal error', async () => {
    const edges: [string, string][] = [
      ['funding_amount', U128_MAX],
      ['funding_amount', U64_MAX],
      ['funding_amount', '0x0'],
      ['commitment_delay_epoch', U64_MAX],
      ['commitment_delay_epoch', '0x0'],
      ['commitment_fee_rate', U64_MAX],
      ['funding_fee_rate', U64_MAX],
      ['funding_fee_rate', '0x0'],
      ['tlc_expiry_delta', U64_MAX],
      ['tlc_expiry_delta', '0x0'],
      ['tlc_min_value', U128_MAX],
      ['tlc_fee_proportional_millionths', U128_MAX],
      ['max_tlc_number_in_flight', U64_MAX],
    ];
    for (const [field, v] of edges) {
      const e = await refused('open_channel', {
        pubkey: peerPubkey,
        funding_amount: '0x174876e800',
        [field]: v,
      });
      expect(e.code, `${field}=${v}: ${e.message}`).toBe(-32000);
      expect(e.message, field).toMatch(/^Invalid parameter: /);
    }
    expect((await node.call('list_channels', [{}])).result.channels).toEqual([]);
  });

  it('names the field and the limit of a number beyond its type', async () => {
    const e = await refused('open_channel', { pubkey: PEER, funding_amount: `0x1${'0'.repeat(32)}` });
    expect(e.code).toBe(-32602);
    expect(e.message).toMatch(/^Invalid params: funding_amount: .* exceeds the u128 maximum 0xf{32}$/);
  });

  it('repeats at most ~200 characters of a huge peer_id or pubkey', async () => {
    for (const [method, params] of [
      ['open_channel', { peer_id: HUGE, funding_amount: '0x1' }],
      ['open_channel', { pubkey: HUGE, funding_amount: '0x1' }],
      ['list_channels', { peer_id: HUGE }],
      ['list_channels', { pubkey: HUGE }],
      ['disconnect_peer', { peer_id: HUGE }],
      ['disconnect_peer', { pubkey: HUGE }],
    ] as const) {
      const e = await refused(method, params);
      expect(e.code, method).toBe(-32602);
      expect(e.message.length, `${method} ${e.message.slice(0, 80)}`).toBeLessThan(320);
      expect(e.message).toMatch(/^invalid (peer_id|pubkey) 'Q{200}…\(1048576 chars\)'/);
    }
  });

  it('accepts an unknown field as fnn does, and logs it', async () => {
    const r = await node.call('list_channels', [{ include_closed: true, ammount: '0x1' }]);
    expect(r.error).toBeUndefined();
    const logged = /"fields":\["ammount"\][^\n]*unknown to the method/;
    const end = Date.now() + 5000;
    while (!logged.test(node.output()) && Date.now() < end) await new Promise((ok) => setTimeout(ok, 20));
    expect(node.output()).toMatch(logged);
  });
});

describe('invoice values', () => {
  const base = { amount: '0x64', currency: 'Fibd' };

  it('bounds the expiry', async () => {
    expect(await refused('new_invoice', { ...base, expiry: U64_MAX })).toMatchObject({
      code: -32000,
      message:
        'InvalidParameter: expiry (18446744073709551615) should be at most 315360000 seconds (10 years)',
    });
    expect((await node.call('new_invoice', [{ ...base, expiry: '0x12cc0300' }])).error).toBeUndefined();
  });

  it('checks the fallback address and its network prefix', async () => {
    const mainnet = 'ckb1qzda0cr08m85hc8jlnfp3zer7xulejywt49kt2rr0vthywaa50xwsqgx7g4s3ajvjs';
    expect(await refused('new_invoice', { ...base, fallback_address: mainnet })).toMatchObject({
      code: -32000,
      message: expect.stringContaining('should be a CKB address starting with ckt1 for currency Fibd'),
    });
    expect(await refused('new_invoice', { ...base, fallback_address: 'ckt1q' })).toMatchObject({
      code: -32000,
      message: expect.stringMatching(
        /^InvalidParameter: fallback_address 'ckt1q' is not a valid CKB address/,
      ),
    });
  });

  it('refuses a token the node does not know', async () => {
    const udt = { code_hash: HASH, hash_type: 'type', args: '0x' };
    expect(await refused('new_invoice', { ...base, udt_type_script: udt })).toMatchObject({
      code: -32000,
      message: expect.stringContaining("not in the node's UDT whitelist"),
    });
  });
});
