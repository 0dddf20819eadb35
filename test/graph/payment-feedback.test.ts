/**
 * What the payment layer feeds back into the graph: attempt successes and failures (the
 * reference's record_payment_fail table), failed channels / nodes, and the node's own channels.
 */
import { describe, expect, it } from 'vitest';
import { identityFromSecret } from '../../src/crypto/identity.ts';
import { directionOf, judgeFailure, type SessionRouteNode } from '../../src/graph/history.ts';
import { outpointHex, udtKey, udtKeyFromJson } from '../../src/graph/network-graph.ts';
import { createGraphService } from '../../src/graph/service.ts';
import { graphSchema } from '../../src/graph/store.ts';
import { paymentFailureOf, sessionRouteOf } from '../../src/payment/onion/index.ts';
import { openDatabase } from '../../src/store/db.ts';
import { outPoint, party, signedChannel, signedUpdate, trustingFunding } from './gossip-helpers.ts';
import { key, outpoint, policy } from './helpers.ts';

const [S, N1, N2, T] = [0, 1, 2, 3].map((i) => key(i).pk) as [string, string, string, string];
const ROUTE = [
  { target: N1, channelOutpoint: outpoint(0), amountReceived: 1030n, incomingTlcExpiry: 3 },
  { target: N2, channelOutpoint: outpoint(1), amountReceived: 1020n, incomingTlcExpiry: 2 },
  { target: T, channelOutpoint: outpoint(2), amountReceived: 1000n, incomingTlcExpiry: 1 },
];
const NODES: SessionRouteNode[] = sessionRouteOf(S, ROUTE, 1000n);

function pairs(code: string, erring: string | null) {
  const { result, retry } = judgeFailure(NODES, erring, code);
  return {
    retry,
    failNode: result.failNode,
    pairs: [...result.pairs.values()]
      .map((p) => `${p.outpoint.slice(-10)}:${p.direction}:${p.success ? 'ok' : 'fail'}:${p.amount}`)
      .sort(),
  };
}

const pair = (i: number, from: string, to: string, ok: boolean, amount: bigint) =>
  `${outpoint(i).slice(-10)}:${directionOf(from, to)}:${ok ? 'ok' : 'fail'}:${amount}`;

describe('session route', () => {
  it('nodes carry the channel to the next node and the amount it receives', () => {
    expect(NODES.map((n) => n.pubkey)).toEqual([S, N1, N2, T]);
    expect(NODES.map((n) => n.amount)).toEqual([1030n, 1020n, 1000n, 1000n]);
    expect(NODES[3]!.channelOutpoint).toBe(`0x${'00'.repeat(36)}`);
  });
});

describe('record_payment_fail table', () => {
  it('erring node outside the route: stop', () => {
    expect(pairs('TemporaryChannelFailure', key(9).pk)).toEqual({ retry: false, failNode: null, pairs: [] });
  });

  it('source errors: no retry for onion/final errors, FPB(1) for TemporaryChannelFailure', () => {
    expect(pairs('IncorrectOrUnknownPaymentDetails', S).retry).toBe(false);
    expect(pairs('TemporaryChannelFailure', S)).toEqual({
      retry: true,
      failNode: null,
      pairs: [pair(0, S, N1, false, 1020n)],
    });
    expect(pairs('PermanentChannelFailure', S)).toEqual({ retry: true, failNode: null, pairs: [] });
  });

  it('middle node: TemporaryChannelFailure fails its outgoing pair with the forwarded amount, credits the way there', () => {
    expect(pairs('TemporaryChannelFailure', N1)).toEqual({
      retry: true,
      failNode: null,
      pairs: [pair(0, S, N1, true, 1030n), pair(1, N1, N2, false, 1000n)].sort(),
    });
    expect(pairs('FeeInsufficient', N2).pairs).toEqual(
      [pair(0, S, N1, true, 1030n), pair(1, N1, N2, true, 1020n), pair(2, N2, T, false, 1000n)].sort(),
    );
    expect(pairs('IncorrectTlcExpiry', N1).retry).toBe(false);
    expect(pairs('IncorrectTlcExpiry', N1).failNode).toBe(N1);
    expect(pairs('PermanentNodeFailure', N2).failNode).toBe(N2);
    expect(pairs('IncorrectOrUnknownPaymentDetails', N1).retry).toBe(false);
    expect(pairs('UnknownNextPeer', N1).pairs).toEqual(
      [pair(1, N1, N2, false, 0n), pair(1, N2, N1, false, 0n)].sort(),
    );
  });

  it('final node: unknown payment gives up and credits the whole route; others fail the node', () => {
    expect(pairs('IncorrectOrUnknownPaymentDetails', T)).toEqual({
      retry: false,
      failNode: null,
      pairs: [pair(0, S, N1, true, 1030n), pair(1, N1, N2, true, 1020n), pair(2, N2, T, true, 1000n)].sort(),
    });
    const other = pairs('TemporaryNodeFailure', T);
    expect(other.retry).toBe(true);
    expect(other.failNode).toBe(T);
    expect(pairs('ExpiryTooSoon', T)).toEqual({ retry: false, failNode: null, pairs: [] });
  });
});

describe('GraphService feedback', () => {
  function service() {
    const db = openDatabase(':memory:', [graphSchema]);
    const me = party(1);
    const svc = createGraphService({
      db,
      identity: identityFromSecret(me.sk),
      chainHash: new Uint8Array(32).fill(7),
      funding: trustingFunding(),
      timers: false,
    });
    svc.start();
    return { svc, me };
  }

  it('own channels: liquidity decides the first hop; updates and removal take effect at once', () => {
    const { svc } = service();
    const target = key(50).pk;
    svc.ownChannelUp({
      outpoint: outpoint(0),
      peer: target,
      capacity: 10_000n,
      local: policy({ outboundLiquidity: 500n }),
      remote: policy({ outboundLiquidity: 9_500n }),
    });
    const req = { target, amount: 400n, finalTlcExpiryDelta: 86_400_000, tlcExpiryLimit: 1_209_600_000 };
    expect(svc.findRoute(req)).toHaveLength(1);
    expect(() => svc.findRoute({ ...req, amount: 600n })).toThrow(
      'Insufficient balance: max outbound liquidity 500 is insufficient, required amount: 600',
    );
    svc.ownChannelUpdated(outpoint(0), svc.pubkey, policy({ outboundLiquidity: 700n }));
    expect(svc.findRoute({ ...req, amount: 600n })).toHaveLength(1);
    svc.ownChannelUpdated(outpoint(0), svc.pubkey, policy({ outboundLiquidity: 700n, enabled: false }));
    expect(() => svc.findRoute({ ...req, amount: 600n })).toThrow(/Insufficient balance/);
    svc.ownChannelDown(outpoint(0));
    expect(svc.graph.channelCount).toBe(0);
  });

  it('a failure report disables the channel, re-applies the attached update and records history', async () => {
    const { svc } = service();
    const b = party(2);
    const c = party(3);
    const chain = new Uint8Array(32).fill(7);
    const bc = signedChannel(b, c, chain, outPoint(5));
    await svc.processBroadcast({ type: 'ChannelAnnouncement', value: bc });
    await svc.processBroadcast({
      type: 'ChannelUpdate',
      value: signedUpdate(b, bc, { timestamp: BigInt(Date.now() - 10_000) }),
    });
    await svc.processBroadcast({
      type: 'ChannelUpdate',
      value: signedUpdate(c, bc, { timestamp: BigInt(Date.now() - 10_000) }),
    });
    const pkB = Buffer.from(b.pk).toString('hex');
    const pkC = Buffer.from(c.pk).toString('hex');
    svc.ownChannelUp({
      outpoint: outpoint(0),
      peer: pkB,
      capacity: 10n ** 9n,
      local: policy({ outboundLiquidity: 10n ** 8n }),
      remote: policy(),
    });
    const req = {
      target: pkC,
      amount: 1000n,
      finalTlcExpiryDelta: 86_400_000,
      tlcExpiryLimit: 1_209_600_000,
    };
    const route = svc.findRoute(req);
    expect(route.map((h) => h.target)).toEqual([pkB, pkC]);
    const nodes = sessionRouteOf(svc.pubkey, route, 1000n);
    const bcOutpoint = outpointHex(bc.channelOutpoint);

    // B reports FeeInsufficient with a fresh update raising its fee: the update is applied
    const raised = signedUpdate(b, bc, { feeRate: 5000n });
    const retry = await svc.recordPaymentFailure(
      nodes,
      paymentFailureOf({
        code: 'FeeInsufficient',
        extra: {
          type: 'ChannelFailed',
          channelOutpoint: bc.channelOutpoint,
          channelUpdate: raised,
          nodeId: b.pk,
        },
      }),
    );
    expect(retry).toBe(true);
    const ch = svc.graph.channel(bcOutpoint)!;
    expect([ch.update1?.feeRate, ch.update2?.feeRate]).toContain(5000n);
    expect(svc.history.get(bcOutpoint, directionOf(pkB, pkC))?.failTime).toBeGreaterThan(0);

    // then ChannelDisabled: both directions off, no route any more
    await svc.recordPaymentFailure(
      nodes,
      paymentFailureOf({
        code: 'ChannelDisabled',
        extra: {
          type: 'ChannelFailed',
          channelOutpoint: bc.channelOutpoint,
          channelUpdate: null,
          nodeId: b.pk,
        },
      }),
    );
    expect(() => svc.findRoute(req)).toThrow('PathFind error: no path found');
  });

  it('UDT routes: the udt key from a JSON script (either form) finds the UDT channel only', () => {
    const { svc } = service();
    const target = key(70).pk;
    const json = { code_hash: `0x${'ab'.repeat(32)}`, hash_type: 'type', args: '0x0102' };
    const mol = { codeHash: new Uint8Array(32).fill(0xab), hashType: 1, args: Uint8Array.of(1, 2) };
    svc.ownChannelUp({
      outpoint: outpoint(8),
      peer: target,
      capacity: 10_000n,
      udtTypeScript: mol,
      local: policy({ outboundLiquidity: 5_000n }),
      remote: null,
    });
    const base = { target, amount: 100n, finalTlcExpiryDelta: 86_400_000, tlcExpiryLimit: 1_209_600_000 };
    expect(udtKeyFromJson(json)).toBe(udtKey(mol));
    expect(svc.findRoute({ ...base, udt: udtKeyFromJson(json) })[0]!.channelOutpoint).toBe(outpoint(8));
    expect(svc.findRoute({ ...base, udt: JSON.stringify(json) })[0]!.channelOutpoint).toBe(outpoint(8));
    expect(() => svc.findRoute(base)).toThrow(/Insufficient balance/);
    expect(udtKeyFromJson({ ...json, hash_type: 'bogus' })).toBeNull();
  });

  it('repeating ownChannelUp with the same state keeps the channel history; a change is applied', () => {
    const { svc } = service();
    const peer = key(60).pk;
    const up = (liquidity: bigint) =>
      svc.ownChannelUp({
        outpoint: outpoint(3),
        peer,
        capacity: 10_000n,
        local: policy({ outboundLiquidity: liquidity }),
        remote: null,
      });
    up(500n);
    svc.history.applyPairResult(outpoint(3), directionOf(svc.pubkey, peer), 400n, false, Date.now());
    up(500n);
    expect(svc.history.get(outpoint(3), directionOf(svc.pubkey, peer))).toBeDefined();
    up(800n);
    expect(
      svc.graph.channel(outpoint(3))?.[svc.pubkey < peer ? 'update1' : 'update2']?.outboundLiquidity,
    ).toBe(800n);
    expect(svc.history.get(outpoint(3), directionOf(svc.pubkey, peer))).toBeDefined();
  });

  it('a channel announcement assembled from both sides’ signatures is accepted', async () => {
    const { svc } = service();
    const { aggregateXOnly, signTogether, sortPubkeys } = await import('../../src/crypto/musig2.ts');
    const {
      channelAnnouncementDigest,
      completeChannelAnnouncement,
      signDigest,
      unsignedChannelAnnouncement,
    } = await import('../../src/graph/signing.ts');
    const local = party(1);
    const remote = party(2);
    const fund = [party(0x31), party(0x32)];
    const keys = sortPubkeys(fund.map((f) => f.pk));
    const unsigned = unsignedChannelAnnouncement({
      chainHash: new Uint8Array(32).fill(7),
      channelOutpoint: outPoint(33),
      localPubkey: local.pk,
      remotePubkey: remote.pk,
      fundingXOnlyKey: aggregateXOnly(keys),
      capacity: 500n * 100_000_000n,
      udtTypeScript: null,
    });
    const digest = channelAnnouncementDigest(unsigned);
    const signed = completeChannelAnnouncement(unsigned, {
      localPubkey: local.pk,
      localNodeSignature: signDigest(digest, local.sk),
      remoteNodeSignature: signDigest(digest, remote.sk),
      ckbSignature: signTogether(
        fund.map((f) => f.sk),
        keys,
        digest,
      ),
    });
    expect(await svc.processBroadcast({ type: 'ChannelAnnouncement', value: signed })).toBe('accepted');
    const swapped = {
      ...signed,
      node1Signature: signed.node2Signature,
      node2Signature: signed.node1Signature,
    };
    expect(
      await svc.processBroadcast({
        type: 'ChannelAnnouncement',
        value: { ...swapped, channelOutpoint: outPoint(34) },
      }),
    ).toBe('rejected');
  });

  it('success credits every pair of the route', () => {
    const { svc } = service();
    svc.recordPaymentSuccess(NODES);
    for (let i = 0; i < 3; i++) {
      const r = svc.history.get(
        NODES[i]!.channelOutpoint,
        directionOf(NODES[i]!.pubkey, NODES[i + 1]!.pubkey),
      );
      expect(r?.successAmount).toBe(NODES[i]!.amount);
    }
  });
});
