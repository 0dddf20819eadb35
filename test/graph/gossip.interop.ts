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
import { identityFromSecret } from '../../src/crypto/identity.ts';
import { createGraphService, type GraphService } from '../../src/graph/service.ts';
import { graphSchema } from '../../src/graph/store.ts';
import { createPeerManager, type PeerManager } from '../../src/p2p/peer-manager.ts';
import { openDatabase } from '../../src/store/db.ts';
import { type ReferenceNode, referenceAvailable, startReferenceNode } from '../interop/reference-node.ts';

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
