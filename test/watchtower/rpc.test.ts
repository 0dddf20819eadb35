/**
 * The watchtower RPC module over a real server and a real SQLite file: what each method stores,
 * per caller, and the reference's answers to bad input.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ccc } from '@ckb-ccc/core';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ckbHash, sha256 } from '../../src/crypto/hash.ts';
import { type Authorizer, OPEN_ACCESS } from '../../src/rpc/auth.ts';
import { createRpcClient, type RpcClient } from '../../src/rpc/client.ts';
import { watchtowerMethods } from '../../src/rpc/modules/watchtower.ts';
import { type RpcServer, startRpcServer } from '../../src/rpc/server.ts';
import { openDatabase } from '../../src/store/db.ts';
import { WatchtowerStore, watchtowerSchema } from '../../src/watchtower/store.ts';

const hx = (b: Uint8Array, prefix = true) => (prefix ? '0x' : '') + Buffer.from(b).toString('hex');
const pub = (sk: Uint8Array) => hx(secp256k1.getPublicKey(sk, true), false);
const sk1 = new Uint8Array(32).fill(1);
const sk2 = new Uint8Array(32).fill(2);
const channelId = `0x${'ab'.repeat(32)}`;

/** Auth stub: the bearer text is the caller's node id (the real authorizer is tested in rpc/). */
const BY_HEADER: Authorizer = {
  enabled: true,
  check: (_m, h) => ({ ok: true, callerNodeId: h?.slice('Bearer '.length) }),
  authenticate: () => true,
};

let dir: string;
let store: WatchtowerStore;
const servers: RpcServer[] = [];
let open: RpcClient;
let asNode: (id: string) => RpcClient;

function settlement(tlcs: unknown[] = []) {
  return { local_amount: '0x64', remote_amount: '0xc8', tlcs };
}

function tlc(over: Record<string, unknown> = {}) {
  return {
    tlc_id: { Offered: '0x2' },
    hash_algorithm: 'sha256',
    payment_amount: '0x3e8',
    payment_hash: `0x${'11'.repeat(32)}`,
    expiry: '0x18c8e4a1d00',
    local_key: hx(sk1, false),
    remote_key: pub(sk2),
    ...over,
  };
}

function createParams(over: Record<string, unknown> = {}) {
  return {
    channel_id: channelId,
    local_settlement_key: hx(sk1, false),
    remote_settlement_key: pub(sk2),
    local_funding_pubkey: pub(sk1),
    remote_funding_pubkey: pub(sk2),
    settlement_data: settlement(),
    ...over,
  };
}

function revocation(over: Record<string, unknown> = {}) {
  const output = ccc.CellOutput.from({
    capacity: 750n * 100_000_000n,
    lock: { codeHash: `0x${'22'.repeat(32)}`, hashType: 'type', args: `0x${'33'.repeat(20)}` },
  });
  const sig = schnorr.sign(new Uint8Array(32).fill(9), sk1);
  return {
    commitment_number: '0x5',
    aggregated_signature: hx(sig),
    output: ccc.hexFrom(output.toBytes()),
    output_data: '0x00000000',
    ...over,
  };
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-watchtower-rpc-'));
  store = new WatchtowerStore(openDatabase(path.join(dir, 'strand.db'), [watchtowerSchema]));
  const start = (auth: Authorizer) =>
    startRpcServer({
      listeningAddr: '127.0.0.1:0',
      methods: watchtowerMethods(store),
      auth,
      corsEnabled: false,
      corsAllowedOrigins: [],
      maxBodySize: 1 << 20,
    });
  servers.push(await start(OPEN_ACCESS), await start(BY_HEADER));
  open = createRpcClient(servers[0]!.url);
  asNode = (id) => createRpcClient(servers[1]!.url, id);
});

afterAll(async () => {
  for (const s of servers) await s.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const call = async (c: RpcClient, m: string, p: unknown) => {
  try {
    return { result: await c.call(m, p) };
  } catch (e) {
    return { error: { code: (e as { code: number }).code, message: (e as Error).message } };
  }
};

describe('watchtower RPC', () => {
  it('create_watch_channel stores the channel with its settlement data three times over', async () => {
    expect(
      await call(open, 'create_watch_channel', createParams({ settlement_data: settlement([tlc()]) })),
    ).toEqual({
      result: null,
    });
    const c = store.getChannel('', channelId)!;
    expect(c.localFundingPubkey).toBe(`0x${pub(sk1)}`);
    expect(c.localSettlementData).toEqual(c.remoteSettlementData);
    expect(c.pendingRemoteSettlementData.tlcs[0]).toMatchObject({
      tlcId: { offered: true, id: 2n },
      hashAlgorithm: 'sha256',
      paymentAmount: 1000n,
      expiry: 0x18c8e4a1d00n,
    });
    expect(c.revocationData).toBeNull();
  });

  it('update_revocation keeps the revocation (raw output data) and the remote settlement', async () => {
    const rev = revocation();
    const r = await call(open, 'update_revocation', {
      channel_id: channelId,
      revocation_data: rev,
      settlement_data: { local_amount: '0x1', remote_amount: '0x2', tlcs: [] },
    });
    expect(r).toEqual({ result: null });
    const c = store.getChannel('', channelId)!;
    expect(c.revocationData).toEqual({
      commitmentNumber: 5n,
      aggregatedSignature: rev.aggregated_signature,
      output: rev.output,
      outputData: '0x',
    });
    expect(c.remoteSettlementData).toEqual({ localAmount: 1n, remoteAmount: 2n, tlcs: [] });
    expect(c.localSettlementData.localAmount).toBe(100n);
  });

  it('update_local_settlement and update_pending_remote_settlement replace only their part', async () => {
    await open.call('update_local_settlement', { channel_id: channelId, settlement_data: settlement([]) });
    await open.call('update_pending_remote_settlement', {
      channel_id: channelId,
      settlement_data: {
        local_amount: '0x7',
        remote_amount: '0x8',
        tlcs: [tlc({ tlc_id: { Received: '0x0' } })],
      },
    });
    const c = store.getChannel('', channelId)!;
    expect(c.localSettlementData.tlcs).toEqual([]);
    expect(c.pendingRemoteSettlementData.tlcs[0]?.tlcId).toEqual({ offered: false, id: 0n });
    expect(c.revocationData?.commitmentNumber).toBe(5n);
  });

  it('updates of a channel nobody registered change nothing and answer null', async () => {
    const other = `0x${'cd'.repeat(32)}`;
    expect(
      await call(open, 'update_local_settlement', { channel_id: other, settlement_data: settlement() }),
    ).toEqual({
      result: null,
    });
    expect(store.getChannel('', other)).toBeUndefined();
  });

  it('data is kept per caller node id', async () => {
    const idA = 'QmSRcPqUn4aQrKHXyCDjGn2qBVf43tWBDS2Wj9QDUZXtZp';
    const idB = 'QmaFDJb9CkMrXy7nhTWBY5y9mvuykre3EzzRsCJUAVXprZ';
    await asNode(idA).call('create_watch_channel', createParams());
    await asNode(idB).call('create_watch_channel', createParams({ local_settlement_key: hx(sk2, false) }));
    expect(store.getChannel(idA, channelId)?.localSettlementKey).toBe(hx(sk1));
    expect(store.getChannel(idB, channelId)?.localSettlementKey).toBe(hx(sk2));
    await asNode(idA).call('remove_watch_channel', { channel_id: channelId });
    expect(store.getChannel(idA, channelId)).toBeUndefined();
    expect(store.getChannel(idB, channelId)).toBeDefined();
    expect(store.getChannel('', channelId)).toBeDefined();
  });

  it('a caller identity that is not base58 is refused with the reference text', async () => {
    expect(await call(asNode('not-base58!'), 'remove_preimage', { payment_hash: channelId })).toEqual({
      error: { code: -32000, message: "can't parse node_id: not-base58!" },
    });
  });

  it('create_preimage accepts a preimage of either hash algorithm and refuses a wrong one', async () => {
    const pre = new Uint8Array(32).fill(7);
    for (const h of [ckbHash(pre), sha256(pre)]) {
      expect(await call(open, 'create_preimage', { payment_hash: hx(h), preimage: hx(pre) })).toEqual({
        result: null,
      });
      expect(store.getPreimage(hx(h))).toBe(hx(pre));
    }
    expect(
      await call(open, 'create_preimage', { payment_hash: `0x${'00'.repeat(32)}`, preimage: hx(pre) }),
    ).toEqual({
      error: { code: -32000, message: 'Wrong preimage' },
    });
    expect(store.searchPreimage(hx(sha256(pre)).slice(0, 42))).toBe(hx(pre));
    await open.call('remove_preimage', { payment_hash: hx(sha256(pre)) });
    expect(store.getPreimage(hx(sha256(pre)))).toBeUndefined();
    expect(store.getPreimage(hx(ckbHash(pre)))).toBe(hx(pre));
  });

  it('hostile input gets typed errors and changes nothing', async () => {
    const before = store.listChannels().length;
    const offCurve = `02${'ff'.repeat(32)}`;
    const cases: [string, unknown, number, RegExp][] = [
      ['create_watch_channel', createParams({ remote_funding_pubkey: offCurve }), -32000, /^invalid pubkey/],
      ['create_watch_channel', createParams({ local_settlement_key: '00'.repeat(32) }), -32000, /secret key/],
      ['create_watch_channel', createParams({ local_funding_pubkey: '0x1234' }), -32602, /public key/],
      [
        'create_watch_channel',
        createParams({ settlement_data: settlement([tlc({ remote_key: offCurve })]) }),
        -32000,
        /^invalid remote_key: invalid pubkey/,
      ],
      [
        'create_watch_channel',
        createParams({ settlement_data: settlement([tlc({ tlc_id: { Both: '0x1' } })]) }),
        -32602,
        /./,
      ],
      [
        'create_watch_channel',
        createParams({ settlement_data: settlement(Array.from({ length: 256 }, () => tlc())) }),
        -32602,
        /./,
      ],
      [
        'update_revocation',
        {
          channel_id: channelId,
          revocation_data: revocation({ aggregated_signature: '0x1234' }),
          settlement_data: settlement(),
        },
        -32000,
        /^invalid aggregated_signature: /,
      ],
      [
        'update_revocation',
        {
          channel_id: channelId,
          revocation_data: revocation({ output: '0x00010203' }),
          settlement_data: settlement(),
        },
        -32602,
        /output/,
      ],
      [
        'update_revocation',
        {
          channel_id: channelId,
          revocation_data: revocation({ output_data: '0x05000000aa' }),
          settlement_data: settlement(),
        },
        -32602,
        /output_data/,
      ],
      ['create_preimage', { payment_hash: '0x12', preimage: `0x${'00'.repeat(32)}` }, -32602, /32-byte/],
    ];
    for (const [m, p, code, msg] of cases) {
      const r = await call(open, m, p);
      expect(r.error?.code, `${m} ${JSON.stringify(p).slice(0, 80)}`).toBe(code);
      expect(r.error?.message).toMatch(msg);
    }
    expect(store.listChannels().length).toBe(before);
    expect(store.getChannel('', channelId)?.revocationData?.commitmentNumber).toBe(5n);
  });
});
