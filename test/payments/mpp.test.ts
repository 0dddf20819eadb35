/**
 * Multi-part payments over simulated channels: four real node payment stacks (invoice service,
 * payment service, relay, each with its own SQLite store and key) joined at the ChannelTlcPort
 * boundary. Two parallel paths A→B→D and A→C→D, each too small for the payment alone: the payment
 * splits, pays exact fees per part, and succeeds only once every part arrived; D never settles a
 * partial set, fails held parts when their hold time ends, refuses a part with a foreign secret;
 * a part that fails is sent again; a session survives a restart of the sender.
 */
import { describe, expect, it } from 'vitest';
import { bytesToHex } from '../../src/codec/hex.ts';
import { TlcLinks } from '../../src/payment/links.ts';
import { encodeMppRecord, MPP_RECORD_KEY } from '../../src/payment/onion/hop-data.ts';
import { buildOnion, decodeErrorPacket } from '../../src/payment/onion/packet.ts';
import { buildPaymentHops } from '../../src/payment/onion/route-hops.ts';
import { PaymentStore } from '../../src/payment/store.ts';
import { buildNetwork, CKB, diamond, fee, outpoint, savedSession, waitFor } from './sim-network.ts';

const routeFee = (r: { nodes: { amount: string }[] }) =>
  BigInt(r.nodes[0]!.amount) - BigInt(r.nodes.at(-1)!.amount);

describe('multi-part payments over simulated channels', () => {
  it('splits a payment no single path carries over A→B→D and A→C→D, with exact fees per part', async () => {
    const { net, A, B, C, D } = diamond();
    const before = { A: net.balanceOf(A), B: net.balanceOf(B), C: net.balanceOf(C), D: net.balanceOf(D) };
    const amount = 100n * CKB;
    const { invoiceAddress, invoice } = D.invoices.newInvoice({ amount, currency: 'Fibd', allowMpp: true });
    const hash = bytesToHex(invoice.data.paymentHash);
    const sent = A.payments.send({ invoice: invoiceAddress });
    expect(sent.status).toBe('Created');
    // Two parts, one per path; each pays its middle node's fee on what it delivers.
    expect(sent.routers).toHaveLength(2);
    const finals = sent.routers.map((r) => BigInt(r.nodes.at(-1)!.amount));
    expect(finals.reduce((x, y) => x + y, 0n)).toBe(amount);
    for (const r of sent.routers) {
      expect(r.nodes.map((n) => n.pubkey)).toHaveLength(3);
      expect(routeFee(r)).toBe(fee(BigInt(r.nodes.at(-1)!.amount)));
    }
    expect(new Set(sent.routers.map((r) => r.nodes[1]!.pubkey))).toEqual(new Set([B.pubkey, C.pubkey]));
    const totalFee = sent.routers.map(routeFee).reduce((x, y) => x + y, 0n);
    expect(BigInt(sent.fee)).toBe(totalFee);
    // The MPP record travels in custom_records, as the reference shows it.
    expect(Object.keys(sent.custom_records!)).toEqual(['0x10000']);

    await waitFor(() => A.payments.get(hash).status === 'Success', 'payment success');
    expect(BigInt(A.payments.get(hash).fee)).toBe(totalFee);
    expect(D.invoices.getInvoice(hash).status).toBe('Paid');
    expect(net.balanceOf(A)).toBe(before.A - amount - totalFee);
    expect(net.balanceOf(D)).toBe(before.D + amount);
    const viaB = sent.routers.find((r) => r.nodes[1]!.pubkey === B.pubkey)!;
    const viaC = sent.routers.find((r) => r.nodes[1]!.pubkey === C.pubkey)!;
    expect(net.balanceOf(B)).toBe(before.B + routeFee(viaB));
    expect(net.balanceOf(C)).toBe(before.C + routeFee(viaC));
    expect(net.pendingTlcs()).toBe(0);
  });

  it('pays in one part when one path carries the whole amount', async () => {
    const { A, D } = diamond();
    const { invoiceAddress, invoice } = D.invoices.newInvoice({
      amount: 10n * CKB,
      currency: 'Fibd',
      allowMpp: true,
    });
    const sent = A.payments.send({ invoice: invoiceAddress });
    expect(sent.routers).toHaveLength(1);
    const hash = bytesToHex(invoice.data.paymentHash);
    await waitFor(() => A.payments.get(hash).status === 'Success', 'payment success');
  });

  it('never settles a partial set: the held part is failed back when its hold time ends', async () => {
    const { net, A, D, cd } = diamond({ holdTimeoutMs: 300 });
    cd.refuse = 1_000; // C never forwards to D: only the part over B arrives
    const before = net.balanceOf(D);
    const { invoiceAddress, invoice } = D.invoices.newInvoice({
      amount: 100n * CKB,
      currency: 'Fibd',
      allowMpp: true,
    });
    const hash = bytesToHex(invoice.data.paymentHash);
    // Two parts at most: six tries in all.
    A.payments.send({ invoice: invoiceAddress, max_parts: 2n });
    const links = new TlcLinks(D.db);
    const sessions = new PaymentStore(A.db);
    // The other part's tries run out while D holds the first part.
    await waitFor(() => {
      const s = sessions.get(hash)!;
      return s.attempts.length === 6 && s.attempts.filter((a) => a.status === 'Failed').length === 5;
    }, 'the other part to give up');
    expect(A.payments.get(hash)).toMatchObject({
      status: 'Inflight',
      failed_error: 'TemporaryChannelFailure',
    });
    expect(links.held(hash)).toHaveLength(1);
    expect(net.pendingTlcs()).toBe(2); // A→B and B→D of the held part
    expect(D.invoices.getInvoice(hash).status).toBe('Open');
    expect(net.balanceOf(D)).toBe(before);
    await D.relay.expireHolds(Date.now() + 1_000);
    await waitFor(() => A.payments.get(hash).status === 'Failed', 'payment failed');
    expect(A.payments.get(hash).failed_error).toBe('HoldTlcTimeout');
    expect(links.held(hash)).toEqual([]);
    expect(D.invoices.getInvoice(hash).status).toBe('Open');
    expect(net.balanceOf(D)).toBe(before);
    expect(net.pendingTlcs()).toBe(0);
    // Every part ended, so the same invoice may be paid again (it fails the same way here).
    expect(() => A.payments.send({ invoice: invoiceAddress })).not.toThrow();
  });

  it('sends a failed part again, over a route that works', async () => {
    const { net, A, D, cd } = diamond();
    cd.refuse = 1; // C refuses its first forward to D
    const { invoiceAddress, invoice } = D.invoices.newInvoice({
      amount: 100n * CKB,
      currency: 'Fibd',
      allowMpp: true,
    });
    const hash = bytesToHex(invoice.data.paymentHash);
    A.payments.send({ invoice: invoiceAddress });
    await waitFor(() => A.payments.get(hash).status === 'Success', 'payment success');
    const session = savedSession(A, hash)!;
    expect(session.tryLimit).toBe(36); // max_parts 12 × 3
    expect(session.attempts.map((a) => a.status).sort()).toEqual(['Failed', 'Success', 'Success']);
    expect(session.attempts.find((a) => a.status === 'Failed')!.error).toBe('TemporaryChannelFailure');
    expect(A.payments.get(hash).routers).toHaveLength(2);
    expect(D.invoices.getInvoice(hash).status).toBe('Paid');
    expect(net.pendingTlcs()).toBe(0);
  });

  it('holds a complete set for a hold invoice (Received) until settle_invoice releases it', async () => {
    const { net, A, D } = diamond();
    const preimage = new Uint8Array(32).fill(0x5a);
    const { ckbHash } = await import('../../src/crypto/hash.ts');
    const hash = bytesToHex(ckbHash(preimage));
    const { invoiceAddress } = D.invoices.newInvoice({
      amount: 100n * CKB,
      currency: 'Fibd',
      allowMpp: true,
      paymentHash: hash,
    });
    A.payments.send({ invoice: invoiceAddress });
    const links = new TlcLinks(D.db);
    await waitFor(() => D.invoices.getInvoice(hash).status === 'Received', 'the whole set received');
    expect(links.held(hash)).toHaveLength(2);
    expect(A.payments.get(hash).status).toBe('Inflight');
    D.invoices.settleInvoice(hash, bytesToHex(preimage));
    await D.relay.settleHeld(hash);
    await waitFor(() => A.payments.get(hash).status === 'Success', 'payment success');
    expect(D.invoices.getInvoice(hash).status).toBe('Paid');
    expect(net.pendingTlcs()).toBe(0);
  });

  it('finishes a split payment after the sender restarts with its parts in flight', async () => {
    const { net, A, D } = diamond();
    const { invoiceAddress, invoice } = D.invoices.newInvoice({
      amount: 100n * CKB,
      currency: 'Fibd',
      allowMpp: true,
    });
    const hash = bytesToHex(invoice.data.paymentHash);
    net.pause();
    A.payments.send({ invoice: invoiceAddress });
    await A.payments.settled(hash);
    expect(A.payments.get(hash).status).toBe('Inflight');
    net.startServices(A); // a new process over the same store: nothing in memory
    net.resume();
    await waitFor(() => A.payments.get(hash).status === 'Success', 'payment success after restart');
    expect(D.invoices.getInvoice(hash).status).toBe('Paid');
  });

  it('refuses, with the reference texts, what MPP cannot do', () => {
    const { A, D } = diamond();
    const mpp = D.invoices.newInvoice({ amount: 100n * CKB, currency: 'Fibd', allowMpp: true });
    const plain = D.invoices.newInvoice({ amount: 1n * CKB, currency: 'Fibd' });
    const range =
      'InvalidParameter: Failed to validate payment request: "invalid max_parts, value should be in range [1, 24]"';
    expect(() => A.payments.send({ invoice: mpp.invoiceAddress, max_parts: 25n })).toThrow(range);
    expect(() => A.payments.send({ invoice: mpp.invoiceAddress, max_parts: 0n })).toThrow(range);
    expect(() => A.payments.send({ invoice: mpp.invoiceAddress, max_parts: 1n })).toThrow(range);
    expect(() => A.payments.send({ invoice: plain.invoiceAddress, max_parts: 2n })).toThrow(
      '"payment invoice is not allow MPP"',
    );
    expect(() =>
      A.payments.send({ target_pubkey: D.pubkey, amount: 5n, keysend: true, max_parts: 2n }),
    ).toThrow('"payment invoice is not allow MPP"');
    // 120 CKB: the first part carries 60 CKB less its fee, so two parts cannot carry the rest.
    const most = D.invoices.newInvoice({ amount: 120n * CKB, currency: 'Fibd', allowMpp: true });
    expect(() => A.payments.send({ invoice: most.invoiceAddress, max_parts: 2n })).toThrow(
      'Send payment error: Failed to build enough routes for MPP payment',
    );
    // A plain invoice of more than one path carries is not split.
    const big = D.invoices.newInvoice({ amount: 100n * CKB, currency: 'Fibd' });
    expect(() => A.payments.send({ invoice: big.invoiceAddress })).toThrow(
      /^Send payment error: Failed to build route, /,
    );
    // Dry run: the parts' fee, nothing stored.
    const dry = A.payments.send({ invoice: mpp.invoiceAddress, dry_run: true });
    expect(dry.routers).toHaveLength(2);
    expect(BigInt(dry.fee)).toBe(dry.routers.map(routeFee).reduce((x, y) => x + y, 0n));
    expect(() => A.payments.get(bytesToHex(mpp.invoice.data.paymentHash))).toThrow(
      'Payment session not found',
    );
  });

  it('fails a part whose MPP record names another secret, or a total below the invoice', async () => {
    const net = buildNetwork();
    const A = net.addStack('A', 1);
    const D = net.addStack('D', 4);
    net.connect(A, D, 9, 100n * CKB, 0n);
    const { invoice } = D.invoices.newInvoice({ amount: 10n * CKB, currency: 'Fibd', allowMpp: true });
    const hash = invoice.data.paymentHash;
    const secret = invoice.data.attrs.find((a) => a.kind === 'PaymentSecret')!.value;
    const route = [
      {
        target: D.pubkey,
        channelOutpoint: outpoint(9),
        amountReceived: 5n * CKB,
        incomingTlcExpiry: 86_400_000,
      },
    ];
    const sendPart = async (record: Uint8Array) => {
      const hops = buildPaymentHops(route, {
        amount: 5n * CKB,
        finalTlcExpiryDelta: 86_400_000,
        customRecords: new Map([[MPP_RECORD_KEY, record]]),
      });
      const onion = buildOnion(hops, hash);
      const seen = net.failures.length;
      await A.relay.outbox().sendTlc({
        attemptId: 'manual',
        paymentHash: bytesToHex(hash),
        channelOutpoint: outpoint(9),
        amount: hops[0]!.amount,
        expiry: hops[0]!.expiry,
        hashAlgorithm: 0,
        onionPacket: onion.packet,
      });
      await waitFor(() => net.failures.length > seen, 'the part to fail');
      return decodeErrorPacket(net.failures.at(-1)!.packet, onion.sharedSecrets)!.error.code;
    };
    expect(await sendPart(encodeMppRecord(new Uint8Array(32).fill(7), 10n * CKB))).toBe(
      'IncorrectOrUnknownPaymentDetails',
    );
    expect(await sendPart(encodeMppRecord(secret, 9n * CKB))).toBe('IncorrectOrUnknownPaymentDetails');
    expect(new TlcLinks(D.db).held(bytesToHex(hash))).toEqual([]);
    expect(D.invoices.getInvoice(bytesToHex(hash)).status).toBe('Open');
  });
});
