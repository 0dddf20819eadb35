/** Gossip between real PeerManagers over /p2p/43: sync, push, queries, hostile input, persistence. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { multiaddr } from '@multiformats/multiaddr';
import { afterEach, describe, expect, it } from 'vitest';
import { identityFromSecret, type NodeIdentity } from '../../src/crypto/identity.ts';
import { hasPublicAddress } from '../../src/graph/broadcast.ts';
import { encodeGossipMessage } from '../../src/graph/messages.ts';
import { outpointHex } from '../../src/graph/network-graph.ts';
import { createGraphService, type GraphService } from '../../src/graph/service.ts';
import { graphSchema } from '../../src/graph/store.ts';
import type { PeerManager } from '../../src/p2p/peer-manager.ts';
import { peerSchema } from '../../src/p2p/peer-store.ts';
import { openDatabase } from '../../src/store/db.ts';
import { CHAIN_A, startManager, stopAll, tcpAddr, until } from '../p2p/helpers.ts';
import { outPoint, party, signedChannel, signedUpdate, trustingFunding } from './gossip-helpers.ts';

/** The sync state the service keeps per peer (private: read for the test's waits). */
const peerStates = (s: GraphService) => [
  ...(
    s as unknown as { sync: { peerState: Map<string, { subscribed?: boolean; subscriber?: boolean }> } }
  ).sync.peerState.values(),
];

const services: GraphService[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(services.splice(0).map((s) => s.stop()));
  await stopAll();
});

function dbFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-graph-'));
  dirs.push(dir);
  return path.join(dir, 'store.db');
}

async function node(
  seed: number,
  file = dbFile(),
): Promise<{ pm: PeerManager; svc: GraphService; id: NodeIdentity; file: string }> {
  const id = identityFromSecret(party(seed).sk);
  const db = openDatabase(file, [peerSchema, graphSchema]);
  const pm = await startManager({ identity: id, db });
  const svc = createGraphService({
    db,
    identity: id,
    chainHash: CHAIN_A,
    peers: pm,
    funding: trustingFunding(),
    announcePrivateAddr: true,
    timers: false,
  });
  svc.start();
  services.push(svc);
  return { pm, svc, id, file };
}

describe('gossip sync between two nodes', () => {
  it('active pull on connect brings node and channel announcements and updates; routes follow', async () => {
    const a = await node(1);
    const b = await node(2);
    const c = party(3);
    // A knows itself, C, and a channel A–C with both updates
    a.svc.announceNode({ nodeName: 'alice', addresses: [tcpAddr(a.pm)] });
    const ca = signedChannel(party(1), c, CHAIN_A, outPoint(7));
    expect(await a.svc.processBroadcast({ type: 'ChannelAnnouncement', value: ca })).toBe('accepted');
    expect(await a.svc.processBroadcast({ type: 'ChannelUpdate', value: signedUpdate(party(1), ca) })).toBe(
      'accepted',
    );
    expect(
      await a.svc.processBroadcast({ type: 'ChannelUpdate', value: signedUpdate(c, ca, { feeRate: 5n }) }),
    ).toBe('accepted');

    await b.pm.connect(tcpAddr(a.pm));
    const op = outpointHex(ca.channelOutpoint);
    await until(() => {
      const ch = b.svc.graph.channel(op);
      return !!ch?.update1 && !!ch.update2 && !!b.svc.graph.node(a.id.pubkeyHex);
    }, 'B to learn the channel and A');
    const learned = b.svc.graph.node(a.id.pubkeyHex)!.announcement;
    expect(new TextDecoder().decode(learned.nodeName).replace(/\0+$/, '')).toBe('alice');
    // B can now route from A to C over the learned channel (as if paying from A)
    const route = b.svc.findRoute({
      source: a.id.pubkeyHex,
      target: Buffer.from(c.pk).toString('hex'),
      amount: 1000n,
      finalTlcExpiryDelta: 86_400_000,
      tlcExpiryLimit: 1_209_600_000,
    });
    expect(route.map((h) => h.channelOutpoint)).toEqual([op]);

    // A's next announcement reaches B by the passive subscription
    await until(() => peerStates(b.svc).some((s) => s.subscribed), 'B subscribed');
    await until(() => peerStates(a.svc).some((s) => s.subscriber), 'A has a subscriber');
    a.svc.announceNode({ nodeName: 'alice-2', addresses: [tcpAddr(a.pm)] });
    await until(
      () =>
        new TextDecoder()
          .decode(b.svc.graph.node(a.id.pubkeyHex)!.announcement.nodeName)
          .startsWith('alice-2'),
      'B to receive the new announcement',
    );
    // and B's own announcement reaches A (A subscribed back)
    b.svc.announceNode({ nodeName: 'bob', addresses: [tcpAddr(b.pm)] });
    await until(() => !!a.svc.graph.node(b.id.pubkeyHex), 'A to receive B');
  });

  it('announcements travel along a line of three nodes (A–B–C) through subscriptions', async () => {
    const a = await node(71);
    const b = await node(72);
    const c = await node(73);
    await a.pm.connect(tcpAddr(b.pm));
    await c.pm.connect(tcpAddr(b.pm));
    const subscribers = (s: GraphService) => peerStates(s).filter((p) => p.subscriber).length;
    await until(
      () => subscribers(b.svc) === 2 && subscribers(a.svc) === 1 && subscribers(c.svc) === 1,
      'subscriptions',
    );
    c.svc.announceNode({ nodeName: 'carol' });
    await until(() => !!a.svc.graph.node(c.id.pubkeyHex), 'A to learn C through B');
    a.svc.announceNode({ nodeName: 'alice' });
    await until(() => !!c.svc.graph.node(a.id.pubkeyHex), 'C to learn A through B');
  });

  it('an update whose announcement is unknown is held, the announcement queried from the sender', async () => {
    const a = await node(11);
    const b = await node(12);
    const c = party(13);
    const ca = signedChannel(party(11), c, CHAIN_A, outPoint(9));
    await a.svc.processBroadcast({ type: 'ChannelAnnouncement', value: ca });
    await b.pm.connect(tcpAddr(a.pm));
    await until(() => !!b.svc.graph.channel(outpointHex(ca.channelOutpoint)), 'sync');
    // a second channel known only to A; B is sent only its update
    const ca2 = signedChannel(party(11), c, CHAIN_A, outPoint(10));
    await a.svc.processBroadcast({ type: 'ChannelAnnouncement', value: ca2 });
    const cu = signedUpdate(c, ca2, { feeRate: 77n });
    a.pm.sendGossip(
      b.id.pubkeyHex,
      encodeGossipMessage({
        type: 'BroadcastMessagesFilterResult',
        messages: [{ type: 'ChannelUpdate', value: cu }],
      }),
    );
    await until(() => {
      const ch = b.svc.graph.channel(outpointHex(ca2.channelOutpoint));
      return !!ch && (ch.update1?.feeRate === 77n || ch.update2?.feeRate === 77n);
    }, 'held update applied after the queried announcement');
  });

  it('hostile gossip ends the session, is dropped, and the node keeps serving', async () => {
    const a = await node(21);
    const b = await node(22);
    await b.pm.connect(tcpAddr(a.pm));
    await until(() => a.pm.list().some((p) => p.init), 'connected');
    // Bytes that are no GossipMessage end the session; the dialler comes back.
    const dropped = new Promise<string>((r) => a.pm.once('disconnected', (_p, reason) => r(reason)));
    b.pm.sendGossip(a.id.pubkeyHex, new Uint8Array([0xde, 0xad, 0xbe, 0xef, 1, 2, 3]));
    expect(await dropped).toMatch(/^malformed gossip message/);
    await until(() => a.pm.list().some((p) => p.init), 'reconnected');
    // a forged update (signed by the wrong key) and a node announcement with a bad signature
    const c = party(23);
    const ca = signedChannel(party(21), c, CHAIN_A, outPoint(30));
    await a.svc.processBroadcast({ type: 'ChannelAnnouncement', value: ca });
    const forged = signedUpdate(party(99), ca);
    expect(await a.svc.processBroadcast({ type: 'ChannelUpdate', value: forged })).toBe('rejected');
    const ann = b.svc.announceNode({ nodeName: 'bob' });
    expect(
      await a.svc.processBroadcast({
        type: 'NodeAnnouncement',
        value: { ...ann, timestamp: ann.timestamp + 5n },
      }),
    ).toBe('rejected');
    // a future timestamp (beyond 60 s of skew) is refused
    const future = signedUpdate(party(21), ca, { timestamp: BigInt(Date.now() + 120_000) });
    expect(await a.svc.processBroadcast({ type: 'ChannelUpdate', value: future })).toBe('rejected');
    // the node still syncs normally
    b.svc.announceNode({ nodeName: 'bob-2' });
    await until(() => !!a.svc.graph.node(b.id.pubkeyHex), 'A still learns B');
  });
});

describe('own channel updates', () => {
  it('are signed with the side bit and timestamp parity, and reach a subscribed peer', async () => {
    const a = await node(51);
    const b = await node(52);
    const ca = signedChannel(party(51), party(52), CHAIN_A, outPoint(60));
    await a.svc.processBroadcast({ type: 'ChannelAnnouncement', value: ca });
    await b.svc.processBroadcast({ type: 'ChannelAnnouncement', value: ca });
    await b.pm.connect(tcpAddr(a.pm));
    const subscribed = (s: GraphService) => peerStates(s).some((p) => p.subscriber);
    await until(() => subscribed(a.svc) && subscribed(b.svc), 'both subscribed');
    const peerOfA = b.id.pubkeyHex;
    const update = await a.svc.broadcastOwnChannelUpdate({
      peer: peerOfA,
      channelOutpoint: ca.channelOutpoint,
      channelFlags: 0,
      tlcExpiryDelta: 14_400_000n,
      tlcMinimumValue: 0n,
      tlcMaximumValue: 0n,
      feeRate: 1234n,
    });
    const aIsNode2 = a.id.pubkeyHex > peerOfA;
    expect(update.messageFlags).toBe(aIsNode2 ? 1 : 0);
    expect(update.timestamp % 2n).toBe(aIsNode2 ? 1n : 0n);
    await until(() => {
      const ch = b.svc.graph.channel(outpointHex(ca.channelOutpoint));
      return (aIsNode2 ? ch?.update2 : ch?.update1)?.feeRate === 1234n;
    }, 'B to receive A’s update');
  });
});

describe('graph store', () => {
  it('persists messages and history across a restart; older or duplicate messages change nothing', async () => {
    const file = dbFile();
    const first = await node(31, file);
    const c = party(32);
    const ca = signedChannel(party(31), c, CHAIN_A, outPoint(40));
    await first.svc.processBroadcast({ type: 'ChannelAnnouncement', value: ca });
    const cu = signedUpdate(c, ca, { feeRate: 42n, timestamp: BigInt(Date.now() - 1000) });
    expect(await first.svc.processBroadcast({ type: 'ChannelUpdate', value: cu })).toBe('accepted');
    expect(await first.svc.processBroadcast({ type: 'ChannelUpdate', value: cu })).toBe('duplicate');
    const older = signedUpdate(c, ca, { feeRate: 1n, timestamp: cu.timestamp - 2n });
    expect(await first.svc.processBroadcast({ type: 'ChannelUpdate', value: older })).toBe('stale');
    first.svc.history.applyPairResult(outpointHex(ca.channelOutpoint), 'forward', 5n, false, 123);
    first.svc.announceNode({ nodeName: 'persisted' });
    await first.svc.stop();
    await first.pm.stop();

    const db = openDatabase(file, [peerSchema, graphSchema]);
    const again = createGraphService({ db, identity: first.id, chainHash: CHAIN_A, timers: false });
    again.start();
    services.push(again);
    const ch = again.graph.channel(outpointHex(ca.channelOutpoint))!;
    expect([ch.update1?.feeRate, ch.update2?.feeRate]).toContain(42n);
    expect(again.graph.node(first.id.pubkeyHex)).toBeDefined();
    expect(again.history.get(outpointHex(ca.channelOutpoint), 'forward')?.failAmount).toBe(5n);
    db.close();
  });

  it('sync resumes from the newest remote message − 2 h (own announcements do not count), at most 14 days back', async () => {
    const now = 1_800_000_000_000;
    const id = identityFromSecret(party(61).sk);
    const file = dbFile();
    const db = openDatabase(file, [graphSchema]);
    const svc = createGraphService({
      db,
      identity: id,
      chainHash: CHAIN_A,
      timers: false,
      now: () => now,
      announcePrivateAddr: true,
    });
    svc.start();
    services.push(svc);
    const ts = (c: Uint8Array) => Buffer.from(c).readBigUInt64BE(0);
    const floor = BigInt(now) - 14n * 86_400_000n;
    svc.announceNode({ nodeName: 'me' });
    expect(ts(svc.startCursor())).toBe(floor);
    const other = createGraphService({
      db: openDatabase(':memory:', [graphSchema]),
      identity: identityFromSecret(party(62).sk),
      chainHash: CHAIN_A,
      timers: false,
      now: () => now - 3_600_000,
    });
    const ann = other.announceNode({ nodeName: 'other' });
    expect(await svc.processBroadcast({ type: 'NodeAnnouncement', value: ann }, 'ff'.repeat(33))).toBe(
      'accepted',
    );
    expect(ts(svc.startCursor())).toBe(BigInt(now - 3_600_000) - 7_200_000n);
    // after a restart the same cursor is found in the store
    await svc.stop();
    const again = createGraphService({ db, identity: id, chainHash: CHAIN_A, timers: false, now: () => now });
    again.start();
    services.push(again);
    expect(ts(again.startCursor())).toBe(BigInt(now - 3_600_000) - 7_200_000n);
  });

  it('prunes channels not refreshed for 28 days', async () => {
    let now = Date.now();
    const id = identityFromSecret(party(41).sk);
    const db = openDatabase(dbFile(), [graphSchema]);
    const svc = createGraphService({
      db,
      identity: id,
      chainHash: CHAIN_A,
      funding: trustingFunding(BigInt(now)),
      timers: false,
      now: () => now,
    });
    svc.start();
    services.push(svc);
    const ca = signedChannel(party(41), party(42), CHAIN_A, outPoint(50));
    await svc.processBroadcast({ type: 'ChannelAnnouncement', value: ca });
    expect(svc.prune()).toEqual([]);
    now += 29 * 86_400_000;
    expect(svc.prune()).toEqual([outpointHex(ca.channelOutpoint)]);
    expect(svc.graph.channelCount).toBe(0);
    expect(svc.store.get(`ca:${outpointHex(ca.channelOutpoint)}`)).toBeUndefined();
  });

  it('node announcements without a public address are dropped unless announce_private_addr', () => {
    expect(hasPublicAddress([multiaddr('/ip4/127.0.0.1/tcp/8228').bytes])).toBe(false);
    expect(hasPublicAddress([multiaddr('/ip4/192.168.1.2/tcp/8228').bytes])).toBe(false);
    expect(hasPublicAddress([multiaddr('/ip4/8.8.8.8/tcp/8228').bytes])).toBe(true);
    expect(hasPublicAddress([multiaddr('/dns4/node.example.com/tcp/8228').bytes])).toBe(true);
    expect(hasPublicAddress([])).toBe(false);
  });
});
