/** Two and three PeerManagers over real TCP and WebSocket sockets on loopback. */

import { afterEach, describe, expect, it } from 'vitest';
import {
  encodeFiberMessage,
  type FiberMessage,
  featureNames,
  INIT_FEATURES,
} from '../../src/p2p/fiber-message.ts';
import type { PeerSession } from '../../src/p2p/session.ts';
import {
  CHAIN_A,
  CHAIN_B,
  clientSession,
  randomIdentity,
  startManager,
  stopAll,
  tcpAddr,
  tempDb,
  until,
  wsAddr,
} from './helpers.ts';

afterEach(stopAll);

describe('PeerManager on loopback', () => {
  for (const via of ['tcp', 'ws'] as const) {
    it(`connects over ${via}, exchanges Init and lists the peer on both sides`, async () => {
      const a = await startManager();
      const b = await startManager();
      const addr = via === 'tcp' ? tcpAddr(b) : wsAddr(b);
      const info = await a.connect(addr);
      expect(info.pubkey).toBe(b.identity.pubkeyHex);
      expect(info.peerId).toBe(b.identity.peerId);
      await until(
        () =>
          a.peerInit(b.identity.pubkeyHex) !== undefined && b.peerInit(a.identity.pubkeyHex) !== undefined,
      );
      expect(a.list().map((p) => p.pubkey)).toEqual([b.identity.pubkeyHex]);
      expect(b.list().map((p) => p.pubkey)).toEqual([a.identity.pubkeyHex]);
      expect(a.list()[0]!.address).toBe(addr);
      expect(b.list()[0]!.address).toMatch(
        new RegExp(`^/ip4/127\\.0\\.0\\.1/tcp/\\d+${via === 'ws' ? '/ws' : ''}/p2p/${a.identity.peerId}$`),
      );
      // The reference's defaults, and Strand's channel rules (optional bit 255).
      const features = b.peerInit(a.identity.pubkeyHex)!.features;
      expect(features).toEqual(INIT_FEATURES);
      expect(featureNames(features)).toEqual([
        'GOSSIP_QUERIES_REQUIRED',
        'BASIC_MPP_REQUIRED',
        'TRAMPOLINE_ROUTING_REQUIRED',
        'STRAND_CHANNEL_RULES_OPTIONAL',
      ]);
      expect(a.peersCount).toBe(1);
      expect(b.peersCount).toBe(1);
    });
  }

  it('disconnects on request, both sides see it, and the peer is not redialled', async () => {
    const a = await startManager();
    const b = await startManager();
    await a.connect(tcpAddr(b));
    await until(() => b.peersCount === 1);
    const seen: string[] = [];
    b.on('disconnected', (p, reason) => seen.push(`${p.pubkey}:${reason}`));
    await a.disconnect(b.identity.pubkeyHex);
    expect(a.peersCount).toBe(0);
    await until(() => b.peersCount === 0, 'b to see the disconnect');
    expect(seen[0]).toMatch(new RegExp(`^${a.identity.pubkeyHex}:`));
    await new Promise((r) => setTimeout(r, 400)); // several backoff periods
    expect(a.peersCount).toBe(0);
    await expect(a.disconnect(b.identity.pubkeyHex)).rejects.toThrow(
      `peer Pubkey(${b.identity.pubkeyHex}) is not connected`,
    );
  });

  it('refuses an address whose /p2p id is not the key proven in the handshake', async () => {
    const a = await startManager();
    const b = await startManager();
    const wrong = tcpAddr(b).replace(b.identity.peerId, randomIdentity().peerId);
    await expect(a.connect(wrong)).rejects.toThrow(/peer id not match/);
    expect(a.peersCount).toBe(0);
    await until(() => b.peersCount === 0);
  });

  it('disconnects a peer on another chain with a reason naming its chain hash', async () => {
    const a = await startManager();
    const b = await startManager({ chainHash: CHAIN_B });
    const reasons: string[] = [];
    a.on('disconnected', (_p, r) => reasons.push(r));
    await a.connect(tcpAddr(b));
    await until(() => reasons.length > 0, 'chain mismatch disconnect');
    expect(reasons[0]).toBe(
      `Invalid chain hash: Hash256(0x${'bb'.repeat(32)}) (expecting Hash256(0x${'aa'.repeat(32)}))`,
    );
    await until(() => a.peersCount === 0 && b.peersCount === 0);
  });

  it('refuses self, a duplicate and malformed addresses with the reference texts', async () => {
    const a = await startManager();
    const b = await startManager();
    await expect(a.connect(tcpAddr(a))).rejects.toThrow('cannot connect to self');
    await expect(a.connect('')).rejects.toThrow(
      'address must not be empty, expected a multiaddr like /ip4/1.2.3.4/tcp/8080',
    );
    await expect(a.connect('/ip4/300.0.0.1/tcp/1')).rejects.toThrow('invalid multiaddr');
    await expect(a.connect('/foo/1')).rejects.toThrow('unknown protocol string');
    await a.connect(tcpAddr(b));
    await expect(a.connect(tcpAddr(b))).rejects.toThrow('Peer already connected');
    await expect(a.connectByPubkey(randomIdentity().pubkeyHex)).rejects.toThrow(
      /^Peer not found error: Pubkey\(/,
    );
  });

  it('dispatches FiberMessages and gossip to registered handlers', async () => {
    const a = await startManager();
    const b = await startManager();
    const got: FiberMessage[] = [];
    const gossip: Uint8Array[] = [];
    b.onMessage('TxAbort', (from, m) => {
      expect(from).toBe(a.identity.pubkeyHex);
      got.push(m);
    });
    b.onGossip((_from, p) => {
      gossip.push(p);
    });
    await a.connect(wsAddr(b));
    await until(
      () => a.peerInit(b.identity.pubkeyHex) !== undefined && b.peerInit(a.identity.pubkeyHex) !== undefined,
    );
    a.send(b.identity.pubkeyHex, { type: 'TxAbort', raw: new Uint8Array([1, 2, 3]) });
    a.sendGossip(b.identity.pubkeyHex, new Uint8Array([9, 9]));
    await until(() => got.length === 1 && gossip.length === 1);
    expect(got[0]).toEqual({ type: 'TxAbort', raw: new Uint8Array([1, 2, 3]) });
    expect(gossip[0]).toEqual(new Uint8Array([9, 9]));
  });

  it('writes released messages to the socket when asked (flushReleased), not a microtask later', async () => {
    // The node's output gate: messages are held until the store is durable, then released.
    const held: (() => void)[] = [];
    let holding = false;
    const a = await startManager({
      release: (fn) => {
        if (holding) held.push(fn);
        else fn();
      },
    });
    const b = await startManager();
    const got: FiberMessage[] = [];
    b.onMessage('TxAbort', (_from, m) => {
      got.push(m);
    });
    await a.connect(tcpAddr(b));
    await until(
      () => a.peerInit(b.identity.pubkeyHex) !== undefined && b.peerInit(a.identity.pubkeyHex) !== undefined,
    );
    holding = true;
    const secure = (a as unknown as { peers: Map<string, { session: PeerSession }> }).peers.get(
      b.identity.pubkeyHex,
    )!.session.secure;
    const payload = { type: 'TxAbort' as const, raw: new Uint8Array([7, 7, 7]) };
    a.send(b.identity.pubkeyHex, payload);
    a.sendGossip(b.identity.pubkeyHex, new Uint8Array([5]));
    expect(held).toHaveLength(2);
    const before = secure.bytesSent;
    for (const fn of held.splice(0)) fn();
    // Released: queued in the session, to be written at a microtask.
    expect(secure.bytesSent).toBe(before);
    a.flushReleased();
    // Both messages in one sealed frame, written synchronously.
    expect(secure.bytesSent).toBeGreaterThan(before);
    const after = secure.bytesSent;
    await Promise.resolve();
    await new Promise((r) => setImmediate(r));
    expect(secure.bytesSent).toBe(after);
    await until(() => got.length === 1);
    expect(got[0]).toEqual(payload);
    // Nothing released since: nothing to write.
    a.flushReleased();
    expect(secure.bytesSent).toBe(after);
  });

  it('broadcasts gossip to every initialised peer but the one excluded', async () => {
    const hub = await startManager();
    const x = await startManager();
    const y = await startManager();
    const got: string[] = [];
    x.onGossip((from, p) => {
      got.push(`x:${from === hub.identity.pubkeyHex}:${p[0]}`);
    });
    y.onGossip((_from, p) => {
      got.push(`y:${p[0]}`);
    });
    await x.connect(tcpAddr(hub));
    await y.connect(wsAddr(hub));
    await until(
      () =>
        hub.list().filter((p) => p.init).length === 2 &&
        x.peerInit(hub.identity.pubkeyHex) !== undefined &&
        y.peerInit(hub.identity.pubkeyHex) !== undefined,
    );
    expect(hub.broadcastGossip(new Uint8Array([5])).sort()).toEqual(
      [x.identity.pubkeyHex, y.identity.pubkeyHex].sort(),
    );
    expect(hub.broadcastGossip(new Uint8Array([6]), y.identity.pubkeyHex)).toEqual([x.identity.pubkeyHex]);
    await until(() => got.length === 3);
    expect(got.sort()).toEqual(['x:true:5', 'x:true:6', 'y:5']);
  });

  it('holds messages that arrive before Init and delivers them once Init is accepted', async () => {
    const server = await startManager();
    const order: string[] = [];
    server.onGossip((_from, p) => {
      order.push(`gossip ${p[0]}`);
    });
    server.onMessage('TxAbort', () => {
      order.push('TxAbort');
    });
    server.on('connected', () => order.push('connected'));
    const { session } = await clientSession(server.listenPort!);
    session.send(43, new Uint8Array([1]));
    session.send(42, encodeFiberMessage({ type: 'TxAbort', raw: new Uint8Array([0]) }));
    session.send(43, new Uint8Array([2]));
    await new Promise((r) => setTimeout(r, 50));
    expect(order).toEqual([]);
    session.send(
      42,
      encodeFiberMessage({ type: 'Init', value: { features: new Uint8Array([0x15]), chainHash: CHAIN_A } }),
    );
    await until(() => order.length === 4);
    // Init first; then each protocol's messages in order (no order holds across protocols).
    expect(order[0]).toBe('connected');
    expect(order.filter((o) => o.startsWith('gossip'))).toEqual(['gossip 1', 'gossip 2']);
    expect(order).toContain('TxAbort');
    session.close('done');
  });

  it('three nodes: a hub sees both, and connectByPubkey finds a saved address', async () => {
    const hub = await startManager();
    const x = await startManager();
    const y = await startManager();
    await x.connect(tcpAddr(hub));
    await y.connect(wsAddr(hub));
    await until(() => hub.peersCount === 2);
    expect(new Set(hub.list().map((p) => p.pubkey))).toEqual(
      new Set([x.identity.pubkeyHex, y.identity.pubkeyHex]),
    );
    await x.disconnect(hub.identity.pubkeyHex);
    await until(() => hub.peersCount === 1);
    await x.connectByPubkey(hub.identity.pubkeyHex);
    await until(() => hub.peersCount === 2);
  });

  it('persists saved peers and reconnects after a restart, and after the peer restarts', async () => {
    const { db } = tempDb();
    const idA = randomIdentity();
    const b = await startManager();
    const a1 = await startManager({ identity: idA, db });
    await a1.connect(tcpAddr(b));
    await a1.stop();
    await until(() => b.peersCount === 0);
    const a2 = await startManager({ identity: idA, db });
    await until(() => a2.peersCount === 1 && b.peersCount === 1, 'reconnect from the saved address');
    // The peer restarts on the same port: a2 redials with backoff.
    const port = b.listenPort!;
    const idB = b.identity;
    await b.stop();
    await until(() => a2.peersCount === 0);
    const b2 = await startManager({ identity: idB, listenAddr: `/ip4/127.0.0.1/tcp/${port}` });
    await until(() => a2.peersCount === 1 && b2.peersCount === 1, 'redial after the peer restarted');
  });

  it('two nodes dialing each other at once keep one session, the same on both sides', async () => {
    for (let round = 0; round < 3; round++) {
      const [ia, ib] = [randomIdentity(), randomIdentity()];
      // Learn two free ports, then start both nodes with the other as bootnode at the same time.
      const probeA = await startManager({ identity: ia });
      const probeB = await startManager({ identity: ib });
      const [pa, pb] = [probeA.listenPort!, probeB.listenPort!];
      await Promise.all([probeA.stop(), probeB.stop()]);
      const opts = (id: typeof ia, port: number, other: typeof ib, otherPort: number) => ({
        identity: id,
        listenAddr: `/ip4/127.0.0.1/tcp/${port}`,
        bootnodes: [`/ip4/127.0.0.1/tcp/${otherPort}/p2p/${other.peerId}`],
      });
      const drops: string[] = [];
      const [a, b] = await Promise.all([
        startManager(opts(ia, pa, ib, pb)),
        startManager(opts(ib, pb, ia, pa)),
      ]);
      a.on('disconnected', (_p, r) => drops.push(r));
      b.on('disconnected', (_p, r) => drops.push(r));
      await until(() => !!a.peerInit(ib.pubkeyHex) && !!b.peerInit(ia.pubkeyHex), 'one session up');
      await new Promise((r) => setTimeout(r, 200));
      expect(a.peersCount).toBe(1);
      expect(b.peersCount).toBe(1);
      // Both keep the session dialled by the smaller key.
      expect(a.list()[0]!.outbound).toBe(ia.pubkeyHex < ib.pubkeyHex);
      expect(b.list()[0]!.outbound).toBe(ib.pubkeyHex < ia.pubkeyHex);
      expect(drops).toEqual([]);
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('enforces the inbound limit', async () => {
    const hub = await startManager({ limits: { maxInbound: 1 } });
    const x = await startManager();
    const y = await startManager();
    await x.connect(tcpAddr(hub));
    await expect(y.connect(tcpAddr(hub))).rejects.toThrow();
    expect(hub.peersCount).toBe(1);
  });
});
