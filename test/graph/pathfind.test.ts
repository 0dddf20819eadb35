import { describe, expect, it } from 'vitest';
import { buildPath } from '../../src/graph/build-path.ts';
import { PaymentHistory } from '../../src/graph/history.ts';
import { udtKey } from '../../src/graph/network-graph.ts';
import { findPathInRange, maxRoutableAmount } from '../../src/graph/path-range.ts';
import {
  checkOutboundLiquidity,
  effectiveMaxFee,
  type FindRouteRequest,
  findPath,
  forwardFee,
  PathFindError,
} from '../../src/graph/pathfind.ts';
import { buildOnion, buildPaymentHops, peelOnion, routeFee } from '../../src/payment/onion/index.ts';
import { graphOf, key, outpoint } from './helpers.ts';

const [A, B, C, D, E] = [0, 1, 2, 3, 4].map((i) => key(i).pk) as [string, string, string, string, string];
const FINAL = 86_400_000;
const LIMIT = 1_209_600_000;
const CKB = 100_000_000n;

function req(p: Partial<FindRouteRequest>): FindRouteRequest {
  return {
    source: A,
    target: C,
    amount: CKB,
    finalTlcExpiryDelta: FINAL,
    tlcExpiryLimit: LIMIT,
    now: 1_000_000,
    ...p,
  };
}

describe('fees and amounts', () => {
  it('fee per hop is ceil(amount × ppm / 1e6)', () => {
    expect(forwardFee(100_000_000n, 1000n)).toBe(100_000n);
    expect(forwardFee(1n, 1n)).toBe(1n);
    expect(forwardFee(999_999n, 1n)).toBe(1n);
    expect(forwardFee(0n, 5000n)).toBe(0n);
    expect(forwardFee(1n << 127n, 1000n)).toBeNull();
  });

  it('the seed case: A→B→C at 1000 ppm, 100000000 shannons → fee 100000 (0x186a0)', () => {
    const g = graphOf(A, [
      { a: A, b: B, ab: { feeRate: 1000n }, ba: { feeRate: 1000n } },
      { a: B, b: C, ab: { feeRate: 1000n }, ba: { feeRate: 1000n } },
    ]);
    const route = findPath(g, req({}));
    expect(route.map((h) => h.target)).toEqual([B, C]);
    expect(route[0]!.amountReceived).toBe(100_100_000n);
    expect(route[1]!.amountReceived).toBe(100_000_000n);
    expect(routeFee(route, CKB)).toBe(100_000n);
    expect('0x' + routeFee(route, CKB).toString(16)).toBe('0x186a0');
    // expiries: C receives the final delta; B adds its own outgoing delta; A's first hop adds none
    expect(route[1]!.incomingTlcExpiry).toBe(FINAL);
    expect(route[0]!.incomingTlcExpiry).toBe(FINAL + 14_400_000);
  });

  it("the fee comes from the forwarding node's update of its outgoing channel", () => {
    const g = graphOf(A, [
      { a: A, b: B, ab: { feeRate: 7777n }, ba: { feeRate: 1n } },
      { a: B, b: C, ab: { feeRate: 2000n, tlcExpiryDelta: 1_000_000n }, ba: { feeRate: 9n } },
    ]);
    const route = findPath(g, req({}));
    expect(routeFee(route, CKB)).toBe(200_000n);
    expect(route[0]!.incomingTlcExpiry).toBe(FINAL + 1_000_000);
  });

  it('max fee: min(user value, ceil(amount × rate / 1000)), rate 5‰ by default', () => {
    expect(effectiveMaxFee(CKB, null)).toBe(500_000n);
    expect(effectiveMaxFee(CKB, 10n)).toBe(10n);
    expect(effectiveMaxFee(CKB, 10n ** 9n)).toBe(500_000n);
    expect(effectiveMaxFee(1001n, null)).toBe(6n);
    expect(effectiveMaxFee(CKB, null, 1n)).toBe(100_000n);
  });
});

describe('route choice and filters', () => {
  // A → B → C (cheap) and A → D → C (expensive)
  const twoPaths = (p: { bc?: object; dc?: object; capBC?: bigint } = {}) =>
    graphOf(A, [
      { a: A, b: B },
      { a: B, b: C, ab: { feeRate: 100n, ...p.bc }, capacity: p.capBC },
      { a: A, b: D },
      { a: D, b: C, ab: { feeRate: 3000n, ...p.dc } },
    ]);

  it('takes the cheaper path', () => {
    expect(findPath(twoPaths(), req({})).map((h) => h.target)).toEqual([B, C]);
  });

  it('skips disabled directions, too-small capacity, tlc minimum and long deltas', () => {
    expect(findPath(twoPaths({ bc: { enabled: false } }), req({}))[0]!.target).toBe(D);
    expect(findPath(twoPaths({ capBC: CKB - 1n }), req({}))[0]!.target).toBe(D);
    expect(findPath(twoPaths({ bc: { tlcMinimumValue: CKB * 2n } }), req({}))[0]!.target).toBe(D);
    expect(findPath(twoPaths({ bc: { tlcExpiryDelta: 14_400_001n } }), req({}))[0]!.target).toBe(D);
  });

  it('respects the fee cap and the expiry limit', () => {
    const cap = effectiveMaxFee(CKB, null);
    expect(() =>
      findPath(twoPaths({ bc: { feeRate: 6000n }, dc: { feeRate: 5001n } }), req({ maxFeeAmount: cap })),
    ).toThrow('PathFind error: no path found');
    expect(
      findPath(twoPaths({ bc: { feeRate: 4000n }, dc: { feeRate: 6000n } }), req({ maxFeeAmount: cap }))[0]!
        .target,
    ).toBe(B);
    expect(() => findPath(twoPaths(), req({ tlcExpiryLimit: FINAL + 14_399_999 }))).toThrow(PathFindError);
    expect(findPath(twoPaths(), req({ tlcExpiryLimit: FINAL + 14_400_000 })).length).toBe(2);
  });

  it("own channels: outbound liquidity limits the first hop; the source's first hop charges nothing", () => {
    const g = graphOf(A, [
      { a: A, b: B, ab: { outboundLiquidity: CKB - 1n, feeRate: 50_000n } },
      { a: B, b: C, ab: { feeRate: 10n } },
      { a: A, b: D, ab: { outboundLiquidity: 10n * CKB } },
      { a: D, b: C, ab: { feeRate: 20n } },
    ]);
    const route = findPath(g, req({}));
    expect(route[0]!.target).toBe(D);
    expect(routeFee(route, CKB)).toBe(2000n);
    expect(() => checkOutboundLiquidity(g, A, 11n * CKB, null, false)).toThrow(
      `Insufficient balance: max outbound liquidity ${10n * CKB} is insufficient, required amount: ${11n * CKB}`,
    );
    expect(() => checkOutboundLiquidity(g, A, 11n * CKB, null, true)).toThrow(/total outbound liquidity/);
    checkOutboundLiquidity(g, A, 10n * CKB, null, false);
  });

  it('UDT routes use only channels of the same UDT script', () => {
    const udt = { codeHash: new Uint8Array(32).fill(9), hashType: 1, args: new Uint8Array([1, 2]) };
    const g = graphOf(A, [
      { a: A, b: B, udt },
      { a: B, b: C, udt, ab: { feeRate: 5000n } },
      { a: A, b: D },
      { a: D, b: C, ab: { feeRate: 1n } },
    ]);
    expect(findPath(g, req({ udt: udtKey(udt) }))[0]!.target).toBe(B);
    expect(findPath(g, req({}))[0]!.target).toBe(D);
    const other = { ...udt, args: new Uint8Array([3]) };
    expect(() => findPath(g, req({ udt: udtKey(other) }))).toThrow(/no path found/);
  });

  it('refuses amount 0, self payment unless allowed, and finds nothing in an empty graph', () => {
    const g = graphOf(A, [{ a: A, b: B }]);
    expect(() => findPath(g, req({ amount: 0n }))).toThrow('Graph error: amount must be greater than 0');
    expect(() => findPath(g, req({ target: A }))).toThrow(
      'Feature not enabled: allow_self_payment is not enable, can not pay self',
    );
    expect(() => findPath(g, req({ target: E }))).toThrow('PathFind error: no path found');
  });

  it('self payment goes out one channel and back through another', () => {
    const g = graphOf(A, [
      { a: A, b: B },
      { a: B, b: C },
      { a: C, b: A, ab: { feeRate: 500n }, capacity: 10n ** 13n },
    ]);
    const route = findPath(g, req({ target: A, allowSelfPayment: true }));
    expect(route.map((h) => h.target)).toEqual([B, C, A]);
    expect(route[2]!.channelOutpoint).toBe(outpoint(2));
    expect(route[2]!.amountReceived).toBe(CKB);
    expect(route[1]!.amountReceived).toBe(CKB + 50_000n);
  });

  it('hop hints reach a target over a private channel the graph does not know', () => {
    const g = graphOf(A, [{ a: A, b: B }]);
    const hint = { pubkey: B, channelOutpoint: outpoint(9), feeRate: 2000n, tlcExpiryDelta: 14_400_000 };
    expect(() => findPath(g, req({ target: E }))).toThrow(/no path found/);
    const route = findPath(g, req({ target: E, hopHints: [hint] }));
    expect(route.map((h) => h.target)).toEqual([B, E]);
    expect(route[1]!.channelOutpoint).toBe(outpoint(9));
    expect(route[0]!.amountReceived).toBe(CKB + 200_000n);
    // A history record does not drop the hint (the reference passes the hint's capacity and
    // minimum swapped, which did; Strand takes them as unbounded and zero) …
    const history = new PaymentHistory();
    const dir = B < E ? 'forward' : 'backward';
    history.applyPairResult(outpoint(9), dir, 5n, true, Date.now());
    expect(findPath(g, req({ target: E, hopHints: [hint], history })).map((h) => h.target)).toEqual([B, E]);
    // … but a fresh failure of the amount over it does.
    history.applyPairResult(outpoint(9), dir, CKB, false, Date.now());
    expect(() => findPath(g, req({ target: E, hopHints: [hint], history, now: Date.now() }))).toThrow(
      /no path found/,
    );
  });

  it('max-capacity search (amount null) returns the widest path', () => {
    const g = graphOf(A, [
      { a: A, b: B, capacity: 500n },
      { a: B, b: C, capacity: 400n },
      { a: A, b: D, capacity: 900n },
      { a: D, b: C, capacity: 700n },
    ]);
    const route = findPath(g, req({ amount: null }));
    expect(route.map((h) => h.target)).toEqual([D, C]);
    expect(route[route.length - 1]!.amountReceived).toBe(700n);
  });
});

describe('success probability from payment history', () => {
  it('a recent failure steers the route to the other path, and decays with time', () => {
    const g = graphOf(A, [
      { a: A, b: B },
      { a: B, b: C, ab: { feeRate: 100n } },
      { a: A, b: D },
      { a: D, b: C, ab: { feeRate: 300n } },
    ]);
    const history = new PaymentHistory();
    const now = 10_000_000;
    expect(findPath(g, req({ history, now }))[0]!.target).toBe(B);
    history.applyPairResult(outpoint(1), B < C ? 'forward' : 'backward', CKB / 2n, false, now);
    expect(history.evalProbability(B, C, outpoint(1), CKB, 10n ** 12n, now)).toBe(0);
    expect(findPath(g, req({ history, now }))[0]!.target).toBe(D);
    // hours later the failed amount has relaxed towards the capacity
    const later = now + 20 * 3_600_000;
    const p = history.evalProbability(B, C, outpoint(1), CKB, 10n ** 12n, later);
    expect(p).toBeGreaterThan(0.5);
    expect(findPath(g, req({ history, now: later }))[0]!.target).toBe(B);
  });

  it('history records follow the reference rules', () => {
    const h = new PaymentHistory();
    h.applyPairResult('x', 'forward', 100n, true, 1);
    h.applyPairResult('x', 'forward', 50n, false, 2);
    expect(h.get('x', 'forward')).toEqual({
      failTime: 2,
      failAmount: 50n,
      successTime: 1,
      successAmount: 49n,
    });
    h.applyPairResult('x', 'forward', 80n, false, 3); // larger fail within a minute: ignored
    expect(h.get('x', 'forward')!.failAmount).toBe(50n);
    h.applyPairResult('x', 'forward', 60n, true, 4);
    expect(h.get('x', 'forward')).toEqual({
      failTime: 2,
      failAmount: 61n,
      successTime: 4,
      successAmount: 60n,
    });
    h.applyPairResult('x', 'forward', 0n, false, 100_000);
    expect(h.get('x', 'forward')!.successAmount).toBe(0n);
    h.processChannelUpdate('x', 'forward', false);
    expect(h.get('x', 'forward')).toBeUndefined();
  });

  it('pending parts on a channel lower its probability (0.95 per part)', () => {
    const g = graphOf(A, [
      { a: A, b: B },
      { a: B, b: C, ab: { feeRate: 100n } },
      { a: A, b: D },
      { a: D, b: C, ab: { feeRate: 110n } },
    ]);
    const stats = { sentAmount: () => 0n, pendingCount: (o: string) => (o === outpoint(1) ? 5 : 0) };
    expect(findPath(g, req({}))[0]!.target).toBe(B);
    expect(findPath(g, req({ stats }))[0]!.target).toBe(D);
  });
});

describe('route → onion payloads (§2.2)', () => {
  it('builds per-hop amounts and expiries that each node peels back', () => {
    const keys = [0, 1, 2, 3, 4].map(key);
    const [a, b, c, d, e] = keys.map((k) => k.pk) as [string, string, string, string, string];
    const g = graphOf(a, [
      { a, b },
      { a: b, b: c, ab: { feeRate: 1000n } },
      { a: c, b: d, ab: { feeRate: 2000n, tlcExpiryDelta: 10_000_000n } },
      { a: d, b: e, ab: { feeRate: 3000n } },
    ]);
    const route = findPath(g, req({ source: a, target: e }));
    const now = 1_700_000_000_000;
    const hops = buildPaymentHops(route, {
      amount: CKB,
      finalTlcExpiryDelta: FINAL,
      now,
      randomOffset: 14_400_000,
    });
    expect(hops.map((h) => h.amount)).toEqual([100_601_101n, 100_500_600n, CKB + 300_000n, CKB, CKB]);
    expect(hops[4]!.expiry).toBe(BigInt(now + FINAL + 14_400_000));
    expect(hops[3]!.expiry).toBe(BigInt(now + FINAL + 14_400_000));
    expect(hops[2]!.expiry).toBe(BigInt(now + FINAL + 14_400_000 * 2));
    expect(hops[0]!.expiry - hops[1]!.expiry).toBe(14_400_000n);
    const hash = new Uint8Array(32).fill(3);
    const onion = buildOnion(hops, hash);
    let packet: Uint8Array | null = onion.packet;
    for (let i = 1; i <= 4; i++) {
      const peeled = peelOnion(packet!, keys[i]!.sk, hash);
      expect(peeled.current).toEqual(hops[i]);
      packet = peeled.next;
    }
    expect(packet).toBeNull();
  });

  it('the random offset is a multiple of 4 h within the 14-day limit', async () => {
    const { randomExpiryOffset } = await import('../../src/payment/onion/route-hops.ts');
    for (let i = 0; i < 50; i++) {
      const r = randomExpiryOffset([
        { target: B, channelOutpoint: outpoint(0), amountReceived: 1n, incomingTlcExpiry: FINAL },
      ]);
      expect(r % 14_400_000).toBe(0);
      expect(r).toBeGreaterThanOrEqual(14_400_000);
      expect(r + FINAL).toBeLessThan(LIMIT);
    }
  });
});

describe('build_router (explicit hops)', () => {
  const g = graphOf(A, [
    { a: A, b: B },
    { a: B, b: C, ab: { feeRate: 1000n }, capacity: 10n ** 12n },
    { a: B, b: C, ab: { feeRate: 10n }, capacity: 10n ** 11n, id: outpoint(7) },
    { a: C, b: D, ab: { feeRate: 2000n, tlcExpiryDelta: 10_000_000n } },
  ]);

  it('matches find_path on the same hops and picks the cheaper parallel channel', () => {
    const built = buildPath(g, {
      source: A,
      hops: [
        { pubkey: B, channelOutpoint: null },
        { pubkey: C, channelOutpoint: null },
      ],
      amount: CKB,
      finalTlcExpiryDelta: FINAL,
    });
    expect(built).toEqual(findPath(g, req({})));
    expect(built[1]!.channelOutpoint).toBe(outpoint(7));
  });

  it('honours a given channel, adds each hop delta, and defaults the amount to 1', () => {
    const built = buildPath(g, {
      source: A,
      hops: [
        { pubkey: B, channelOutpoint: null },
        { pubkey: C, channelOutpoint: outpoint(1) },
        { pubkey: D, channelOutpoint: null },
      ],
    });
    expect(built.map((h) => h.channelOutpoint)).toEqual([outpoint(0), outpoint(1), outpoint(3)]);
    expect(built.map((h) => h.amountReceived)).toEqual([3n, 2n, 1n]);
    expect(built.map((h) => h.incomingTlcExpiry)).toEqual([
      FINAL + 14_400_000 + 10_000_000,
      FINAL + 10_000_000,
      FINAL,
    ]);
  });

  it('refuses hops that are not connected and amount 0', () => {
    expect(() => buildPath(g, { source: A, hops: [{ pubkey: C, channelOutpoint: null }] })).toThrow(
      'PathFind error: no path found',
    );
    expect(() => buildPath(g, { source: A, hops: [{ pubkey: B, channelOutpoint: outpoint(5) }] })).toThrow(
      /no path found/,
    );
    expect(() =>
      buildPath(g, { source: A, hops: [{ pubkey: B, channelOutpoint: null }], amount: 0n }),
    ).toThrow(/amount must be greater than 0/);
  });
});

describe('MPP helpers', () => {
  const g = graphOf(A, [
    { a: A, b: B, capacity: 1000n, ab: { outboundLiquidity: 60n, feeRate: 0n } },
    { a: B, b: C, capacity: 1000n, ab: { feeRate: 0n } },
    { a: A, b: D, capacity: 800n, ab: { outboundLiquidity: 50n, feeRate: 0n } },
    { a: D, b: C, capacity: 700n, ab: { feeRate: 0n } },
  ]);

  it('no single route carries 100; the range search finds the largest part and its route', () => {
    const r = { ...req({ allowMpp: true }), amount: 100n };
    expect(() => findPath(g, r)).toThrow(/no path found/);
    const part = findPathInRange(g, r, 1n);
    expect(part.amount).toBe(60n);
    expect(part.route[0]!.target).toBe(B);
    // the next part, with the first one's amount planned on A→B, goes through D
    const stats = {
      sentAmount: (o: string, from: string) => (o === outpoint(0) && from === A ? 60n : 0n),
      pendingCount: () => 0,
    };
    const second = findPathInRange(g, { ...r, amount: 40n, stats }, 1n);
    expect(second).toMatchObject({ amount: 40n });
    expect(second.route[0]!.target).toBe(D);
  });

  it('without MPP or a low bound the error stands; max capacity follows channel capacities', () => {
    expect(() => findPathInRange(g, { ...req({}), amount: 100n }, 1n)).toThrow(/no path found/);
    expect(() => findPathInRange(g, { ...req({ allowMpp: true }), amount: 100n }, null)).toThrow(
      /no path found/,
    );
    expect(maxRoutableAmount(g, req({}))).toBe(1000n);
  });
});
