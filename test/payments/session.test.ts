/**
 * Payment sessions over a simulated network of nodes: the real path finder, the real onion
 * (every hop peels its layer with its own key), real error packets relayed back and decoded by
 * the sender, and the session store in SQLite. Only the channels are simulated, at the TlcOutbox
 * boundary: each hop checks what a node checks and fulfils or fails.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { beforeEach, describe, expect, it } from 'vitest';
import { minTlcExpiryDelta } from '../../src/codec/epoch-rules.ts';
import { bytesToHex, hexToBytes } from '../../src/codec/hex.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { PaymentHistory } from '../../src/graph/history.ts';
import { findPath, type RouteEdge, type RoutingGraph } from '../../src/graph/pathfind.ts';
import { createErrorPacket, peelOnion, relayErrorPacket } from '../../src/payment/onion/packet.ts';
import { type OutgoingTlc, PaymentService } from '../../src/payment/service.ts';
import { PaymentStore, paymentSchema } from '../../src/payment/store.ts';
import type { StoreChange } from '../../src/store/changes.ts';
import { openDatabase } from '../../src/store/db.ts';

const CKB = 100_000_000n;

interface SimNode {
  name: string;
  sk: Uint8Array;
  pubkey: string;
}

function node(name: string, seed: number): SimNode {
  const sk = new Uint8Array(32).fill(seed);
  return { name, sk, pubkey: bytesToHex(secp256k1.getPublicKey(sk, true), false) };
}

const A = node('A', 1);
const B = node('B', 2);
const C = node('C', 3);
const D = node('D', 4);

function outpoint(i: number): string {
  return '0x' + i.toString(16).padStart(64, '0') + '00000000';
}

/** Channels: A–B, B–C, A–D, D–C, 1000 ppm everywhere (the seed's fee case). */
const CHANNELS = [
  { a: A, b: B, op: outpoint(1) },
  { a: B, b: C, op: outpoint(2) },
  { a: A, b: D, op: outpoint(3) },
  { a: D, b: C, op: outpoint(4) },
];

function edgesOf(): RouteEdge[] {
  return CHANNELS.flatMap(({ a, b, op }, i) =>
    [
      [a, b],
      [b, a],
    ].map(([from, to]) => ({
      from: from!.pubkey,
      to: to!.pubkey,
      outpoint: op,
      capacity: 1000n * CKB,
      udt: null,
      feeRate: 1000n,
      tlcExpiryDelta: 14_400_000,
      tlcMinimumValue: 0n,
      outboundLiquidity: from === A ? 500n * CKB : null,
      // A–B–C is preferred on ties by being newer.
      lastUpdate: BigInt(10 - i),
    })),
  );
}

const graph: RoutingGraph = {
  inbounds: (n) => edgesOf().filter((e) => e.to === n),
  outbounds: (n) => edgesOf().filter((e) => e.from === n),
  edge: (op, from) => {
    const e = edgesOf().find((x) => x.outpoint === op && x.from === from);
    return e ? { edge: e, enabled: true } : undefined;
  },
  supportsMpp: () => true,
};

/**
 * The simulated channels: the TLC travels hop by hop; each node peels its layer. `broken` names
 * channels that refuse to forward (TemporaryChannelFailure from the node before them).
 */
class SimNetwork {
  broken = new Set<string>();
  /** What C knows: payment hash → preimage (its invoices). */
  preimages = new Map<string, Uint8Array>();
  received: { node: string; amount: bigint }[] = [];
  service!: PaymentService;

  async sendTlc(tlc: OutgoingTlc): Promise<void> {
    // Deliver after the sender has returned, as a channel would.
    setTimeout(() => this.travel(tlc), 1);
  }

  private travel(tlc: OutgoingTlc) {
    let packet = tlc.onionPacket;
    let amount = tlc.amount;
    let channel = tlc.channelOutpoint;
    let from = A.pubkey;
    const secrets: Uint8Array[] = [];
    const hash = hexToBytes(tlc.paymentHash);
    const fail = (packetFromErring: Uint8Array) => {
      let p = packetFromErring;
      // Each upstream hop adds its layer on the way back.
      for (let i = secrets.length - 2; i >= 0; i--) p = relayErrorPacket(p, secrets[i]!);
      this.service.tlcFailed(tlc.attemptId, { errorPacket: p });
    };
    for (;;) {
      const to = CHANNELS.find((c) => c.op === channel && (c.a.pubkey === from || c.b.pubkey === from))!;
      const here = to.a.pubkey === from ? to.b : to.a;
      const peeled = peelOnion(packet, here.sk, hash);
      secrets.push(peeled.sharedSecret);
      if (!peeled.next) {
        const pre = this.preimages.get(tlc.paymentHash) ?? peeled.current.paymentPreimage;
        if (!pre || amount !== peeled.current.amount) {
          fail(
            createErrorPacket({ code: 'IncorrectOrUnknownPaymentDetails', extra: null }, peeled.sharedSecret),
          );
          return;
        }
        this.received.push({ node: here.name, amount });
        this.service.tlcFulfilled(tlc.attemptId, pre);
        return;
      }
      const nextChannel = CHANNELS.find(
        (c) => bytesToHex(peeled.current.fundingTxHash) === c.op.slice(0, 66),
      )!;
      if (this.broken.has(nextChannel.op)) {
        const nodeId = hexToBytes(here.pubkey, 'node', 33);
        const err = {
          code: 'TemporaryChannelFailure' as const,
          extra: {
            type: 'ChannelFailed' as const,
            channelOutpoint: { txHash: hexToBytes(nextChannel.op.slice(0, 66)), index: 0 },
            channelUpdate: null,
            nodeId,
          },
        };
        fail(createErrorPacket(err, peeled.sharedSecret));
        return;
      }
      // The forwarding node keeps its fee and passes the rest on.
      expect(amount - peeled.current.amount).toBe((peeled.current.amount * 1000n + 999_999n) / 1_000_000n);
      this.received.push({ node: here.name, amount: amount - peeled.current.amount });
      amount = peeled.current.amount;
      packet = peeled.next;
      from = here.pubkey;
      channel = nextChannel.op;
    }
  }
}

let net: SimNetwork;
let service: PaymentService;
let store: PaymentStore;
let changes: StoreChange[];

function makeService() {
  const db = openDatabase(':memory:', [paymentSchema]);
  store = new PaymentStore(db);
  changes = [];
  net = new SimNetwork();
  const history = new PaymentHistory();
  service = new PaymentService({
    store,
    nodePubkey: A.pubkey,
    router: { findRoute: (req) => findPath(graph, req) },
    tlc: net,
    history,
    invoices: {
      parseInvoice: () => {
        throw new Error('no invoices in this test');
      },
      verifyInvoice: () => true,
      payeeOf: () => undefined,
    },
    onChange: (c) => changes.push(c),
  });
  net.service = service;
}

beforeEach(makeService);

function invoiceHash(seed: number): string {
  const pre = new Uint8Array(32).fill(seed);
  const hash = bytesToHex(ckbHash(pre));
  net.preimages.set(hash, pre);
  return hash;
}

describe('payment sessions', () => {
  it("pays over two hops with the seed's fee: 100000 on 100000000", async () => {
    const hash = invoiceHash(9);
    const rec = service.send({ target_pubkey: C.pubkey, amount: 100_000_000n, payment_hash: hash });
    expect(rec).toMatchObject({ payment_hash: hash, status: 'Created', failed_error: null, fee: '0x186a0' });
    await service.settled(hash);
    await new Promise((r) => setTimeout(r, 20));
    await service.settled(hash);
    const done = service.get(hash);
    expect(done.status).toBe('Success');
    expect(done.fee).toBe('0x186a0');
    expect(net.received).toEqual([
      { node: 'B', amount: 100_000n },
      { node: 'C', amount: 100_000_000n },
    ]);
    const kinds = changes.map((c) => Object.keys(c)[0]);
    expect(kinds).toContain('PutPreimage');
    expect(kinds.filter((k) => k === 'PutPaymentSession').length).toBeGreaterThanOrEqual(2);
  });

  it('keysend carries its own preimage', async () => {
    const rec = service.send({ target_pubkey: C.pubkey, amount: 5_000n, keysend: true });
    await waitFor(() => service.get(rec.payment_hash).status === 'Success');
    expect(net.received.at(-1)).toEqual({ node: 'C', amount: 5_000n });
  });

  it('retries over another route when a hop fails, and fails for good on a final error', async () => {
    net.broken.add(outpoint(2)); // B–C refuses
    const hash = invoiceHash(7);
    service.send({ target_pubkey: C.pubkey, amount: 1_000_000n, payment_hash: hash });
    await waitFor(() => service.get(hash).status === 'Success');
    expect(net.received.map((r) => r.node)).toEqual(['D', 'C']);

    const unknown = bytesToHex(new Uint8Array(32).fill(0xee)); // C has no preimage for it
    service.send({ target_pubkey: C.pubkey, amount: 1_000n, payment_hash: unknown });
    await waitFor(() => service.get(unknown).status === 'Failed');
    expect(service.get(unknown).failed_error).toBe('IncorrectOrUnknownPaymentDetails');
  });

  it('refuses a duplicate, reports no route, and validates like the reference', () => {
    const hash = invoiceHash(5);
    service.send({ target_pubkey: C.pubkey, amount: 1_000n, payment_hash: hash });
    expect(() => service.send({ target_pubkey: C.pubkey, amount: 1_000n, payment_hash: hash })).toThrow(
      /Payment session already exists: Hash256\(0x[0-9a-f]{64}\) with payment session status: (Created|Inflight)/,
    );
    const stranger = node('X', 9).pubkey;
    expect(() =>
      service.send({ target_pubkey: stranger, amount: 1_000n, payment_hash: invoiceHash(6) }),
    ).toThrow(/^Send payment error: Failed to build route, /);
    // On record as Failed with the reason, as the reference stores it; it may be sent again.
    const noRoute = service.get(invoiceHash(6));
    expect(noRoute.status).toBe('Failed');
    expect(noRoute.failed_error).toMatch(/^Send payment error: Failed to build route, /);
    expect(() =>
      service.send({ target_pubkey: stranger, amount: 1_000n, payment_hash: invoiceHash(6) }),
    ).toThrow(/^Send payment error: Failed to build route, /);
    expect(() => service.send({ amount: 1n, payment_hash: hash })).toThrow('"target_pubkey is missing"');
    expect(() => service.send({ target_pubkey: C.pubkey, payment_hash: hash })).toThrow(
      '"amount is missing"',
    );
    expect(() => service.send({ target_pubkey: C.pubkey, amount: 0n, payment_hash: invoiceHash(8) })).toThrow(
      '"amount must be greater than 0"',
    );
    expect(() => service.send({ target_pubkey: C.pubkey, amount: 1n })).toThrow('"payment_hash is missing"');
    expect(() =>
      service.send({ target_pubkey: C.pubkey, amount: 1n, keysend: true, payment_hash: hash }),
    ).toThrow('"keysend payment should not have payment_hash"');
    expect(() =>
      service.send({
        target_pubkey: C.pubkey,
        amount: 1n,
        payment_hash: invoiceHash(10),
        final_tlc_expiry_delta: 1n,
      }),
    ).toThrow('"invalid final_tlc_expiry_delta, expect between 9600000 and 1209600000"');
    expect(() =>
      service.send({ target_pubkey: A.pubkey, amount: 1n, payment_hash: invoiceHash(11) }),
    ).toThrow(/allow_self_payment is not enable/);
  });

  it('takes the least final_tlc_expiry_delta from the node (2/3 of its epoch)', () => {
    const short = new PaymentService({
      store,
      nodePubkey: A.pubkey,
      router: { findRoute: (req) => findPath(graph, req) },
      tlc: net,
      invoices: {
        parseInvoice: () => {
          throw new Error('no invoices in this test');
        },
        verifyInvoice: () => true,
        payeeOf: () => undefined,
      },
      minTlcExpiryDelta: minTlcExpiryDelta(2000),
    });
    const req = (delta: bigint, seed: number) => ({
      target_pubkey: C.pubkey,
      amount: 1_000n,
      payment_hash: invoiceHash(seed),
      final_tlc_expiry_delta: delta,
      dry_run: true,
    });
    expect(() => short.send(req(1332n, 40))).toThrow(
      '"invalid final_tlc_expiry_delta, expect between 1333 and 1209600000"',
    );
    expect(short.send(req(1333n, 41)).status).toBe('Created');
    // The default node keeps fnn's release bound.
    expect(() => service.send(req(1333n, 42))).toThrow(/expect between 9600000 and/);
  });

  it('pays over an explicit router, without retrying it', async () => {
    const route = findPath(graph, {
      source: A.pubkey,
      target: C.pubkey,
      amount: 10_000n,
      finalTlcExpiryDelta: 86_400_000,
      tlcExpiryLimit: 1_209_600_000,
    });
    const hash = invoiceHash(20);
    service.sendWithRouter({ payment_hash: hash }, route);
    await waitFor(() => service.get(hash).status === 'Success');
    expect(net.received.at(-1)).toEqual({ node: 'C', amount: 10_000n });
    // Paid once: the same hash is refused over a router as over a plain send.
    expect(() => service.sendWithRouter({ payment_hash: hash }, route)).toThrow(
      /Payment session already exists: Hash256\(0x[0-9a-f]{64}\) with payment session status: Success/,
    );

    net.broken.add(route[1]!.channelOutpoint);
    const hash2 = invoiceHash(21);
    service.sendWithRouter({ payment_hash: hash2 }, route);
    await waitFor(() => service.get(hash2).status === 'Failed');
    expect(service.get(hash2).failed_error).toBe('TemporaryChannelFailure');
    expect(() => service.sendWithRouter({ payment_hash: invoiceHash(22) }, [])).toThrow(
      'InvalidParameter: No hop requirements provided',
    );
  });

  it("follows the router's verdict on failures and tells it of successes", async () => {
    const seen: string[] = [];
    const db = openDatabase(':memory:', [paymentSchema]);
    const judged = new PaymentService({
      store: new PaymentStore(db),
      nodePubkey: A.pubkey,
      router: { findRoute: (req) => findPath(graph, req) },
      tlc: net,
      invoices: { parseInvoice: () => ({}) as never, verifyInvoice: () => true, payeeOf: () => undefined },
      feedback: {
        success: (nodes) => seen.push(`ok ${nodes.length}`),
        failure: async (nodes, f) => {
          seen.push(`fail ${f.code} ${nodes.length}`);
          return false; // the router says: do not retry
        },
      },
    });
    net.service = judged;
    const ok = invoiceHash(30);
    judged.send({ target_pubkey: C.pubkey, amount: 1_000n, payment_hash: ok });
    await waitFor(() => judged.get(ok).status === 'Success');
    net.broken.add(outpoint(2));
    const bad = invoiceHash(31);
    judged.send({ target_pubkey: C.pubkey, amount: 1_000n, payment_hash: bad });
    await waitFor(() => judged.get(bad).status === 'Failed');
    expect(judged.get(bad).failed_error).toBe('TemporaryChannelFailure');
    // Three session-route nodes (A, B, C) each time; no retry after the verdict.
    expect(seen).toEqual(['ok 3', 'fail TemporaryChannelFailure 3']);
  });

  it('answers a dry run with the fee and stores nothing', () => {
    const hash = invoiceHash(12);
    const rec = service.send({
      target_pubkey: C.pubkey,
      amount: 100_000_000n,
      payment_hash: hash,
      dry_run: true,
    });
    expect(rec.fee).toBe('0x186a0');
    expect(() => service.get(hash)).toThrow(`Payment session not found: Hash256(${hash})`);
  });

  it('lists payments in hash order with a cursor', async () => {
    const hashes = [13, 14, 15].map(invoiceHash);
    for (const h of hashes) service.send({ target_pubkey: C.pubkey, amount: 1_000n, payment_hash: h });
    const sorted = [...hashes].sort();
    const first = service.list({ limit: 2 });
    expect(first.payments.map((p) => p.payment_hash)).toEqual(sorted.slice(0, 2));
    const rest = service.list({ limit: 2, after: first.last_cursor! });
    expect(rest.payments.map((p) => p.payment_hash)).toEqual(sorted.slice(2));
    expect(service.list({ limit: 2, after: rest.last_cursor! })).toEqual({ payments: [], last_cursor: null });
    for (const h of hashes) await waitFor(() => service.get(h).status === 'Success');
    expect(service.list({ limit: 10, status: 'Success' }).payments).toHaveLength(3);
  });
});

async function waitFor(cond: () => boolean, ms = 5000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 5));
  }
}
