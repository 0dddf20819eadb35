/**
 * Three real node payment stacks (invoice service, payment service, relay — each with its own
 * SQLite store and node key) joined by simulated channels at the ChannelTlcPort boundary: the
 * seed's A→B→C payment with its fee, keysend, a hold invoice settled and one cancelled, and an
 * error at the final hop travelling back through B's layer to A. Each TLC is announced to its
 * receiver first, which peels its onion ahead (`onion-prepeel.ts`) and acts on that peel.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import { bytesToHex } from '../../src/codec/hex.ts';
import { findPath, type RouteEdge, type RoutingGraph } from '../../src/graph/pathfind.ts';
import { invoiceToJson } from '../../src/invoice/json.ts';
import { createInvoiceService, type InvoiceService } from '../../src/invoice/service.ts';
import { invoiceSchema } from '../../src/invoice/store.ts';
import { paymentLinkSchema, TlcLinks } from '../../src/payment/links.ts';
import { OnionPrePeeler } from '../../src/payment/onion-prepeel.ts';
import { type ChannelTlcPort, type ForwardPolicy, PaymentRelay } from '../../src/payment/relay.ts';
import { PaymentService } from '../../src/payment/service.ts';
import { PaymentStore, paymentSchema } from '../../src/payment/store.ts';
import { openDatabase } from '../../src/store/db.ts';

const CKB = 100_000_000n;

interface Stack {
  name: string;
  sk: Uint8Array;
  pubkey: string;
  invoices: InvoiceService;
  payments: PaymentService;
  relay: PaymentRelay;
  prePeeler: OnionPrePeeler;
  /** Incoming TLCs the relay took with the onion peeled ahead. */
  peeledAhead: number;
  balances: Map<string, bigint>;
}

/** A channel between two stacks; each TLC moves `amount` from the offerer once fulfilled. */
interface SimChannel {
  id: string;
  outpoint: string;
  a: Stack;
  b: Stack;
  tlcs: Map<bigint, { from: Stack; amount: bigint; paymentHash: string }>;
  nextTlc: bigint;
}

function outpoint(i: number) {
  return '0x' + i.toString(16).padStart(64, '0') + '00000000';
}

function buildNetwork() {
  const channels: SimChannel[] = [];
  const stacks: Stack[] = [];
  const policy = (ch: SimChannel): ForwardPolicy => ({
    feeRate: 1000n,
    tlcMinValue: 0n,
    tlcExpiryDelta: 14_400_000n,
    enabled: true,
    udt: null,
    udtScript: null,
    channelOutpoint: ch.outpoint,
  });
  const other = (ch: SimChannel, s: Stack) => (ch.a === s ? ch.b : ch.a);
  const portFor = (me: Stack): ChannelTlcPort => ({
    channelByFundingTx: (tx) => {
      const ch = channels.find((c) => c.outpoint.slice(0, 66) === tx && (c.a === me || c.b === me));
      return ch ? { channelId: ch.id, policy: policy(ch) } : undefined;
    },
    policyOf: (id) => {
      const ch = channels.find((c) => c.id === id);
      return ch ? policy(ch) : undefined;
    },
    offeredTlcs: () => [],
    unresolvedReceived: () => [],
    addTlc: async (channelId, t) => {
      const ch = channels.find((c) => c.id === channelId)!;
      const id = ch.nextTlc++;
      ch.tlcs.set(id, { from: me, amount: t.amount, paymentHash: t.paymentHash });
      const peer = other(ch, me);
      // Announced now (the peer's AddTlc), handed to the relay once "committed".
      peer.prePeeler.announced(t);
      setTimeout(() => void peer.relay.onIncoming({ channelId, tlcId: id, ...t }), 1);
      return id;
    },
    fulfilTlc: async (channelId, tlcId, preimage) => {
      const ch = channels.find((c) => c.id === channelId)!;
      const t = ch.tlcs.get(tlcId)!;
      ch.tlcs.delete(tlcId);
      // The balance moves from the offerer to us.
      t.from.balances.set(ch.id, t.from.balances.get(ch.id)! - t.amount);
      me.balances.set(ch.id, me.balances.get(ch.id)! + t.amount);
      // As the node's TLC recorder does with the channel state that removed it.
      me.relay.recordReceivedFulfilled(t.paymentHash);
      setTimeout(() => void t.from.relay.onFulfilled(channelId, tlcId, preimage), 1);
    },
    failTlc: async (channelId, tlcId, packet) => {
      const ch = channels.find((c) => c.id === channelId)!;
      const t = ch.tlcs.get(tlcId)!;
      ch.tlcs.delete(tlcId);
      setTimeout(() => void t.from.relay.onFailed(channelId, tlcId, packet), 1);
    },
  });
  const edges = (): RouteEdge[] =>
    channels.flatMap((c) =>
      [
        [c.a, c.b],
        [c.b, c.a],
      ].map(([f, t]) => ({
        from: f!.pubkey,
        to: t!.pubkey,
        outpoint: c.outpoint,
        capacity: 1000n * CKB,
        udt: null,
        feeRate: 1000n,
        tlcExpiryDelta: 14_400_000,
        tlcMinimumValue: 0n,
        outboundLiquidity: null,
        lastUpdate: 1n,
      })),
    );
  const graph: RoutingGraph = {
    inbounds: (n) => edges().filter((e) => e.to === n),
    outbounds: (n) => edges().filter((e) => e.from === n),
    edge: (op, from) => {
      const e = edges().find((x) => x.outpoint === op && x.from === from);
      return e ? { edge: e, enabled: true } : undefined;
    },
    supportsMpp: () => true,
  };
  const addStack = (name: string, seed: number): Stack => {
    const sk = new Uint8Array(32).fill(seed);
    const pubkey = bytesToHex(secp256k1.getPublicKey(sk, true), false);
    const db = openDatabase(':memory:', [invoiceSchema, paymentSchema, paymentLinkSchema]);
    const invoices = createInvoiceService({ db, nodeSecretKey: sk, currency: 'Fibd' });
    const stack = { name, sk, pubkey, invoices, balances: new Map(), peeledAhead: 0 } as Stack;
    // The output "leaves" at once: the peel is made when the TLC is announced.
    stack.prePeeler = new OnionPrePeeler(sk, (fn) => fn());
    stack.payments = new PaymentService({
      store: new PaymentStore(db),
      nodePubkey: pubkey,
      router: { findRoute: (req) => findPath(graph, req) },
      tlc: { sendTlc: (t) => stack.relay.outbox().sendTlc(t) },
      invoices: {
        parseInvoice: (s) => invoices.parseInvoice(s),
        verifyInvoice: () => true,
        payeeOf: (inv) => {
          const j = invoiceToJson(inv) as { data: { attrs: Record<string, string>[] } };
          return j.data.attrs.find((a) => 'PayeePublicKey' in a)?.PayeePublicKey;
        },
      },
    });
    stack.relay = new PaymentRelay({
      nodeSecretKey: sk,
      nodePubkey: pubkey,
      channels: portFor(stack),
      links: new TlcLinks(db),
      invoices,
      payments: stack.payments,
      prePeeled: {
        take: (onion, paymentHash) => {
          const peeled = stack.prePeeler.take(onion, paymentHash);
          if (peeled) stack.peeledAhead++;
          return peeled;
        },
      },
    });
    stacks.push(stack);
    return stack;
  };
  const connect = (a: Stack, b: Stack, i: number) => {
    const ch: SimChannel = { id: `ch${i}`, outpoint: outpoint(i), a, b, tlcs: new Map(), nextTlc: 0n };
    channels.push(ch);
    a.balances.set(ch.id, 438n * CKB);
    b.balances.set(ch.id, 188n * CKB);
  };
  return { addStack, connect };
}

async function waitFor(cond: () => boolean, what = 'condition', ms = 5000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('payment relay over simulated channels', () => {
  const net = buildNetwork();
  const A = net.addStack('A', 1);
  const B = net.addStack('B', 2);
  const C = net.addStack('C', 3);
  net.connect(A, B, 1);
  net.connect(B, C, 2);

  it("pays C's invoice through B: fee 0x186a0, balances move by amount + fee", async () => {
    const { invoiceAddress, invoice } = C.invoices.newInvoice({ amount: 100_000_000n, currency: 'Fibd' });
    const rec = A.payments.send({ invoice: invoiceAddress });
    expect(rec.status).toBe('Created');
    expect(rec.fee).toBe('0x186a0');
    const hash = bytesToHex(invoice.data.paymentHash);
    await waitFor(() => A.payments.get(hash).status === 'Success', 'payment success');
    expect(A.balances.get('ch1')).toBe(438n * CKB - 100_100_000n);
    expect(B.balances.get('ch1')).toBe(188n * CKB + 100_100_000n);
    expect(B.balances.get('ch2')).toBe(438n * CKB - 100_000_000n);
    expect(C.balances.get('ch2')).toBe(188n * CKB + 100_000_000n);
    await waitFor(() => C.invoices.getInvoice(hash).status === 'Paid', 'invoice paid');
    // B forwarded and C received with the onions they had peeled ahead.
    expect([B.peeledAhead, C.peeledAhead]).toEqual([1, 1]);
  });

  it('keysends to C, which learns the preimage', async () => {
    const rec = A.payments.send({ target_pubkey: C.pubkey, amount: 1_000n, keysend: true });
    await waitFor(() => A.payments.get(rec.payment_hash).status === 'Success', 'keysend');
    expect(C.invoices.getPreimage(rec.payment_hash)).toBeDefined();
  });

  it('holds a TLC for a hold invoice until settled, and fails it when cancelled', async () => {
    const pre = new Uint8Array(32).fill(0x42);
    const { ckbHash } = await import('../../src/crypto/hash.ts');
    const hash = bytesToHex(ckbHash(pre));
    const held = C.invoices.newInvoice({ amount: 5_000n, currency: 'Fibd', paymentHash: hash });
    A.payments.send({ invoice: held.invoiceAddress });
    await waitFor(() => C.invoices.getInvoice(hash).status === 'Received', 'received');
    expect(A.payments.get(hash).status).not.toBe('Success');
    C.invoices.settleInvoice(hash, pre);
    await C.relay.settleHeld(hash);
    await waitFor(() => A.payments.get(hash).status === 'Success', 'settled payment');

    const pre2 = new Uint8Array(32).fill(0x43);
    const hash2 = bytesToHex(ckbHash(pre2));
    const held2 = C.invoices.newInvoice({ amount: 5_000n, currency: 'Fibd', paymentHash: hash2 });
    A.payments.send({ invoice: held2.invoiceAddress });
    await waitFor(() => C.invoices.getInvoice(hash2).status === 'Received', 'received 2');
    C.invoices.cancelInvoice(hash2);
    await C.relay.cancelHeld(hash2);
    await waitFor(() => A.payments.get(hash2).status === 'Failed', 'cancelled payment');
    expect(A.payments.get(hash2).failed_error).toBe('InvoiceCancelled');
  });

  it('a preimage B learns elsewhere (a claim on chain) fulfils the TLC it forwarded it for', async () => {
    const pre = new Uint8Array(32).fill(0x44);
    const { ckbHash } = await import('../../src/crypto/hash.ts');
    const hash = bytesToHex(ckbHash(pre));
    const held = C.invoices.newInvoice({ amount: 7_000n, currency: 'Fibd', paymentHash: hash });
    A.payments.send({ invoice: held.invoiceAddress });
    await waitFor(() => C.invoices.getInvoice(hash).status === 'Received', 'received');
    const bBefore = B.balances.get('ch1')!;
    // C never fulfils off chain: B reads the preimage from C's claim of the TLC on chain.
    await B.relay.preimageLearned(hash, pre);
    await waitFor(() => A.payments.get(hash).status === 'Success', 'payment success');
    expect(B.balances.get('ch1')).toBe(bBefore + 7_000n + BigInt(A.payments.get(hash).fee));
  });

  it('reads a final-hop error through the forwarding layer', async () => {
    const unknown = bytesToHex(new Uint8Array(32).fill(0x77));
    A.payments.send({ target_pubkey: C.pubkey, amount: 2_000n, payment_hash: unknown });
    await waitFor(() => A.payments.get(unknown).status === 'Failed', 'failure');
    expect(A.payments.get(unknown).failed_error).toBe('IncorrectOrUnknownPaymentDetails');
  });
});
