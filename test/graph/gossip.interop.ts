/**
 * Gossip interop with the reference node (fiber-js 0.8.1 in headless Chromium): it dials a Strand
 * PeerManager running the graph service; Strand's node announcement must reach the reference's
 * `graph_nodes` (its codec, signature check and sync protocol accept ours), and nothing the
 * reference sends on /p2p/43 may be rejected by Strand. (With no address to announce, the
 * wasm node sends no announcement of its own.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sighashLock } from '../../src/chain/address.ts';
import { createChainClient } from '../../src/chain/client.ts';
import { createWallet } from '../../src/chain/wallet.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { identityFromSecret } from '../../src/crypto/identity.ts';
import { type DevchainRpcServer, startDevchainRpc } from '../../src/devchain/rpc/server.ts';
import { createChainFundingChecker } from '../../src/graph/funding.ts';
import { createGraphService, type GraphService } from '../../src/graph/service.ts';
import { graphSchema } from '../../src/graph/store.ts';
import { createPeerManager, type PeerManager } from '../../src/p2p/peer-manager.ts';
import { openDatabase } from '../../src/store/db.ts';
import { CKB, KEY_A, openTestChain, type TestChain } from '../devchain/helpers.ts';
import { type ReferenceNode, referenceAvailable, startReferenceNode } from '../interop/reference-node.ts';
import { party, signedChannel, signedUpdate } from './gossip-helpers.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures');
const read = (p: string) => new Uint8Array(fs.readFileSync(path.join(FIXTURES, p)));

describe.skipIf(!referenceAvailable())('gossip with the reference node', () => {
  let ref: ReferenceNode;
  let pm: PeerManager;
  let svc: GraphService;
  const warnings: string[] = [];

  beforeAll(async () => {
    ref = await startReferenceNode({
      fiberSecretKey: read('fiber-test-nodes/2/fiber/sk'),
      ckbSecretKey: Buffer.from(
        fs.readFileSync(path.join(FIXTURES, 'fiber-test-nodes/2/ckb/plain_key'), 'utf8').trim(),
        'hex',
      ),
      chainSpec: fs.readFileSync(path.join(FIXTURES, 'genesis/dev.toml'), 'utf8'),
      ckbRpcUrl: 'http://127.0.0.1:9/',
    });
    const refInfo = await ref.call('node_info');
    const identity = identityFromSecret(read('fiber-test-nodes/3/fiber/sk'));
    const db = openDatabase(':memory:', [graphSchema]);
    pm = createPeerManager({
      identity,
      listenAddr: '/ip4/127.0.0.1/tcp/0',
      chainHash: String(refInfo.chain_hash),
      timeouts: { keepAliveMs: 1000 },
    });
    await pm.start();
    svc = createGraphService({
      db,
      identity,
      chainHash: Buffer.from(String(refInfo.chain_hash).slice(2), 'hex'),
      peers: pm,
      announcePrivateAddr: true,
      timers: false,
      logger: { debug() {}, info() {}, warn: (o, m) => warnings.push(`${m} ${JSON.stringify(o)}`) },
    });
    svc.start();
    svc.announceNode({ nodeName: 'strand-interop', addresses: [pm.listeningAddrs()[1]!], version: '0.1.0' });
  });

  afterAll(async () => {
    await svc?.stop();
    await pm?.stop();
    await ref?.close();
  });

  it("the reference lists Strand's node announcement in graph_nodes", async () => {
    await ref.call('connect_peer', [{ address: pm.listeningAddrs()[1]! }]);
    type Node = { pubkey: string; node_name: string; addresses: string[]; version: string };
    const listed = async () => ((await ref.call('graph_nodes', [{}])).nodes as Node[]) ?? [];
    // The reference verifies and saves received gossip on its 20-second store tick.
    let nodes: Node[] = [];
    for (let i = 0; i < 180; i++) {
      nodes = await listed();
      if (nodes.some((n) => n.pubkey === pm.identity.pubkeyHex)) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const ours = nodes.find((n) => n.pubkey === pm.identity.pubkeyHex);
    expect(
      ours,
      `reference graph_nodes: ${JSON.stringify(nodes)}; warnings: ${warnings.join('; ')}`,
    ).toBeDefined();
    expect(ours!.node_name).toBe('strand-interop');
    expect(ours!.version).toBe('0.1.0');
    expect(ours!.addresses).toEqual([pm.listeningAddrs()[1]!]);
    // Whatever the reference sent us verified (no rejected gossip).
    expect(warnings.filter((w) => w.includes('rejected') || w.includes('malformed'))).toEqual([]);
    expect(ref.errors).toEqual([]);
  });
});

describe.skipIf(!referenceAvailable())(
  'a channel announcement checked by the reference on a shared dev chain',
  () => {
    let t: TestChain;
    let rpc: DevchainRpcServer;
    let ref: ReferenceNode;
    let pm: PeerManager;
    let svc: GraphService;

    beforeAll(async () => {
      // The dev chain runs on wall-clock time: a funding block from 2023 would be older than
      // what the reference syncs (14 days back).
      t = openTestChain({ now: () => BigInt(Date.now()) });
      rpc = await startDevchainRpc(t.chain, '127.0.0.1', 0);
      ref = await startReferenceNode({
        fiberSecretKey: read('fiber-test-nodes/2/fiber/sk'),
        ckbSecretKey: Buffer.from(
          fs.readFileSync(path.join(FIXTURES, 'fiber-test-nodes/2/ckb/plain_key'), 'utf8').trim(),
          'hex',
        ),
        chainSpec: fs.readFileSync(path.join(FIXTURES, 'genesis/dev.toml'), 'utf8'),
        ckbRpcUrl: rpc.url,
      });
      const refInfo = await ref.call('node_info');
      expect(refInfo.chain_hash).toBe(await createChainClient({ rpcUrl: rpc.url }).chainHash());
      const identity = identityFromSecret(read('fiber-test-nodes/3/fiber/sk'));
      pm = createPeerManager({
        identity,
        listenAddr: '/ip4/127.0.0.1/tcp/0',
        chainHash: String(refInfo.chain_hash),
        timeouts: { keepAliveMs: 1000 },
      });
      await pm.start();
      svc = createGraphService({
        db: openDatabase(':memory:', [graphSchema]),
        identity,
        chainHash: Buffer.from(String(refInfo.chain_hash).slice(2), 'hex'),
        peers: pm,
        funding: createChainFundingChecker(createChainClient({ rpcUrl: rpc.url })),
        announcePrivateAddr: true,
        timers: false,
      });
      svc.start();
    });

    afterAll(async () => {
      await svc?.stop();
      await pm?.stop();
      await ref?.close();
      await rpc?.close();
      t?.close();
    });

    it('the reference verifies Strand-signed ChannelAnnouncement (ECDSA ×2 + MuSig2) and ChannelUpdates', async () => {
      const client = createChainClient({ rpcUrl: rpc.url });
      const chainHash = Buffer.from((await client.chainHash()).slice(2), 'hex');
      const [n1, n2] = [party(0x61), party(0x62)];
      const probe = signedChannel(n1, n2, chainHash, { txHash: new Uint8Array(32), index: 0 });
      const fundingArgs = bytesToHex(ckbHash(probe.ckbKey).slice(0, 20));
      const txHash = await createWallet({ client, secretKey: KEY_A }).transfer(
        sighashLock(fundingArgs),
        500n * CKB,
      );
      await client.generateBlock();
      const op = { txHash: new Uint8Array(Buffer.from(txHash.slice(2), 'hex')), index: 0 };
      const ca = signedChannel(n1, n2, chainHash, op, 400n * CKB);
      expect(await svc.processBroadcast({ type: 'ChannelAnnouncement', value: ca })).toBe('accepted');
      expect(
        await svc.processBroadcast({
          type: 'ChannelUpdate',
          value: signedUpdate(n1, ca, { feeRate: 1111n }),
        }),
      ).toBe('accepted');
      expect(
        await svc.processBroadcast({
          type: 'ChannelUpdate',
          value: signedUpdate(n2, ca, { feeRate: 2222n }),
        }),
      ).toBe('accepted');

      await ref.call('connect_peer', [{ address: pm.listeningAddrs()[1]! }]);
      type Info = { fee_rate: string } | null;
      type Chan = {
        channel_outpoint: string;
        capacity: string;
        update_info_of_node1: Info;
        update_info_of_node2: Info;
      };
      let channels: Chan[] = [];
      for (let i = 0; i < 180; i++) {
        channels = ((await ref.call('graph_channels', [{}])).channels as Chan[]) ?? [];
        if (channels.length > 0 && channels[0]!.update_info_of_node1 && channels[0]!.update_info_of_node2)
          break;
        await new Promise((r) => setTimeout(r, 500));
      }
      expect(channels, `reference logs: ${ref.logs.slice(-20).join(' | ')}`).toHaveLength(1);
      const c = channels[0]!;
      expect(c.channel_outpoint).toBe(`${txHash}00000000`);
      expect(c.capacity).toBe(`0x${(400n * CKB).toString(16)}`);
      const fees = [c.update_info_of_node1?.fee_rate, c.update_info_of_node2?.fee_rate];
      expect(fees).toEqual(['0x457', '0x8ae']);
      expect(ref.errors).toEqual([]);
    });
  },
);
