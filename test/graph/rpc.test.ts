/** The graph RPC module over the project's JSON-RPC server: records, pagination, bad cursors. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityFromSecret } from '../../src/crypto/identity.ts';
import { createGraphService, type GraphService } from '../../src/graph/service.ts';
import { graphSchema } from '../../src/graph/store.ts';
import { OPEN_ACCESS } from '../../src/rpc/auth.ts';
import { graphMethods } from '../../src/rpc/modules/graph.ts';
import { type RpcServer, startRpcServer } from '../../src/rpc/server.ts';
import { type Db, openDatabase } from '../../src/store/db.ts';
import { outPoint, party, signedChannel, signedUpdate, trustingFunding } from './gossip-helpers.ts';

const CHAIN = new Uint8Array(32).fill(0xcc);
let dir: string;
let db: Db;
let server: RpcServer;
let svc: GraphService;

interface Reply {
  result?: any;
  error?: { code: number; message: string; data?: unknown };
}

async function call(method: string, params: unknown[] = []): Promise<Reply> {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()) as Reply;
}

const FUNDING_TIME = 1_700_000_000_000n;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-graph-rpc-'));
  db = openDatabase(path.join(dir, 'strand.db'), [graphSchema]);
  svc = createGraphService({
    db,
    identity: identityFromSecret(party(1).sk),
    chainHash: CHAIN,
    funding: trustingFunding(FUNDING_TIME),
    announcePrivateAddr: true,
    timers: false,
  });
  svc.start();
  // 5 other nodes announce themselves; 4 channels in a line, the last one closed both ways
  for (let i = 2; i <= 6; i++) {
    const other = createGraphService({
      db: openDatabase(':memory:', [graphSchema]),
      identity: identityFromSecret(party(i).sk),
      chainHash: CHAIN,
      timers: false,
    });
    const ann = other.announceNode({
      nodeName: `node-${i}`,
      version: '0.1.0',
      addresses: [`/ip4/10.0.0.${i}/tcp/8228`],
      autoAcceptMinCkbFundingAmount: 10_000_000_000n,
    });
    expect(await svc.processBroadcast({ type: 'NodeAnnouncement', value: ann })).toBe('accepted');
  }
  for (let i = 2; i <= 5; i++) {
    const ca = signedChannel(party(i), party(i + 1), CHAIN, outPoint(i), BigInt(i) * 10n ** 10n);
    await svc.processBroadcast({ type: 'ChannelAnnouncement', value: ca });
    const disabled = i === 5 ? 1 : 0;
    await svc.processBroadcast({
      type: 'ChannelUpdate',
      value: signedUpdate(party(i), ca, { feeRate: BigInt(i), channelFlags: disabled }),
    });
    if (i !== 3)
      await svc.processBroadcast({
        type: 'ChannelUpdate',
        value: signedUpdate(party(i + 1), ca, { channelFlags: disabled }),
      });
  }
  server = await startRpcServer({
    listeningAddr: '127.0.0.1:0',
    methods: graphMethods(svc),
    auth: OPEN_ACCESS,
    corsEnabled: false,
    corsAllowedOrigins: [],
    maxBodySize: 1 << 20,
  });
});

afterAll(async () => {
  await server.close();
  await svc.stop();
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('graph_nodes', () => {
  it('lists NodeInfo records with the reference fields', async () => {
    const r = await call('graph_nodes', [{}]);
    expect(r.result.nodes).toHaveLength(5);
    const n = r.result.nodes.find((x: { node_name: string }) => x.node_name === 'node-4');
    expect(n).toEqual({
      node_name: 'node-4',
      version: '0.1.0',
      addresses: ['/ip4/10.0.0.4/tcp/8228'],
      features: ['GOSSIP_QUERIES_REQUIRED', 'BASIC_MPP_REQUIRED', 'TRAMPOLINE_ROUTING_REQUIRED'],
      pubkey: Buffer.from(party(4).pk).toString('hex'),
      timestamp: expect.stringMatching(/^0x[0-9a-f]+$/),
      chain_hash: '0x' + 'cc'.repeat(32),
      auto_accept_min_ckb_funding_amount: '0x2540be400',
      udt_cfg_infos: [],
    });
    expect(r.result.last_cursor).toMatch(/^0x[0-9a-f]{90}$/);
  });

  it('pages with limit / after until an empty page with last_cursor 0x', async () => {
    const seen: string[] = [];
    let after: string | undefined;
    for (let i = 0; i < 10; i++) {
      const r = await call('graph_nodes', [{ limit: '0x2', ...(after ? { after } : {}) }]);
      if (r.result.nodes.length === 0) {
        expect(r.result.last_cursor).toBe('0x');
        break;
      }
      expect(r.result.nodes.length).toBeLessThanOrEqual(2);
      seen.push(...r.result.nodes.map((n: { pubkey: string }) => n.pubkey));
      after = r.result.last_cursor;
    }
    expect(seen).toHaveLength(5);
    expect(new Set(seen).size).toBe(5);
  });

  it('a malformed cursor is -32602 with the reference text', async () => {
    for (const [after, text] of [
      ['0x1234', 'Invalid cursor size: 2, want 45'],
      ['0x', 'Invalid cursor size: 0, want 45'],
      ['0x' + '00'.repeat(8) + '07' + '00'.repeat(36), 'Invalid message id type: 7'],
      ['0x' + '00'.repeat(8) + '02' + '05'.repeat(33) + '000000', 'malformed public key'],
    ] as const) {
      const r = await call('graph_nodes', [{ after }]);
      expect(r.error?.code).toBe(-32602);
      expect(r.error?.message).toBe(text);
      expect(r.error?.data).toEqual({ limit: null, after });
    }
    expect((await call('graph_channels', [{ after: '0xzz' }])).error?.code).toBe(-32602);
    expect((await call('graph_channels', [{ limit: '0x01' }])).error?.code).toBe(-32602);
  });
});

describe('graph_channels', () => {
  it('lists ChannelInfo records, leaving out channels disabled both ways', async () => {
    const r = await call('graph_channels', [{}]);
    expect(r.result.channels).toHaveLength(3);
    const c = r.result.channels.find(
      (x: { capacity: string }) => x.capacity === '0x' + (3n * 10n ** 10n).toString(16),
    );
    const [n1, n2] = [party(3).pk, party(4).pk].map((k) => Buffer.from(k).toString('hex')).sort();
    expect(c).toEqual({
      channel_outpoint: '0x' + '03'.repeat(32) + '00000000',
      node1: n1,
      node2: n2,
      created_timestamp: '0x' + FUNDING_TIME.toString(16),
      update_info_of_node1:
        n1 === Buffer.from(party(3).pk).toString('hex') ? expect.objectContaining({ fee_rate: '0x3' }) : null,
      update_info_of_node2:
        n2 === Buffer.from(party(3).pk).toString('hex') ? expect.objectContaining({ fee_rate: '0x3' }) : null,
      capacity: '0x' + (3n * 10n ** 10n).toString(16),
      chain_hash: '0x' + 'cc'.repeat(32),
      udt_type_script: null,
    });
    const info = c.update_info_of_node1 ?? c.update_info_of_node2;
    expect(info).toEqual({
      timestamp: expect.stringMatching(/^0x/),
      enabled: true,
      outbound_liquidity: null,
      tlc_expiry_delta: '0xdbba00',
      tlc_minimum_value: '0x0',
      fee_rate: '0x3',
    });
  });

  it('pages one channel at a time', async () => {
    const first = await call('graph_channels', [{ limit: '0x1' }]);
    expect(first.result.channels).toHaveLength(1);
    const second = await call('graph_channels', [{ limit: '0x1', after: first.result.last_cursor }]);
    expect(second.result.channels).toHaveLength(1);
    expect(second.result.channels[0].channel_outpoint).not.toBe(first.result.channels[0].channel_outpoint);
  });
});
