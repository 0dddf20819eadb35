/**
 * Interop level 1: the reference node (fiber-js 0.8.1 in headless Chromium) dials Strand over
 * WebSocket. The secio handshake and the yamux session complete, both protocols open, Strand
 * decodes the reference's Init and — the chains differing — closes the session with a reason
 * naming the reference's chain hash, checked against the reference's own node_info.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesToHex } from '../../src/codec/hex.ts';
import { identityFromSecret } from '../../src/crypto/identity.ts';
import type { Init } from '../../src/p2p/fiber-message.ts';
import { createPeerManager, type PeerManager } from '../../src/p2p/peer-manager.ts';
import { startNode } from '../helpers/node-process.ts';
import { type ReferenceNode, referenceAvailable, startReferenceNode } from './reference-node.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures');
const read = (p: string) => new Uint8Array(fs.readFileSync(path.join(FIXTURES, p)));

describe.skipIf(!referenceAvailable())('reference node (fiber-js 0.8.1) dials Strand over WebSocket', () => {
  let ref: ReferenceNode;
  let strand: PeerManager;
  const events: string[] = [];
  const inits: Init[] = [];
  const reasons: string[] = [];

  beforeAll(async () => {
    strand = createPeerManager({
      identity: identityFromSecret(read('fiber-test-nodes/1/fiber/sk')),
      listenAddr: '/ip4/127.0.0.1/tcp/0',
      // Deliberately not the reference's chain: the session must end on the chain-hash check.
      chainHash: new Uint8Array(32).fill(0x5a),
      logger: {
        debug: (o, m) => events.push(`debug ${m} ${JSON.stringify(o)}`),
        info: (o, m) => events.push(`info ${m} ${JSON.stringify(o)}`),
        warn: (o, m) => events.push(`warn ${m} ${JSON.stringify(o)}`),
        error: (o, m) => events.push(`error ${m} ${JSON.stringify(o)}`),
      },
    });
    strand.on('init', (_p, init) => inits.push(init));
    strand.on('protocol', (_pk, id) => events.push(`protocol ${id}`));
    strand.on('disconnected', (_p, reason) => reasons.push(reason));
    await strand.start();
    ref = await startReferenceNode({
      fiberSecretKey: read('fiber-test-nodes/2/fiber/sk'),
      ckbSecretKey: Buffer.from(
        fs.readFileSync(path.join(FIXTURES, 'fiber-test-nodes/2/ckb/plain_key'), 'utf8').trim(),
        'hex',
      ),
      chainSpec: fs.readFileSync(path.join(FIXTURES, 'genesis/dev.toml'), 'utf8'),
      // Nothing listens there: the node needs no chain calls to start and to connect.
      ckbRpcUrl: 'http://127.0.0.1:9/',
    });
  });

  afterAll(async () => {
    await ref?.close();
    await strand?.stop();
  });

  it('completes secio and yamux, opens both protocols, and refuses the other chain by its hash', async () => {
    const refInfo = await ref.call('node_info');
    const ws = strand.listeningAddrs()[1]!;
    await ref.call('connect_peer', [{ address: ws }]);
    for (let i = 0; i < 400 && reasons.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(events).toContain('protocol 42');
    expect(events).toContain('protocol 43');
    expect(inits.length).toBe(1);
    expect(bytesToHex(inits[0]!.chainHash)).toBe(refInfo.chain_hash);
    // …which is the genesis hash of that spec in docs/reference/ckb-genesis.md.
    expect(refInfo.chain_hash).toBe('0x677c33a40ddd906cdb6ca996d80081a0a6da2ff40050525da640d5c24d557614');
    expect(reasons[0]).toBe(
      `Invalid chain hash: Hash256(${refInfo.chain_hash}) (expecting Hash256(0x${'5a'.repeat(32)}))`,
    );
    const session = events.find((e) => e.startsWith('info p2p peer session open'))!;
    expect(session).toContain(refInfo.pubkey);
    expect(ref.errors).toEqual([]);
  });

  it('stays connected on the same chain: both list each other, Strand disconnects cleanly', async () => {
    const refInfo = await ref.call('node_info');
    const same = createPeerManager({
      identity: identityFromSecret(read('fiber-test-nodes/3/fiber/sk')),
      listenAddr: '/ip4/127.0.0.1/tcp/0',
      chainHash: String(refInfo.chain_hash),
      // Ping every second: an unanswered yamux ping would end the session at the next tick.
      timeouts: { keepAliveMs: 1000 },
    });
    await same.start();
    try {
      let connected = false;
      same.on('connected', () => {
        connected = true;
      });
      await ref.call('connect_peer', [{ address: same.listeningAddrs()[1]! }]);
      for (let i = 0; i < 400 && !connected; i++) await new Promise((r) => setTimeout(r, 50));
      expect(connected).toBe(true);
      expect(same.list().map((p) => p.pubkey)).toEqual([refInfo.pubkey]);
      const listed = async () =>
        ((await ref.call('list_peers')).peers as { pubkey: string }[]).map((p) => p.pubkey);
      for (let i = 0; i < 100 && !(await listed()).includes(same.identity.pubkeyHex); i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(await listed()).toContain(same.identity.pubkeyHex);
      // Seconds later the session is still up: the reference answered our pings, and its gossip
      // query on /p2p/43 (GetBroadcastMessages, unanswered here) did not end it either.
      await new Promise((r) => setTimeout(r, 4000));
      expect(same.peersCount).toBe(1);
      await same.disconnect(String(refInfo.pubkey));
      for (let i = 0; i < 100 && (await listed()).includes(same.identity.pubkeyHex); i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(await listed()).not.toContain(same.identity.pubkeyHex);
    } finally {
      await same.stop();
    }
  });

  it('dials a real `strand node` process over WebSocket, which refuses it by its chain hash', async () => {
    const refInfo = await ref.call('node_info');
    const node = await startNode({
      config: { fiber: { chain: 'mainnet', listening_addr: '/ip4/127.0.0.1/tcp/0' } },
    });
    try {
      const info = (await node.call('node_info')).result as { addresses: string[]; chain_hash: string };
      const ws = info.addresses[0]!.replace('/p2p/', '/ws/p2p/');
      await ref.call('connect_peer', [{ address: ws }]);
      const expected = `Invalid chain hash: Hash256(${refInfo.chain_hash}) (expecting Hash256(${info.chain_hash}))`;
      for (let i = 0; i < 400 && !node.output().includes(expected); i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(node.output()).toContain(expected);
      expect((await node.call('list_peers')).result).toEqual({ peers: [] });
    } finally {
      await node.stop();
    }
  });
});
